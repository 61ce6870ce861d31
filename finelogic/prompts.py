"""The paper's prompt settings for overall benchmark accuracy (Section 3.1, Section 5.1, Appendix F).

Three settings, each a :class:`PromptSetting`: ``DIRECT`` (the problem alone), ``COT`` (the problem plus
``Let's think step by step.``) and ``FEW_SHOT`` (worked examples in FLD proof notation, then the problem).
:func:`build_conversation` turns a :class:`~finelogic.data.problem.Problem` into chat messages; the
backend applies the model's chat template.

**System prompt.** The paper's two system prompts, verbatim: three markers for the three-label datasets
(FLD, FOLIO), two for the two-label ones (Multi-LogiEval, ProntoQA). Which one is used follows from
``problem.dataset``'s record (:func:`labels_for`).

**User message.** ``Facts: {facts}\\nHypothesis: {hypothesis}\\n{suffix}`` for every dataset, facts as
``fact1: ...`` lines (:attr:`Problem.facts_text`). The loaders already put FOLIO premises, Multi-LogiEval
context sentences and ProntoQA context sentences into ``facts`` and the FOLIO conclusion / the
Multi-LogiEval question / the ProntoQA statement into ``hypothesis``, so all four datasets render into
this one shape. With an empty suffix (Direct) the message ends after the hypothesis line.

**CoT.** The released code's CoT suffix is a leftover from an unrelated puzzle task
(``book/released-code.md``, "Prompts"); we use the standard ``Let's think step by step.`` (Wei et al.; Kojima
et al.) instead, so CoT numbers here are not byte-for-byte the paper's prompt.

**Few-shot.** The examples go *inline*, in the one user message, before the problem: the paper's Figure 8
is a single template with an ``{example}`` placeholder before ``{facts}`` and ``{hypothesis}``, and inline
examples keep every setting a two-message conversation (system + user). Each example shows its facts,
hypothesis, the gold proof in FLD notation (``fact1 & fact2 -> int1: ...; int1 & fact4 -> hypothesis;``)
and the closing marker. By default the examples are written by our own FLD generator
(:func:`default_few_shot_examples`: fixed seed, depth 2, one PROVED, one DISPROVED and, for three-label
datasets only, one UNKNOWN); pass ``few_shot_examples=`` to use others.

**The released code's layout** (``layout="paper_code_compat"``; ``book/released-code.md``, "Prompts", read from
``src/eval_vllm_overall.py`` of the authors' repository). What its vLLM script sends, byte for byte:

- the user message is the item's own ``input`` text **unchanged** (the paper's merged evaluation files
  carry one per item; the loader keeps it in ``problem.meta["input"]``), then ``\n``, then the suffix;
  items without ``input`` get ``Facts: {facts}\nHypothesis: {hypothesis}\n{suffix}``; the ``\n`` before
  the suffix is there even when the suffix is empty (Direct);
- the system prompt depends on the setting as well as the dataset: for the two-label datasets the
  Direct prompt says "for true" / "for false", CoT and Few-shot say "for proven" / "for disproven";
- CoT's suffix is the released one (:data:`RELEASED_COT_SUFFIX`, a leftover of a puzzle task);
- Few-shot puts the problem FIRST and the examples after it, in the released frame
  (:func:`released_few_shot_block`: ``[Start of example]`` ... ``[End of example]`` and a closing
  think-step-by-step sentence), with OUR generated examples in the example slots.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from finelogic.data import datasets
from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN, Problem
from finelogic.settings import Choice

SYSTEM_PROMPT_THREE_LABELS = (
    'Based on the provided facts, verify the hypothesis. Conclude with one of the markers: "__PROVED__" for '
    'proven, "__DISPROVED__" for disproven, or "__UNKNOWN__" if uncertain.'
)
SYSTEM_PROMPT_TWO_LABELS = (
    'Based on the provided facts, verify the hypothesis. Conclude with one of the markers: "__PROVED__" for '
    'proven, or "__DISPROVED__" for disproven.'
)

#: Two-label system prompt of the released code's Direct setting (CoT and Few-shot use the one above).
SYSTEM_PROMPT_TWO_LABELS_DIRECT = (
    'Based on the provided facts, verify the hypothesis. Conclude with one of the markers: "__PROVED__" for '
    'true, or "__DISPROVED__" for false.'
)
#: The released code's CoT suffix, verbatim (a leftover of a knights-and-knaves puzzle task).
RELEASED_COT_SUFFIX = ("Let's think step by step, by considering whether each person is lying and if that leads "
                       "to contradiction.")

class PromptLayout(Choice):
    """The prompt layout: ours, or the released vLLM script's."""

    PRINCIPLED = "principled"
    PAPER_CODE_COMPAT = "paper_code_compat"


#: The prompt layouts.
LAYOUTS = tuple(PromptLayout)

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


def labels_for(name: str) -> tuple[str, ...]:
    """The answer labels dataset ``name`` uses, its record's ``labels`` (:mod:`finelogic.data.datasets`):
    (PROVED, DISPROVED, UNKNOWN) for FLD and FOLIO, (PROVED, DISPROVED) for Multi-LogiEval and ProntoQA."""
    labels = next((d.labels for d in datasets.DATASETS if d.name == name), ())
    if not labels:
        known = ", ".join(sorted(d.name for d in datasets.DATASETS if d.labels))
        raise ValueError(f"no accuracy prompt for dataset {name!r}; known datasets: {known}")
    return labels


