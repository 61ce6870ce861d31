"""The paper's prompt settings for overall benchmark accuracy (Section 3.1, Section 5.1, Appendix F).

Three settings, each a :class:`PromptSetting`: ``DIRECT`` (the problem alone), ``COT`` (the problem plus
``Let's think step by step.``) and ``FEW_SHOT`` (worked examples in FLD proof notation, then the problem).
:func:`build_conversation` turns a :class:`~finelogic.data.problem.Problem` into chat messages; the
backend applies the model's chat template.

**System prompt.** The paper's two system prompts, verbatim: three markers for the three-label datasets
(FLD, FOLIO), two for the two-label ones (Multi-LogiEval, ProntoQA). Which one is used follows from
``problem.dataset`` (:func:`labels_for`).

**User message.** ``Facts: {facts}\\nHypothesis: {hypothesis}\\n{suffix}`` for every dataset, facts as
``fact1: ...`` lines (:attr:`Problem.facts_text`). The loaders already put FOLIO premises, Multi-LogiEval
context sentences and ProntoQA context sentences into ``facts`` and the FOLIO conclusion / the
Multi-LogiEval question / the ProntoQA statement into ``hypothesis``, so all four datasets render into
this one shape. With an empty suffix (Direct) the message ends after the hypothesis line.

**CoT.** The released code's CoT suffix is a leftover from an unrelated puzzle task
(``reference/official_code.md``); we use the standard ``Let's think step by step.`` (Wei et al.; Kojima
et al.) instead, so CoT numbers here are not byte-for-byte the paper's prompt.

**Few-shot.** The examples go *inline*, in the one user message, before the problem: the paper's Figure 8
is a single template with an ``{example}`` placeholder before ``{facts}`` and ``{hypothesis}``, and inline
examples keep every setting a two-message conversation (system + user). Each example shows its facts,
hypothesis, the gold proof in FLD notation (``fact1 & fact2 -> int1: ...; int1 & fact4 -> hypothesis;``)
and the closing marker. By default the examples are written by our own FLD generator
(:func:`default_few_shot_examples`: fixed seed, depth 2, one PROVED, one DISPROVED and, for three-label
datasets only, one UNKNOWN); pass ``few_shot_examples=`` to use others.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN, Problem

SYSTEM_PROMPT_THREE_LABELS = (
    'Based on the provided facts, verify the hypothesis. Conclude with one of the markers: "__PROVED__" for '
    'proven, "__DISPROVED__" for disproven, or "__UNKNOWN__" if uncertain.'
)
SYSTEM_PROMPT_TWO_LABELS = (
    'Based on the provided facts, verify the hypothesis. Conclude with one of the markers: "__PROVED__" for '
    'proven, or "__DISPROVED__" for disproven.'
)

THREE_LABEL_DATASETS = frozenset({"fld", "folio"})
TWO_LABEL_DATASETS = frozenset({"multi_logieval", "prontoqa"})

#: The marker the paper's prompts ask for, per label.
MARKERS = {PROVED: "__PROVED__", DISPROVED: "__DISPROVED__", UNKNOWN: "__UNKNOWN__"}

#: Seed and proof depth of the default few-shot examples (small depth keeps the prompt short).
FEW_SHOT_SEED = "finelogic-few-shot"
FEW_SHOT_DEPTH = 2

#: The sentence an UNKNOWN example closes with (the paper's Figure 11 status message).
UNKNOWN_EXPLANATION = ("The search path has been exhausted without finding a way to either prove or "
                       "disprove the hypothesis.")


@dataclass(frozen=True)
class PromptSetting:
    """One prompting setting of Table 2.

    Attributes:
        name: as the paper's tables write it (``Direct``, ``CoT``, ``Few-shot``).
        suffix: appended to the user message after the hypothesis line (empty: nothing appended).
        few_shot: whether worked examples precede the problem.
    """

    name: str
    suffix: str = ""
    few_shot: bool = False


DIRECT = PromptSetting("Direct")
COT = PromptSetting("CoT", suffix="Let's think step by step.")
FEW_SHOT = PromptSetting("Few-shot", few_shot=True)
SETTINGS = {s.name: s for s in (DIRECT, COT, FEW_SHOT)}


def get_setting(setting: PromptSetting | str) -> PromptSetting:
    """``setting`` itself, or the setting called so (``"Direct"``, ``"CoT"``, ``"Few-shot"``)."""
    if isinstance(setting, PromptSetting):
        return setting
    try:
        return SETTINGS[setting]
    except KeyError:
        raise ValueError(f"unknown prompt setting {setting!r}; choose one of {', '.join(SETTINGS)}") from None


def labels_for(dataset: str) -> tuple[str, ...]:
    """The answer labels a dataset uses: (PROVED, DISPROVED, UNKNOWN) for FLD and FOLIO, (PROVED,
    DISPROVED) for Multi-LogiEval and ProntoQA (Table 1's label types)."""
    if dataset in THREE_LABEL_DATASETS:
        return LABELS
    if dataset in TWO_LABEL_DATASETS:
        return (PROVED, DISPROVED)
    known = ", ".join(sorted(THREE_LABEL_DATASETS | TWO_LABEL_DATASETS))
    raise ValueError(f"no accuracy prompt for dataset {dataset!r}; known datasets: {known}")


def system_prompt(dataset: str) -> str:
    """The paper's system prompt for ``dataset``: three markers or two (see :func:`labels_for`)."""
    return SYSTEM_PROMPT_THREE_LABELS if UNKNOWN in labels_for(dataset) else SYSTEM_PROMPT_TWO_LABELS


def problem_text(problem: Problem, suffix: str = "") -> str:
    """``Facts: {facts}\\nHypothesis: {hypothesis}\\n{suffix}``; without the last line when ``suffix`` is empty."""
    text = f"Facts: {problem.facts_text}\nHypothesis: {problem.hypothesis}"
    return f"{text}\n{suffix}" if suffix else text


def worked_answer(example: Problem) -> str:
    """An example's answer: its gold proof in FLD notation (UNKNOWN: :data:`UNKNOWN_EXPLANATION`), then
    its marker on a line of its own."""
    if example.label == UNKNOWN:
        reasoning = UNKNOWN_EXPLANATION
    elif example.proof:
        reasoning = example.proof
    else:
        raise ValueError(f"few-shot example {example.id!r} ({example.label}) needs a gold proof")
    return f"{reasoning}\n{MARKERS[example.label]}"


def few_shot_block(examples: Sequence[Problem]) -> str:
    """The worked examples as they precede the problem in the Few-shot user message."""
    parts = [f"Example {i}:\n{problem_text(e)}\nAnswer: {worked_answer(e)}" for i, e in enumerate(examples, 1)]
    return "Here are solved examples.\n\n" + "\n\n".join(parts) + "\n\nNow solve this problem.\n"


@lru_cache(maxsize=None)
def default_few_shot_examples(three_labels: bool = True) -> tuple[Problem, ...]:
    """One PROVED, one DISPROVED and (``three_labels``) one UNKNOWN example from our FLD generator.

    Deterministic: seed ``f"{FEW_SHOT_SEED}/{label}"``, depth :data:`FEW_SHOT_DEPTH`, 1–2 distractors.
    Generated once per process (z3 verification takes a moment).
    """
    from finelogic.data.generators.fld import generate_fld_problem  # lazy: z3 and the generator are heavy

    labels = LABELS if three_labels else (PROVED, DISPROVED)
    return tuple(generate_fld_problem(f"{FEW_SHOT_SEED}/{label}", FEW_SHOT_DEPTH, label, distractors=(1, 2),
                                      problem_id=f"few-shot-{label.lower()}") for label in labels)


def build_conversation(problem: Problem, setting: PromptSetting | str,
                       *, few_shot_examples: Sequence[Problem] | None = None) -> list[dict[str, str]]:
    """Chat messages for one problem: the paper's system prompt, then the user message.

    Args:
        problem: a labelled problem of FLD, FOLIO, Multi-LogiEval or ProntoQA.
        setting: :data:`DIRECT`, :data:`COT`, :data:`FEW_SHOT` or one of their names.
        few_shot_examples: worked examples for the Few-shot setting (ignored otherwise); default
            :func:`default_few_shot_examples`. UNKNOWN examples are left out for two-label datasets,
            whose system prompt offers no ``__UNKNOWN__`` marker.

    Returns:
        ``[{"role": "system", ...}, {"role": "user", ...}]``.
    """
    setting = get_setting(setting)
    labels = labels_for(problem.dataset)
    user = problem_text(problem, setting.suffix)
    if setting.few_shot:
        if few_shot_examples is None:
            few_shot_examples = default_few_shot_examples(UNKNOWN in labels)
        user = few_shot_block([e for e in few_shot_examples if e.label in labels]) + user
    return [{"role": "system", "content": system_prompt(problem.dataset)}, {"role": "user", "content": user}]
