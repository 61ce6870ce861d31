"""Selection-Inference (Creswell et al., 2022; paper §5.1 and Appendix A.2): each round a selection prompt
names the statements to combine and an inference prompt, seeing only those, states one new one (``int<k>``),
until the (negated) hypothesis or ``rounds``; then an answer prompt gives the verdict. The derivation is written
as an FLD-style proof, the record's ``response`` that proof and the marker, so the soundness judges read it.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Sequence

from finelogic.baselines.common import (HYPOTHESIS, NEGATED_HYPOTHESIS, SEL_INF, BaselineResult, BaselineSession,
                                        gold_derivation, worked_examples)
from finelogic.data.problem import UNKNOWN, Problem
from finelogic.eval.extraction import extract_answer
from finelogic.eval.steps import negated_hypothesis_text
from finelogic.models.base import Backend, Conversation, GenerationConfig
from finelogic.prompts import MARKERS, UNKNOWN_EXPLANATION, labels_for, problem_text, system_prompt

SELECTION_SYSTEM = (
    "You are the selection step of a step-by-step prover. You see facts, the statements derived so far and a "
    "hypothesis. Choose the few statements (usually two) that combine into the next useful conclusion towards "
    "proving or disproving the hypothesis. Answer with their ids only, joined by ' & '."
)
INFERENCE_SYSTEM = (
    "You are the inference step of a step-by-step prover. From the selected statements alone, state the one new "
    "statement that follows from them in a single inference, as one sentence. If that statement is the "
    "hypothesis, answer 'hypothesis'; if it is the negation of the hypothesis, answer '¬hypothesis'."
)

LEAD = "Now your turn."
_ID = re.compile(r"\b(fact|int)\s*(\d+)\b", re.I)
_CONCLUDES = re.compile(r"^(?P<neg>¬|~|!|not\s+|negation of\s+(?:the\s+)?)?\s*(?:the\s+)?hypothesis\b", re.I)
_LABEL_PREFIX = re.compile(r"^\s*(?:inference\s*:\s*)?(?:int\s*\d+\s*[:.]\s*)?", re.I)


# --- Prompts


def _state(problem: Problem, derived: Sequence[tuple[str, str]]) -> str:
    lines = "\n".join(f"{i}: {t}" for i, t in derived) if derived else "none yet"
    return f"Facts:\n{problem.facts_text}\nDerived so far:\n{lines}\nHypothesis: {problem.hypothesis}"


def _selected(texts: Sequence[tuple[str, str]], hypothesis: str) -> str:
    return "Selected statements:\n" + "\n".join(f"{i}: {t}" for i, t in texts) + f"\nHypothesis: {hypothesis}"


def selection_conversation(problem: Problem, derived: Sequence[tuple[str, str]]) -> Conversation:
    """The selection prompt for ``problem`` with the ``(intN, text)`` statements ``derived`` so far."""
    examples = worked_examples(problem, _selection_shot, LEAD, with_unknown=False)
    user = f"{examples}{_state(problem, derived)}\nSelection:"
    return [{"role": "system", "content": SELECTION_SYSTEM}, {"role": "user", "content": user}]


def _selection_shot(example: Problem) -> str:
    """The PROVED example's first step (nothing derived yet), the DISPROVED one's last, with the gold selection."""
    steps = gold_derivation(example)
    k = 0 if example.label == "PROVED" else len(steps) - 1
    before = [(s.conclusion, s.text) for s in steps[:k] if s.text is not None]
    return f"{_state(example, before)}\nSelection: {' & '.join(steps[k].premises)}"


def inference_conversation(problem: Problem, selected: Sequence[tuple[str, str]]) -> Conversation:
    """The inference prompt: the ``(id, text)`` statements selected and the hypothesis."""
    user = (worked_examples(problem, _inference_shots, LEAD, with_unknown=False)
            + f"{_selected(selected, problem.hypothesis)}\nInference:")
    return [{"role": "system", "content": INFERENCE_SYSTEM}, {"role": "user", "content": user}]


def _inference_shots(example: Problem) -> list[str]:
    """The PROVED example's first step (a new statement) and last (``hypothesis``), the DISPROVED one's last."""
    steps = gold_derivation(example)
    reference = {f.id: f.text for f in example.facts} | {s.conclusion: s.text for s in steps if s.text is not None}
    picks = [steps[0], steps[-1]] if example.label == "PROVED" else [steps[-1]]
    shots = []
    for step in picks:
        answer = step.text if step.text is not None else step.conclusion
        texts = [(p, reference[p]) for p in step.premises]
        shots.append(f"{_selected(texts, example.hypothesis)}\nInference: {answer}")
    return shots


def answer_conversation(problem: Problem, proof: str) -> Conversation:
    """The answer prompt: the paper's system prompt, the problem and the derived steps."""
    examples = worked_examples(problem, _answer_shot, LEAD)
    user = f"{examples}{problem_text(problem)}\nDerived steps:\n{proof or 'none'}\nAnswer:"
    return [{"role": "system", "content": system_prompt(problem.dataset)}, {"role": "user", "content": user}]