def system_prompt(dataset: str, setting: PromptSetting | str | None = None,
                  layout: PromptLayout | str = PromptLayout.PRINCIPLED) -> str:
    """The paper's system prompt for ``dataset``: three markers or two (see :func:`labels_for`); under the
    released layout, the two-label Direct prompt says "for true" / "for false"."""
    if UNKNOWN in labels_for(dataset):
        return SYSTEM_PROMPT_THREE_LABELS
    if PromptLayout.of(layout, "prompt layout") is PromptLayout.PAPER_CODE_COMPAT and setting is not None and get_setting(setting) == DIRECT:
        return SYSTEM_PROMPT_TWO_LABELS_DIRECT
    return SYSTEM_PROMPT_TWO_LABELS


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


# The released Few-shot frame: what surrounds each example slot (prompt text, kept verbatim, quirks
# included: a trailing space after "question:" and after "by", and after the second example's facts line).
_RELEASED_INTRO = ("For example, for this question:", "There is also this question: ", "Or this question:")
_RELEASED_LEAD = {PROVED: "We can conclude that", DISPROVED: "We can prove it by ", UNKNOWN: "We prove it in the following way:"}
_RELEASED_UNKNOWN_CLOSE = "Without finding a way to either prove or disprove the hypothesis.\n\nFinal conclusion: __UNKNOWN__"


def released_few_shot_block(examples: Sequence[Problem]) -> str:
    """The released code's Few-shot suffix with ``examples`` (ours) in its slots, in their order.

    Each example: its intro line, ``"facts": "<fact1: ... fact2: ...>",``, ``"hypothesis": "...",``, a lead
    line, then the proof in quotes and ``So the answer is`` + the marker (an UNKNOWN example instead ends its
    quoted text with the released "Without finding a way ..." close); examples are separated by a blank line.
    """
    parts = []
    for i, example in enumerate(examples):
        facts = " ".join(f"{f.id}: {f.text}" for f in example.facts)
        comma = ", " if i == 1 else ","
        head = (f"{_RELEASED_INTRO[min(i, 2)]}\n\"facts\": \"{facts}\"{comma}\n\"hypothesis\": \"{example.hypothesis}\",\n"
                f"{_RELEASED_LEAD[example.label]}\n")
        if example.label == UNKNOWN:
            partial = f"{example.proof} " if example.proof else ""
            parts.append(f"{head}\"{partial}{_RELEASED_UNKNOWN_CLOSE}\"")
        else:
            if not example.proof:
                raise ValueError(f"few-shot example {example.id!r} ({example.label}) needs a gold proof")
            parts.append(f"{head}\"{example.proof}\"\nSo the answer is\n{MARKERS[example.label]}")
    return ("Here are some examples of proofs for your reference:\n[Start of example]\n" + "\n\n".join(parts)
            + "\n[End of example]\nYou can refer to the proof method of the above question, think step by step, "
              "and give the result of this question.\n")


def build_conversation(problem: Problem, setting: PromptSetting | str, *,
                       few_shot_examples: Sequence[Problem] | None = None,
                       layout: PromptLayout | str = PromptLayout.PRINCIPLED) -> list[dict[str, str]]:
    """Chat messages for one problem: the paper's system prompt, then the user message.

    Args:
        problem: a labelled problem of FLD, FOLIO, Multi-LogiEval or ProntoQA.
        setting: :data:`DIRECT`, :data:`COT`, :data:`FEW_SHOT` or one of their names.
        few_shot_examples: worked examples for the Few-shot setting (ignored otherwise); default
            :func:`default_few_shot_examples`. UNKNOWN examples are left out for two-label datasets,
            whose system prompt offers no ``__UNKNOWN__`` marker.
        layout: ``principled`` (ours, the default) or ``paper_code_compat`` (what the released vLLM
            script sends; see the module docstring).

    Returns:
        ``[{"role": "system", ...}, {"role": "user", ...}]``.
    """
    layout = PromptLayout.of(layout, "prompt layout")
    setting = get_setting(setting)
    labels = labels_for(problem.dataset)
    examples = None
    if setting.few_shot:
        if few_shot_examples is None:
            few_shot_examples = default_few_shot_examples(UNKNOWN in labels)
        examples = [e for e in few_shot_examples if e.label in labels]
    if layout is PromptLayout.PAPER_CODE_COMPAT:
        suffix = (released_few_shot_block(examples) if setting.few_shot
                  else RELEASED_COT_SUFFIX if setting == COT else setting.suffix)
        given = problem.meta.get("input") if problem.meta else None
        body = given if given else f"Facts: {problem.facts_text}\nHypothesis: {problem.hypothesis}"
        user = f"{body}\n{suffix}"
    else:
        user = problem_text(problem, setting.suffix)
        if setting.few_shot:
            user = few_shot_block(examples) + user
    return [{"role": "system", "content": system_prompt(problem.dataset, setting, layout)},
            {"role": "user", "content": user}]
