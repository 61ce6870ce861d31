"""FineLogic's benchmarks as lm-evaluation-harness tasks (an lm-eval ``--include_path`` folder).

``finelogic tasks --lm-eval`` prints this folder. Its tasks read the items ``finelogic eval`` reads, from the
same loaders (real files under ``data_dir`` or ``$FINELOGIC_DATA_DIR``, else the generators), at the sizes of
a profile, and score them with the same rules:

* ``finelogic_fld``, ``finelogic_folio``, ``finelogic_multi_logieval``, ``finelogic_prontoqa`` (group
  ``finelogic_accuracy``): ``generate_until`` with the paper's prompts (the system prompt as the task's
  description, the problem as the user turn); metrics ``acc`` (this project's answer reading) and
  ``acc_released`` (the released code's scorer);
* ``finelogic_logicmark``: ``multiple_choice`` by log-likelihood, each option a continuation of the card's
  context after a space; ``acc`` (no normalisation) and ``acc_norm`` (per character). The card's own
  normalisation, the mean over the option's tokens, needs token counts that lm-eval does not hand a task:
  ``finelogic eval`` reports it.

lm-eval's ``--metadata`` picks the items: ``profile`` (default ``tiny``), ``seed`` (0), ``data_dir``, and for the
generation tasks ``setting`` (``CoT``; ``Direct``, ``Few-shot``). Chat models need ``--apply_chat_template``
(the generation tasks only: LogicMark is scored on raw text, as the card does); decoding follows
``--gen_kwargs`` (greedy by default, ``max_gen_toks`` as the profile's accuracy family). Nothing in the package
imports lm-eval: this folder is read by lm-eval alone (``pip install "finelogic[lm-eval]"``).
"""
from pathlib import Path

#: The folder to pass to ``lm_eval --include_path``.
TASKS_DIR = Path(__file__).resolve().parent