def _answer_shot(example: Problem) -> str:
    if example.label == UNKNOWN:
        steps, answer = "none", f"{UNKNOWN_EXPLANATION} {MARKERS[UNKNOWN]}"
    else:
        steps, answer = example.proof, MARKERS[example.label]
    return f"{problem_text(example)}\nDerived steps:\n{steps}\nAnswer: {answer}"


# --- Reading replies


def parse_selection(reply: str, known: Sequence[str]) -> list[str]:
    """The ids of ``known`` that ``reply`` names (``fact 3`` read as ``fact3``), in order, each once."""
    out = []
    for m in _ID.finditer(reply or ""):
        pid = f"{m.group(1).lower()}{int(m.group(2))}"
        if pid in known and pid not in out:
            out.append(pid)
    return out


def parse_inference(reply: str) -> tuple[str | None, str | None]:
    """(conclusion id, statement) from an inference reply's first non-empty line: ``hypothesis`` /
    ``¬hypothesis`` (in words too) give that id, anything else a new statement made safe for a proof line (no
    ``;``, arrows or markers)."""
    line = next((ln.strip() for ln in (reply or "").splitlines() if ln.strip()), "")
    line = _LABEL_PREFIX.sub("", line).strip().strip("*`\"'").strip()
    m = _CONCLUDES.match(line)
    if m:
        return (NEGATED_HYPOTHESIS if m.group("neg") else HYPOTHESIS), None
    text = re.sub(r"__\w+__", "", line)
    text = re.sub(r"\s*(?:->|→)\s*", " implies ", text).replace(";", ",").strip()
    return (None, text) if text else (None, None)


def _norm(text: str) -> str:
    return " ".join(text.lower().strip().rstrip(".").split())


# --- The baseline


def selection_inference(
    problems: Sequence[Problem],
    backend: Backend,
    config: GenerationConfig | None = None,
    *,
    model: str | None = None,
    rounds: int = 6,
    step_max_new_tokens: int | None = 64,
) -> BaselineResult:
    """Selection-Inference over ``problems`` (module docstring; common arguments:
    :mod:`finelogic.baselines.common`): at most ``rounds`` selection + inference rounds, whose replies are capped
    at ``step_max_new_tokens``, then one answer call. FLD proofs run to 19 steps, so a small bound cuts deep
    proofs short (Appendix A.2 reports low Sel-Inf accuracy)."""
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds}")
    config = config if config is not None else GenerationConfig()
    step_config = config
    if step_max_new_tokens is not None and step_max_new_tokens < config.max_new_tokens:
        step_config = replace(config, max_new_tokens=step_max_new_tokens)
    session = BaselineSession(SEL_INF, problems, backend, model=model)
    derived: list[list[tuple[str, str]]] = [[] for _ in problems]
    steps: list[list[str]] = [[] for _ in problems]
    for item in session.items:
        item.data.update(selections=[], stopped="round limit")
    # A statement that spells out the (negated) hypothesis concludes it.
    goal_texts = [{_norm(p.hypothesis): HYPOTHESIS, _norm(negated_hypothesis_text(p)): NEGATED_HYPOTHESIS}
                  for p in problems]
    active = list(range(len(problems)))

    for round_ in range(1, rounds + 1):
        if not active:
            break
        replies = session.ask(f"select-{round_}",
                              [(i, selection_conversation(problems[i], derived[i])) for i in active], step_config)
        chosen: dict[int, list[tuple[str, str]]] = {}
        for i, reply in zip(active, replies):
            reference = {f.id: f.text for f in problems[i].facts} | dict(derived[i])
            ids = parse_selection(reply, list(reference))
            session.items[i].data["selections"].append(ids)
            if ids:
                chosen[i] = [(pid, reference[pid]) for pid in ids]
            else:
                session.items[i].data["stopped"] = "no usable selection"
        order = [i for i in active if i in chosen]
        replies = session.ask(f"infer-{round_}",
                              [(i, inference_conversation(problems[i], chosen[i])) for i in order], step_config)
        still = []
        for i, reply in zip(order, replies):
            conclusion, text = parse_inference(reply)
            premises = " & ".join(pid for pid, _ in chosen[i])
            known_texts = {_norm(f.text) for f in problems[i].facts} | {_norm(t) for _, t in derived[i]}
            if conclusion is None and text is not None:
                conclusion = goal_texts[i].get(_norm(text))
            if conclusion is not None:
                steps[i].append(f"{premises} -> {conclusion}")
                session.items[i].data["stopped"] = f"{conclusion} reached"
            elif text is None:
                session.items[i].data["stopped"] = "empty inference"
            elif _norm(text) in known_texts:
                session.items[i].data["stopped"] = "no new statement"
            else:
                name = f"int{len(derived[i]) + 1}"
                derived[i].append((name, text))
                steps[i].append(f"{premises} -> {name}: {text}")
                still.append(i)
        active = still

    proofs = ["; ".join(s) + ";" if s else "" for s in steps]
    replies = session.ask("answer", [(i, answer_conversation(p, proofs[i])) for i, p in enumerate(problems)], config)
    responses = []
    for item, proof, reply in zip(session.items, proofs, replies):
        item.data["proof"] = proof
        label = extract_answer(reply, "principled", labels_for(item.problem.dataset))
        responses.append("\n".join(x for x in (proof, MARKERS.get(label, "")) if x))
    return session.finish(replies, responses)
