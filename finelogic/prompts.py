"""The paper's prompt settings for overall benchmark accuracy (Section 3.1, Section 5.1, Appendix F).

:func:`build_conversation` turns a :class:`~finelogic.data.problem.Problem` into the paper's system prompt
(three markers or two, :func:`labels_for`) and a user message ``Facts: {facts}\\nHypothesis: {hypothesis}``
plus the setting's suffix: ``DIRECT``, ``COT`` (the standard ``Let's think step by step.``: Wei et al.; Kojima
et al.) or ``FEW_SHOT`` (worked examples in FLD proof notation from our generator, then the problem, as the
paper's Figure 8 has them).

Ours differs from the paper where its released code does something else (``book/released-code.md``,
"Prompts"); ``layout="released"`` sends what the released ``src/eval_vllm_overall.py`` sends, byte
for byte: the item's own ``input`` text (``problem.meta["input"]``), ``\\n`` and the suffix (also when empty);
the two-label Direct prompt saying "for true" / "for false"; the released CoT suffix; and the problem before
the examples, in the released frame (:func:`released_few_shot_block`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from finelogic.data import datasets
from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN, Problem
from finelogic.typed_config import Choice

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
    RELEASED = "released"


#: The marker the paper's prompts ask for, per label.
MARKERS = {PROVED: "__PROVED__", DISPROVED: "__DISPROVED__", UNKNOWN: "__UNKNOWN__"}

#: The sentence an UNKNOWN example closes with (the paper's Figure 11 status message).
UNKNOWN_EXPLANATION = ("The search path has been exhausted without finding a way to either prove or "
                       "disprove the hypothesis.")


@dataclass(frozen=True)
class PromptSetting:
    """One prompting setting of Table 2."""

    name: str  # as the paper's tables write it
    suffix: str = ""  # the user message's last line (empty: none)
    few_shot: bool = False  # worked examples precede the problem


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
    released = PromptLayout.of(layout, "prompt layout") is PromptLayout.RELEASED
    if released and setting is not None and get_setting(setting) == DIRECT:
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


@lru_cache(maxsize=None)
def default_few_shot_examples(three_labels: bool = True) -> tuple[Problem, ...]:
    """One PROVED, one DISPROVED and (``three_labels``) one UNKNOWN example from our FLD generator: seed
    ``finelogic-few-shot/<label>``, depth 2 (a short prompt), 1-2 distractors; made once per process (z3)."""
    from finelogic.data.generators.fld import generate_fld_problem  # lazy: z3 and the generator are heavy

    labels = LABELS if three_labels else (PROVED, DISPROVED)
    return tuple(generate_fld_problem(f"finelogic-few-shot/{label}", 2, label, distractors=(1, 2),
                                      problem_id=f"few-shot-{label.lower()}") for label in labels)


# The released Few-shot frame: what surrounds each example slot (prompt text, kept verbatim, quirks
# included: a trailing space after "question:" and after "by", and after the second example's facts line).
_RELEASED_INTRO = ("For example, for this question:", "There is also this question: ", "Or this question:")
_RELEASED_LEAD = {PROVED: "We can conclude that", DISPROVED: "We can prove it by ", UNKNOWN: "We prove it in the following way:"}
_RELEASED_UNKNOWN_CLOSE = "Without finding a way to either prove or disprove the hypothesis.\n\nFinal conclusion: __UNKNOWN__"


def released_few_shot_block(examples: Sequence[Problem]) -> str:
    """The released code's Few-shot suffix with ``examples`` (ours) in its slots, in their order."""
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
    """``[{"role": "system", ...}, {"role": "user", ...}]`` for one problem (module docstring).
    ``few_shot_examples`` (default :func:`default_few_shot_examples`) lose their UNKNOWN ones for a two-label
    dataset, whose system prompt offers no ``__UNKNOWN__`` marker."""
    layout = PromptLayout.of(layout, "prompt layout")
    setting = get_setting(setting)
    labels = labels_for(problem.dataset)
    examples = None
    if setting.few_shot:
        if few_shot_examples is None:
            few_shot_examples = default_few_shot_examples(UNKNOWN in labels)
        examples = [e for e in few_shot_examples if e.label in labels]
    if layout is PromptLayout.RELEASED:
        suffix = (released_few_shot_block(examples) if setting.few_shot
                  else RELEASED_COT_SUFFIX if setting == COT else setting.suffix)
        given = problem.meta.get("input") if problem.meta else None
        user = f"{given or problem_text(problem)}\n{suffix}"
    else:
        user = problem_text(problem, setting.suffix)
        if setting.few_shot:  # the worked examples, then the problem
            parts = [f"Example {i}:\n{problem_text(e)}\nAnswer: {worked_answer(e)}" for i, e in enumerate(examples, 1)]
            user = "Here are solved examples.\n\n" + "\n\n".join(parts) + "\n\nNow solve this problem.\n" + user
    return [{"role": "system", "content": system_prompt(problem.dataset, setting, layout)},
            {"role": "user", "content": user}]
