"""Probing datasets of paper §3.3 / Appendix B, built from FLD-style problems with long gold proofs.

The paper did not release its probing sets; this module rebuilds them from the description
(``reference/official_code.md``, "Probing"): PROVED and DISPROVED problems only, split by problem.

* **Task A, CSS** (correctness spanning steps): one row per proof prefix ending at step ``i``
  (``i = 1..n``); label = the problem's answer (1 = PROVED, 0 = DISPROVED).
* **Task B, RFI** (redundant facts identification): after all facts and the hypothesis, three rows each
  append one *necessary* fact (cited by the gold proof) and three each append one *redundant* fact (a
  distractor: ``meta["distractors"]``, never cited); label 1 = necessary.
* **Task C, NSD** (next-step derivability): at randomly chosen intermediate points ``k`` (after proof
  step ``k``), three rows each append a step that is *derivable now* and three each append a later gold
  step that is *not yet derivable*; label 1 = derivable.

**Derivability, exactly.** Every gold step is entailed by the facts, so "entailed by the facts and the
steps so far" cannot separate the two NSD classes; what the paper means is one inference from what is
on the page. With ``available`` = the fact formulas plus the conclusions of steps ``1..k``:

* derivable now (:func:`derivable_now`): every cited premise is available, the conclusion is not yet
  available, ``premises -> conclusion`` is one deduction rule (:func:`finelogic.logic.matches_rule`) and
  z3 confirms ``premises ⊨ conclusion``;
* not yet derivable (:func:`not_yet_derivable`): the conclusion is not available and z3 finds that the
  step's available premises together with *all* conclusions derived so far do not entail it (so some
  missing premise is really needed).

Derivable candidates are the remaining gold steps that pass the test, then (a chain proof rarely has
three) new one-rule inferences from the available formulas: modus ponens, universal instantiation,
and-elimination, existential introduction. Non-derivable candidates are later gold steps. Every
candidate's conclusion is renamed to the next free id ``int{k+1}`` (``hypothesis`` steps keep theirs),
so its number does not give away how far ahead it lies.

**Read-outs** (:class:`Readout`): ``chat`` is the paper's (system + user = the problem, assistant = the
proof prefix and the appended candidate, then the generation prompt); ``plain`` is the problem text, a
newline, the proof prefix and the candidate, read at their last token. A :class:`ProbeRow` keeps the
exact text split into the shared ``prefix`` and the appended ``suffix``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from finelogic.data.generators.fld import generate_fld
from finelogic.data.generators.nl import render_sentence
from finelogic.data.problem import DISPROVED, PROVED, Problem
from finelogic.logic import (And, Atom, Const, Exists, ForAll, Formula, Implies, Not, Var, constants, entails,
                             matches_rule, negate, parse_formula, substitute)
from finelogic.logic.proof import ProofStep, parse_proof_steps

TASKS = ("css", "rfi", "nsd")
TASK_NAMES = {"css": "CSS", "rfi": "RFI", "nsd": "NSD"}
LABEL_VALUE = {PROVED: 1, DISPROVED: 0}
CANDIDATES_PER_CLASS = 3
_X = Var("x")


@dataclass(frozen=True)
class ProbeRow:
    """One probing example: read the model's state at the last token of ``prefix + suffix``.

    Attributes:
        task: ``css``, ``rfi`` or ``nsd``.
        problem_id: the FLD problem it comes from (splits and CV folds group by it).
        split: ``train`` or ``test``.
        step: proof steps inside the prefix (CSS: ``i`` of 1..n; RFI: 0; NSD: the point ``k``).
        n_steps: steps of the problem's gold proof.
        label: CSS 1 = PROVED / 0 = DISPROVED; RFI 1 = necessary / 0 = redundant; NSD 1 = derivable now /
            0 = not yet derivable.
        candidate: what was appended (RFI: ``fact3: ...``; NSD: the step line); empty for CSS.
        prefix: exact text shared by the problem's rows up to the appended part (one KV cache).
        suffix: exact text after it (candidate and, for ``chat``, the end of turn + generation prompt).
    """

    task: str
    problem_id: str
    split: str
    step: int
    n_steps: int
    label: int
    candidate: str
    prefix: str
    suffix: str

    @property
    def text(self) -> str:
        """The exact text the model reads."""
        return self.prefix + self.suffix


# ------------------------------------------------------------------------------------------- read-outs


@dataclass(frozen=True)
class Readout:
    """How a problem, a proof prefix and a candidate become text.

    ``chat`` wraps them in the model's chat template (``tokenizer`` required); ``plain`` writes
    ``problem text + "\\n" + assistant text``. :meth:`frame` gives the text before and after the
    assistant's content, so ``frame[0] + content + frame[1]`` is the whole read-out text.
    """

    name: str
    tokenizer: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.name not in ("chat", "plain"):
            raise ValueError(f"read-out must be 'chat' or 'plain', got {self.name!r}")
        if self.name == "chat" and self.tokenizer is None:
            raise ValueError("the chat read-out needs the model's tokenizer (its chat template)")

    def frame(self, problem: Problem) -> tuple[str, str]:
        """``(head, tail)`` around the assistant content for ``problem``."""
        from finelogic.prompts import build_conversation, problem_text

        if self.name == "plain":
            return problem_text(problem) + "\n", ""
        sentinel = "\x00ASSISTANT\x00"
        messages = build_conversation(problem, "Direct") + [{"role": "assistant", "content": sentinel}]
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        head, tail = text.split(sentinel)
        return head, tail


def chat_text(tokenizer: Any, problem: Problem, content: str) -> str:
    """The paper's read-out text straight from the chat template (tests compare :class:`Readout` to it)."""
    from finelogic.prompts import build_conversation

    messages = build_conversation(problem, "Direct") + [{"role": "assistant", "content": content}]
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


# ------------------------------------------------------------------------------------------- problems


def probing_problems(n: int, seed: int, depths: Iterable[int], *, distractors: tuple[int, int] = (4, 8),
                     min_nsd_points: int = 1, progress: bool | None = None) -> list[Problem]:
    """``n`` PROVED/DISPROVED FLD-style problems usable by all three tasks, deterministically from ``seed``.

    Problems are drawn over ``depths`` and kept when they have at least three necessary and three
    redundant facts (RFI) and ``min_nsd_points`` NSD points (:func:`nsd_points`). Half are PROVED and
    half DISPROVED (PROVED first when ``n`` is odd), alternating, so any leading slice is balanced too.
    """
    depths = tuple(depths)
    wanted = {PROVED: (n + 1) // 2, DISPROVED: n // 2}
    kept: dict[str, list[Problem]] = {PROVED: [], DISPROVED: []}
    for label in (PROVED, DISPROVED):
        for batch in range(50):
            missing = wanted[label] - len(kept[label])
            if missing <= 0:
                break
            drawn = generate_fld(2 * missing + 2, seed=seed * 1000 + batch, depths=depths, labels=(label,),
                                 distractors=distractors, progress=progress)
            kept[label] += [p for p in drawn if _eligible(p, min_nsd_points)][:missing]
        if len(kept[label]) < wanted[label]:
            raise RuntimeError(f"only {len(kept[label])} of {wanted[label]} {label} problems at depths {depths} "
                               "are usable for probing")
    order = [p for pair in zip(kept[PROVED], kept[DISPROVED] + [None]) for p in pair if p is not None]
    return order[:n]


def _eligible(problem: Problem, min_nsd_points: int) -> bool:
    necessary, redundant = fact_roles(problem)
    if len(necessary) < CANDIDATES_PER_CLASS or len(redundant) < CANDIDATES_PER_CLASS:
        return False
    proof = ProofLogic.of(problem)
    return sum(1 for _ in _eligible_points(proof, limit=min_nsd_points)) >= min_nsd_points


def split_problems(problems: Sequence[Problem], n_train: int) -> dict[str, list[Problem]]:
    """First ``n_train`` problems for training, the rest for testing (the draw order alternates labels)."""
    return {"train": list(problems[:n_train]), "test": list(problems[n_train:])}


# ------------------------------------------------------------------------------------------- proofs


@dataclass(frozen=True)
class ProofLogic:
    """A gold proof's steps with their formulas: what NSD's derivability checks work on."""

    problem: Problem
    steps: tuple[ProofStep, ...]
    formulas: Mapping[str, Formula]  # fact ids, intN, hypothesis and ¬hypothesis

    @classmethod
    def of(cls, problem: Problem) -> "ProofLogic":
        if problem.label not in LABEL_VALUE or not problem.proof:
            raise ValueError(f"problem {problem.id!r}: probing needs a PROVED/DISPROVED problem with a gold proof")
        formulas = {k: parse_formula(v) for k, v in problem.formulas.items()}
        formulas["¬hypothesis"] = negate(formulas["hypothesis"])
        return cls(problem, tuple(parse_proof_steps(problem.proof)), formulas)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def fact_ids(self) -> list[str]:
        return [f.id for f in self.problem.facts]

    def available(self, k: int) -> dict[str, Formula]:
        """Id -> formula of everything on the page after step ``k``: the facts and ``k`` conclusions."""
        ids = self.fact_ids() + [s.conclusion for s in self.steps[:k]]
        return {i: self.formulas[i] for i in ids}

    def text_through(self, k: int) -> str:
        """The gold proof written up to and including step ``k`` (``""`` for ``k = 0``)."""
        return "; ".join(s.format() for s in self.steps[:k]) + (";" if k else "")

    def step_formulas(self, step: ProofStep) -> tuple[list[Formula], Formula]:
        return [self.formulas[p] for p in step.premises], self.formulas[step.conclusion]


def fact_roles(problem: Problem) -> tuple[list[str], list[str]]:
    """``(necessary, redundant)`` fact ids: cited by the gold proof / listed as distractors, in fact order."""
    cited = {p for s in parse_proof_steps(problem.proof or "") for p in s.premises}
    distractors = set(problem.meta.get("distractors", ()))
    necessary = [f.id for f in problem.facts if f.id in cited]
    redundant = [f.id for f in problem.facts if f.id in distractors and f.id not in cited]
    return necessary, redundant


def derivable_now(premises: Sequence[Formula], conclusion: Formula, available: Iterable[Formula]) -> bool:
    """One inference away (module docstring): premises on the page, conclusion new, one rule, z3-valid."""
    on_page = set(available)
    return (all(p in on_page for p in premises) and conclusion not in on_page
            and bool(matches_rule(list(premises), conclusion)) and entails(premises, conclusion))


def not_yet_derivable(premises: Sequence[Formula], conclusion: Formula, available: Iterable[Formula],
                      derived: Iterable[Formula]) -> bool:
    """Not on the page, and the step's premises that are on the page plus everything ``derived`` so far
    do not entail it (z3): some premise it needs is still missing."""
    on_page = set(available)
    if conclusion in on_page:
        return False
    return not entails([p for p in premises if p in on_page] + list(derived), conclusion)


@dataclass(frozen=True)
class Candidate:
    """A proof line offered at an NSD point."""

    premises: tuple[str, ...]
    conclusion: str  # ``hypothesis`` / ``¬hypothesis`` or the renamed ``int{k+1}``
    formula: Formula
    text: str | None
    derivable: bool
    source: str  # "gold step 7" or the rule that made it

    def line(self) -> str:
        return ProofStep(self.premises, self.conclusion, self.text).format()


def nsd_candidates(proof: ProofLogic, k: int) -> tuple[list[Candidate], list[Candidate]]:
    """``(derivable, not_derivable)`` candidates after step ``k``, each checked with the logic core."""
    available = proof.available(k)
    on_page = list(available.values())
    derived = [proof.formulas[s.conclusion] for s in proof.steps[:k]]
    name = f"int{k + 1}"
    yes: list[Candidate] = []
    no: list[Candidate] = []
    for index, step in enumerate(proof.steps[k:], start=k + 1):
        premises, conclusion = proof.step_formulas(step)
        renamed = step.conclusion if "hypothesis" in step.conclusion else name
        if derivable_now(premises, conclusion, on_page):
            yes.append(Candidate(step.premises, renamed, conclusion, step.text, True, f"gold step {index}"))
        elif not_yet_derivable(premises, conclusion, on_page, derived):
            no.append(Candidate(step.premises, renamed, conclusion, step.text, False, f"gold step {index}"))
    gold = {c.formula for c in yes} | {proof.formulas[s.conclusion] for s in proof.steps}
    vocabulary = proof.problem.meta["vocabulary"]
    for premise_ids, conclusion, rule in _one_rule_inferences(available):
        if conclusion in gold:
            continue
        premises = [available[i] for i in premise_ids]
        if not derivable_now(premises, conclusion, on_page):
            continue
        try:
            text = render_sentence(conclusion, vocabulary)
        except (KeyError, ValueError):  # no English template for this formula
            continue
        gold.add(conclusion)
        yes.append(Candidate(premise_ids, name, conclusion, text, True, rule))
    return yes, no


def _one_rule_inferences(available: Mapping[str, Formula]) -> Iterable[tuple[tuple[str, ...], Formula, str]]:
    """New conclusions one rule away from ``available``: modus ponens, universal instantiation,
    and-elimination, existential introduction (in that order; the candidates' pool)."""
    by_formula = {f: i for i, f in available.items()}
    terms = sorted({c for f in available.values() for c in constants(f)}, key=lambda c: c.name)
    for i, f in available.items():
        if isinstance(f, Implies) and f.left in by_formula:
            yield (by_formula[f.left], i), f.right, "modus_ponens"
    for i, f in available.items():
        if isinstance(f, ForAll):
            for c in terms:
                yield (i,), substitute(f.body, f.var, c), "universal_instantiation"
    for i, f in available.items():
        if isinstance(f, And):
            yield (i,), f.left, "and_elim_left"
            yield (i,), f.right, "and_elim_right"
    for i, f in available.items():
        body = f.body if isinstance(f, Not) else f
        if isinstance(body, Atom) and isinstance(body.term, Const):
            generic = Atom(body.predicate, _X)
            yield (i,), Exists(_X, Not(generic) if isinstance(f, Not) else generic), "existential_intro"


def _eligible_points(proof: ProofLogic, limit: int | None = None, order: Sequence[int] | None = None) -> Iterable[int]:
    """Points ``k`` (1..n-1) with enough candidates of both kinds, in ``order``; at most ``limit``."""
    found = 0
    for k in order if order is not None else range(1, proof.n_steps):
        if limit is not None and found >= limit:
            return
        yes, no = nsd_candidates(proof, k)
        if len(yes) >= CANDIDATES_PER_CLASS and len(no) >= CANDIDATES_PER_CLASS:
            found += 1
            yield k


def nsd_points(proof: ProofLogic, count: int, rng: random.Random) -> list[int]:
    """Up to ``count`` random intermediate points with three candidates of each kind, sorted."""
    order = list(range(1, proof.n_steps))
    rng.shuffle(order)
    return sorted(_eligible_points(proof, limit=count, order=order))


# ------------------------------------------------------------------------------------------- rows


def css_rows(problem: Problem, readout: Readout, split: str) -> list[ProbeRow]:
    """Task A: one row per proof prefix ending at step ``i = 1..n``; label = the problem's answer."""
    proof = ProofLogic.of(problem)
    head, tail = readout.frame(problem)
    return [ProbeRow("css", problem.id, split, i, proof.n_steps, LABEL_VALUE[problem.label], "",
                     head + proof.text_through(i), tail) for i in range(1, proof.n_steps + 1)]


def rfi_rows(problem: Problem, readout: Readout, split: str, rng: random.Random) -> list[ProbeRow]:
    """Task B: after facts + hypothesis, 3 rows append a necessary fact and 3 a redundant one."""
    proof = ProofLogic.of(problem)
    necessary, redundant = fact_roles(problem)
    if len(necessary) < CANDIDATES_PER_CLASS or len(redundant) < CANDIDATES_PER_CLASS:
        raise ValueError(f"problem {problem.id!r}: {len(necessary)} necessary and {len(redundant)} redundant "
                         f"facts; RFI needs {CANDIDATES_PER_CLASS} of each")
    head, tail = readout.frame(problem)
    chosen = [(i, 1) for i in rng.sample(necessary, CANDIDATES_PER_CLASS)]
    chosen += [(i, 0) for i in rng.sample(redundant, CANDIDATES_PER_CLASS)]
    rows = []
    for fact_id, label in chosen:
        candidate = f"{fact_id}: {problem.fact(fact_id).text}"
        rows.append(ProbeRow("rfi", problem.id, split, 0, proof.n_steps, label, candidate, head, candidate + tail))
    return rows


def nsd_rows(problem: Problem, readout: Readout, split: str, rng: random.Random, points: int = 6) -> list[ProbeRow]:
    """Task C: at up to ``points`` random intermediate points, 3 derivable and 3 not-yet-derivable steps."""
    proof = ProofLogic.of(problem)
    head, tail = readout.frame(problem)
    rows = []
    for k in nsd_points(proof, points, rng):
        yes, no = nsd_candidates(proof, k)
        prefix = head + proof.text_through(k)
        for candidate in rng.sample(yes, CANDIDATES_PER_CLASS) + rng.sample(no, CANDIDATES_PER_CLASS):
            line = candidate.line()
            rows.append(ProbeRow("nsd", problem.id, split, k, proof.n_steps, int(candidate.derivable), line,
                                 prefix, " " + line + ";" + tail))
    return rows


def build_rows(splits: Mapping[str, Sequence[Problem]], task: str, readout: Readout, seed: int,
               *, nsd_points: int = 6) -> list[ProbeRow]:
    """All rows of ``task`` for every split (``{"train": [...], "test": [...]}``), in problem order.

    Random choices (which facts, points, candidates) come from ``random.Random(f"{seed}/{task}/{id}")``:
    a problem's rows do not depend on the other problems or on the read-out.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    rows: list[ProbeRow] = []
    for split, problems in splits.items():
        for problem in problems:
            rng = random.Random(f"{seed}/{task}/{problem.id}")
            if task == "css":
                rows += css_rows(problem, readout, split)
            elif task == "rfi":
                rows += rfi_rows(problem, readout, split, rng)
            else:
                rows += nsd_rows(problem, readout, split, rng, nsd_points)
    return rows
