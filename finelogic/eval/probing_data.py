"""Probing datasets of paper §3.3 / Appendix B (CSS, RFI, NSD), rebuilt from the paper's description
(``book/released-code.md``, "Probing") on FLD-style PROVED/DISPROVED problems with long gold proofs, split by problem.
Rows are read out as ``chat`` (the paper's: the chat template) or ``plain`` text (:class:`Readout`).
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Iterable, Mapping, MutableMapping, Sequence

from tqdm import tqdm

from finelogic.data.generators.nl import render_sentence
from finelogic.data.problem import DISPROVED, PROVED, Problem
from finelogic.eval.steps import problem_formulas
from finelogic.logic import (And, Atom, Const, Exists, ForAll, Formula, Implies, Not, Or, Var, constants, entails,
                             matches_rule, parse_formula, substitute)
from finelogic.logic.proof import ProofStep, parse_proof_steps
from finelogic.memo import memo_key
from finelogic.models.base import COMPLETION, completion_prompt, template_of

TASKS = ("css", "rfi", "nsd")
LABEL_VALUE = {PROVED: 1, DISPROVED: 0}
CANDIDATES_PER_CLASS = 3
_X = Var("x")


@dataclass(frozen=True)
class ProbeRow:
    """One probing example: read the model's state at the last token of ``prefix + suffix``."""

    task: str  # css, rfi or nsd
    problem_id: str  # the FLD problem it comes from (splits and CV folds group by it)
    split: str  # train or test
    step: int  # proof steps inside the prefix (CSS: i of 1..n; RFI: 0; NSD: the point k)
    n_steps: int  # steps of the problem's gold proof
    label: int  # CSS 1 = PROVED; RFI 1 = necessary; NSD 1 = derivable now
    candidate: str  # the row's own line, what the text-only baseline reads (CSS: the prefix's last step)
    prefix: str  # exact text shared by the problem's rows up to the appended part (one KV cache)
    suffix: str  # the candidate and, for chat, the end of turn + generation prompt

    @property
    def text(self) -> str:
        """The exact text the model reads."""
        return self.prefix + self.suffix


# ------------------------------------------------------------------------------------------- read-outs


@dataclass(frozen=True)
class Readout:
    """How a problem, a proof prefix and a candidate become text: ``chat`` wraps them as the model is prompted
    (``tokenizer`` required: its chat template, or, without one, the plain-text completion prompt), ``plain`` writes ``problem text + "\\n" + assistant text``; ``frame[0]
    + content + frame[1]`` is the whole text."""

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
        conversation = build_conversation(problem, "Direct")
        if template_of(self.tokenizer) == COMPLETION:  # plain text: the answer follows the cue
            return completion_prompt(conversation) + " ", ""
        sentinel = "\x00ASSISTANT\x00"
        messages = conversation + [{"role": "assistant", "content": sentinel}]
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        head, tail = text.split(sentinel)
        return head, tail


# ------------------------------------------------------------------------------------------- problems


def probing_problems(n: int, seed: int, depths: Iterable[int], *, distractors: tuple[int, int] = (4, 8),
                     progress: bool | None = None, memo: MutableMapping[str, Any] | None = None) -> list[Problem]:
    """``n`` PROVED/DISPROVED FLD-style problems usable by all three tasks, deterministically from ``seed``:
    :func:`cell_counts` per ``(depth, label)``, each kept when it has three RFI pairs and an NSD point; depth by
    depth, PROVED first. ``memo`` (versioned by this module's sources) keeps them: z3 checks are slow."""
    from finelogic.data.generators.fld import generate_fld_problem

    depths = tuple(depths)
    key = memo_key({"kind": "probing problems", "n": n, "seed": seed, "depths": depths,
                    "distractors": tuple(distractors)})
    kept = memo.get(key) if memo is not None else None
    if kept is not None:
        return [Problem.from_dict(p) for p in kept]
    counts = cell_counts(n, depths, seed)
    out: list[Problem] = []
    bar = tqdm(total=n, desc="probing problems", disable=progress is False or (progress is None and n < 50))
    for (depth, label), count in counts.items():
        kept = 0
        for j in range(200 * count + 200):  # short proofs (depth 4) seldom have three same-rule NSD pairs
            if kept == count:
                break
            item_seed = f"probing/{seed}/{depth}/{label}/{j}"
            problem = generate_fld_problem(item_seed, depth, label, distractors=distractors,
                                           problem_id=f"fld-probing-{seed}-d{depth}-{label}-{j}")
            if _eligible(problem):
                out.append(problem)
                kept += 1
                bar.update()
        if kept < count:
            raise RuntimeError(f"only {kept} of {count} {label} problems at depth {depth} are usable for probing")
    bar.close()
    if memo is not None:
        memo[key] = [p.to_dict() for p in out]
    return out


def cell_counts(n: int, depths: Sequence[int], seed: int) -> dict[tuple[int, str], int]:
    """Problems per ``(depth, label)`` cell: ``n // cells`` each, the extras one each to cells in a seeded order,
    so labels and depths differ by at most one."""
    order = list(depths)
    random.Random(f"probing-cells/{seed}").shuffle(order)
    turn = (len(order) + 1) // 2  # DISPROVED extras start half-way round: labels and depths stay within one
    extras = [cell for pair in zip([(d, PROVED) for d in order], [(d, DISPROVED) for d in order[turn:] + order[:turn]])
              for cell in pair]
    base, more = divmod(n, 2 * len(order))
    chosen = set(extras[:more])
    return {(d, label): base + ((d, label) in chosen) for d in depths for label in (PROVED, DISPROVED)}


def _eligible(problem: Problem) -> bool:
    if problem.label not in LABEL_VALUE or not problem.proof:
        return False
    necessary, redundant = fact_roles(problem)
    shape = {i: formula_shape(parse_formula(problem.formulas[i])) for i in necessary + redundant}
    if pairs_possible([shape[i] for i in necessary], [shape[i] for i in redundant]) < CANDIDATES_PER_CLASS:
        return False
    return bool(nsd_points(ProofLogic.of(problem), 1))


def split_problems(problems: Sequence[Problem], n_train: int, seed: int = 0) -> dict[str, list[Problem]]:
    """Train / test split stratified by ``(depth, label)`` (test shares by largest remainder, members seeded per
    cell); both splits keep the problems' order."""
    n_test = len(problems) - n_train
    if n_test < 0 or n_train < 0:
        raise ValueError(f"n_train={n_train} with {len(problems)} problems")
    cells: dict[tuple[Any, str], list[int]] = {}
    for index, problem in enumerate(problems):
        cells.setdefault((problem.depth, problem.label), []).append(index)
    quota = {c: n_test * len(m) // len(problems) for c, m in cells.items()} if problems else {}
    remainder = sorted(cells, key=lambda c: (-(n_test * len(cells[c]) % len(problems)), -len(cells[c])))
    for cell in remainder[:n_test - sum(quota.values())]:
        quota[cell] += 1
    test: set[int] = set()
    for (depth, label), members in cells.items():
        shuffled = list(members)
        random.Random(f"split/{seed}/{depth}/{label}").shuffle(shuffled)
        test.update(shuffled[:quota[depth, label]])
    return {"train": [p for i, p in enumerate(problems) if i not in test],
            "test": [p for i, p in enumerate(problems) if i in test]}


# ------------------------------------------------------------------------------------------- proofs


@functools.lru_cache(maxsize=8192)
def gold_steps(proof: str) -> tuple[ProofStep, ...]:
    """A gold proof's steps, parsed once per proof text."""
    return tuple(parse_proof_steps(proof))


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
        return cls(problem, gold_steps(problem.proof), problem_formulas(problem))

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def available(self, k: int) -> dict[str, Formula]:
        """Id -> formula of everything on the page after step ``k``: the facts and ``k`` conclusions."""
        ids = [f.id for f in self.problem.facts] + [s.conclusion for s in self.steps[:k]]
        return {i: self.formulas[i] for i in ids}

    def text_through(self, k: int) -> str:
        """The gold proof written up to and including step ``k`` (``""`` for ``k = 0``)."""
        return "; ".join(s.format() for s in self.steps[:k]) + (";" if k else "")


def fact_roles(problem: Problem) -> tuple[list[str], list[str]]:
    """``(necessary, redundant)`` fact ids: cited by the gold proof / listed as distractors, in fact order."""
    cited = {p for s in gold_steps(problem.proof or "") for p in s.premises}
    distractors = set(problem.meta.get("distractors", ()))
    necessary = [f.id for f in problem.facts if f.id in cited]
    redundant = [f.id for f in problem.facts if f.id in distractors and f.id not in cited]
    return necessary, redundant


def derivable_now(premises: Sequence[Formula], conclusion: Formula, available: Iterable[Formula]) -> bool:
    """One inference away: premises on the page, conclusion new, one rule, z3-valid."""
    on_page = available if isinstance(available, (set, frozenset)) else set(available)
    return (all(p in on_page for p in premises) and conclusion not in on_page
            and bool(matches_rule(list(premises), conclusion)) and entails(premises, conclusion))


def not_yet_derivable(premises: Sequence[Formula], conclusion: Formula, available: Iterable[Formula],
                      derived: Iterable[Formula]) -> bool:
    """Not on the page, and the step's premises on the page plus everything ``derived`` do not entail it (z3)."""
    on_page = available if isinstance(available, (set, frozenset)) else set(available)
    if conclusion in on_page:
        return False
    return not entails([p for p in premises if p in on_page] + list(derived), conclusion)


@dataclass(frozen=True)
class Candidate:
    """A proof line offered at an NSD point, its premises written as text without ids: ids would give the class
    away, since a premise still to come has none."""

    premises: tuple[str, ...]  # ids in the gold problem, never shown to the model
    premise_texts: tuple[str, ...]  # final period dropped
    conclusion: str  # the next free id int{k+1}
    formula: Formula
    text: str
    derivable: bool
    rule: str

    def line(self) -> str:
        """``<premise> & <premise> -> int{k+1}: <conclusion>``."""
        return f"{' & '.join(self.premise_texts)} -> {self.conclusion}: {self.text}"

    @property
    def rule_family(self) -> str:
        """The rule, the two and-eliminations as one (pairs are matched on it)."""
        return _rule_family(self.rule)


def nsd_candidates(proof: ProofLogic, k: int) -> tuple[list[Candidate], list[Candidate]]:
    """``(derivable, not_derivable)`` one-rule candidates after step ``k``, neither gold steps nor the hypothesis
    or its negation; not yet derivable uses a gold conclusion still to come."""
    point = _Point(proof, k)
    yes = point.derivable()
    no = [c for c in (point.not_yet(i) for i in point.not_yet_pool()) if c is not None]
    return yes, no


def point_usable(proof: ProofLogic, k: int, count: int = CANDIDATES_PER_CLASS) -> bool:
    """Whether point ``k`` allows ``count`` same-rule pairs of :func:`nsd_candidates`, z3-checking only the
    not-yet steps of rules still lacking a partner (and an earlier step of equal conclusion where the first kept
    decides)."""
    point = _Point(proof, k)
    yes_by_rule: dict[str, int] = {}
    for c in point.derivable():
        yes_by_rule[c.rule_family] = yes_by_rule.get(c.rule_family, 0) + 1
    if sum(yes_by_rule.values()) < count:
        return False
    no_by_rule = dict.fromkeys(yes_by_rule, 0)
    deferred: dict[Formula, list[tuple[tuple[str, ...], Formula, str]]] = {}
    for inference in point.not_yet_pool():
        conclusion, family = inference[1], _rule_family(inference[2])
        if conclusion in point.later:
            continue
        if no_by_rule.get(family, 0) >= yes_by_rule.get(family, 0):  # no partner needed: maybe never checked
            deferred.setdefault(conclusion, []).append(inference)
            continue
        for earlier in deferred.pop(conclusion, ()):
            if point.not_yet(earlier) is not None:
                break
        if conclusion not in point.later and point.not_yet(inference) is not None:
            no_by_rule[family] += 1
            if sum(min(n, no_by_rule[f]) for f, n in yes_by_rule.items()) >= count:
                return True
    return False


def _rule_family(rule: str) -> str:
    return "and_elim" if rule.startswith("and_elim") else rule


class _Point:
    """An NSD point ``k``: what is on the page, what is still to come, and the conclusions found so far
    (``now`` derivable, ``later`` not yet; the first of equal conclusions kept)."""

    def __init__(self, proof: ProofLogic, k: int) -> None:
        self.proof, self.k = proof, k
        self.available = proof.available(k)
        self.on_page = set(self.available.values())
        self.derived = [proof.formulas[s.conclusion] for s in proof.steps[:k]]
        self.future = {s.conclusion: proof.formulas[s.conclusion] for s in proof.steps[k:]
                       if "hypothesis" not in s.conclusion}
        self.excluded = self.on_page | {proof.formulas[s.conclusion] for s in proof.steps}
        self.excluded |= {proof.formulas["hypothesis"], proof.formulas["¬hypothesis"]}
        # id -> sentence as the page writes it: fact texts and the gold steps' conclusion texts
        self.texts = {f.id: f.text for f in proof.problem.facts}
        self.texts.update({s.conclusion: s.text for s in proof.steps if s.text is not None})
        self.vocabulary = proof.problem.meta["vocabulary"]
        self.name = f"int{k + 1}"
        self.now: set[Formula] = set()
        self.later: set[Formula] = set()

    def make(self, premise_ids: tuple[str, ...], conclusion: Formula, rule: str, derivable: bool) -> Candidate | None:
        try:
            text = render_sentence(conclusion, self.vocabulary)
        except (KeyError, ValueError):  # no English template for this formula
            return None
        premise_texts = tuple(self.texts[i].rstrip(".") for i in premise_ids)
        return Candidate(tuple(premise_ids), premise_texts, self.name, conclusion, text, derivable, rule)

    def derivable(self) -> list[Candidate]:
        """The derivable-now candidates (fills ``now``)."""
        yes: list[Candidate] = []
        for premise_ids, conclusion, rule in _one_rule_inferences(self.available):
            if conclusion in self.excluded or conclusion in self.now:
                continue
            if derivable_now([self.available[i] for i in premise_ids], conclusion, self.on_page):
                candidate = self.make(premise_ids, conclusion, rule, True)
                if candidate is not None:
                    self.now.add(conclusion)
                    yes.append(candidate)
        return yes

    def not_yet_pool(self) -> Iterable[tuple[tuple[str, ...], Formula, str]]:
        """One-rule steps using a conclusion still to come, not excluded and not derivable now (call
        :meth:`derivable` first); not yet z3-checked."""
        self.ahead = {**self.available, **self.future}
        future = set(self.future)
        for premise_ids, conclusion, rule in _one_rule_inferences(self.ahead):
            if set(premise_ids) & future and conclusion not in self.excluded and conclusion not in self.now:
                yield premise_ids, conclusion, rule

    def not_yet(self, inference: tuple[tuple[str, ...], Formula, str]) -> Candidate | None:
        """The pool step as a not-yet-derivable candidate (fills ``later``), or None."""
        premise_ids, conclusion, rule = inference
        if conclusion in self.later:
            return None
        premises = [self.ahead[i] for i in premise_ids]
        if not (matches_rule(premises, conclusion) and entails(premises, conclusion)):
            return None
        if not not_yet_derivable(premises, conclusion, self.on_page, self.derived):
            return None
        candidate = self.make(premise_ids, conclusion, rule, False)
        if candidate is not None:
            self.later.add(conclusion)
        return candidate


def _one_rule_inferences(available: Mapping[str, Formula]) -> Iterable[tuple[tuple[str, ...], Formula, str]]:
    """New conclusions one rule away from ``available``, in the order modus ponens, universal instantiation,
    and-elimination, existential introduction, and-introduction of two ground literals."""
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
    literals = [(i, f) for i, f in available.items() if _ground_literal(f)]
    for i, f in literals:
        generic = Atom((f.body if isinstance(f, Not) else f).predicate, _X)
        yield (i,), Exists(_X, Not(generic) if isinstance(f, Not) else generic), "existential_intro"
    for a, (i, f) in enumerate(literals):
        for j, g in literals[a + 1:]:
            yield (i, j), And(f, g), "and_intro"


def _ground_literal(formula: Formula) -> bool:
    """``{A}{a}`` or ``¬{A}{a}``: what existential introduction reads and and-introduction joins."""
    body = formula.body if isinstance(formula, Not) else formula
    return isinstance(body, Atom) and isinstance(body.term, Const)


def pairs_possible(yes_kinds: Sequence[str], no_kinds: Sequence[str]) -> int:
    """How many (yes, no) pairs of one kind (NSD: rule family; RFI: formula shape) the kinds allow."""
    return sum(min(yes_kinds.count(k), no_kinds.count(k)) for k in set(yes_kinds))


def closest_pairs(yes: Sequence[Any], no: Sequence[Any], kind: Any, size: Any, rng: random.Random,
                  count: int) -> list[tuple[Any, Any]]:
    """Up to ``count`` (yes, no) pairs of one ``kind``, each ``no`` the unused one of closest ``size``: both
    lists shuffled by ``rng``, the ``kind`` rarest among ``no`` first (ties: the first in shuffled order)."""
    yes, no = list(yes), list(no)
    rng.shuffle(yes)
    rng.shuffle(no)
    scarcity = {k: sum(kind(c) == k for c in no) for k in {kind(c) for c in yes}}
    used: set[int] = set()
    pairs: list[tuple[Any, Any]] = []
    for family in sorted(scarcity, key=lambda k: (scarcity[k], k)):
        for y in (c for c in yes if kind(c) == family):
            options = [j for j, c in enumerate(no) if j not in used and kind(c) == family]
            if len(pairs) == count or not options:
                break
            best = min(options, key=lambda j: abs(size(no[j]) - size(y)))
            used.add(best)
            pairs.append((y, no[best]))
    return pairs


def nsd_points(proof: ProofLogic, count: int, rng: random.Random | None = None) -> list[int]:
    """Up to ``count`` intermediate points (1..n-1) with three same-rule candidate pairs, sorted: the first
    found in an order shuffled by ``rng`` (None: in proof order)."""
    order = list(range(1, proof.n_steps))
    if rng is not None:
        rng.shuffle(order)
    return sorted(islice((k for k in order if point_usable(proof, k)), count))


# ------------------------------------------------------------------------------------------- rows


def css_rows(problem: Problem, readout: Readout, split: str) -> list[ProbeRow]:
    """Task A: one row per proof prefix ending at step ``i = 1..n``; label = the problem's answer."""
    proof = ProofLogic.of(problem)
    head, tail = readout.frame(problem)
    return [ProbeRow("css", problem.id, split, i, proof.n_steps, LABEL_VALUE[problem.label],
                     proof.steps[i - 1].format(), head + proof.text_through(i), tail)
            for i in range(1, proof.n_steps + 1)]


def rfi_rows(problem: Problem, readout: Readout, split: str, rng: random.Random) -> list[ProbeRow]:
    """Task B: after facts + hypothesis, 3 rows append a necessary fact (label 1, first) and 3 a redundant one,
    drawn as :func:`rfi_pairs`."""
    proof = ProofLogic.of(problem)
    head, tail = readout.frame(problem)
    pairs = rfi_pairs(problem, rng)
    rows = []
    for fact_id, label in [(n, 1) for n, _ in pairs] + [(r, 0) for _, r in pairs]:
        candidate = f"{fact_id}: {problem.fact(fact_id).text}"
        rows.append(ProbeRow("rfi", problem.id, split, 0, proof.n_steps, label, candidate, head, candidate + tail))
    return rows


def formula_shape(formula: Formula) -> str:
    """The formula with predicates and constants blanked (``(¬Pa -> Pa)``, ``∀(Px -> Pa)``)."""
    if isinstance(formula, Atom):
        return "Px" if isinstance(formula.term, Var) else "Pa"
    if isinstance(formula, Not):
        return "¬" + formula_shape(formula.body)
    if isinstance(formula, (ForAll, Exists)):
        return ("∀" if isinstance(formula, ForAll) else "∃") + formula_shape(formula.body)
    if isinstance(formula, (And, Or, Implies)):
        op = {And: "&", Or: "v", Implies: "->"}[type(formula)]
        return f"({formula_shape(formula.left)} {op} {formula_shape(formula.right)})"
    return type(formula).__name__


def rfi_pairs(problem: Problem, rng: random.Random, count: int = CANDIDATES_PER_CLASS) -> list[tuple[str, str]]:
    """``count`` (necessary, redundant) fact-id pairs of one :func:`formula_shape`, closest in text length:
    distractors are simpler formulas whose words ("both", "either") would give the label away. ValueError when
    fewer exist."""
    necessary, redundant = fact_roles(problem)
    shape = {i: formula_shape(parse_formula(problem.formulas[i])) for i in necessary + redundant}
    length = {i: len(problem.fact(i).text) for i in necessary + redundant}
    pairs = closest_pairs(necessary, redundant, shape.__getitem__, length.__getitem__, rng, count)
    if len(pairs) < count:
        raise ValueError(f"problem {problem.id!r}: {len(pairs)} necessary/redundant fact pairs of one shape; "
                         f"RFI needs {count}")
    return pairs


def nsd_rows(problem: Problem, readout: Readout, split: str, rng: random.Random, points: int = 6, *,
             lines: Sequence[tuple[int, Sequence[tuple[str, int]]]] | None = None) -> list[ProbeRow]:
    """Task C: at up to ``points`` random points ``k``, 3 derivable-now steps (label 1, first) and 3 not yet
    derivable; ``lines``: the problem's :func:`nsd_lines` drawn earlier with the same ``rng``."""
    proof = ProofLogic.of(problem)
    head, tail = readout.frame(problem)
    rows = []
    for k, appended in nsd_lines(problem, rng, points) if lines is None else lines:
        prefix = head + proof.text_through(k)
        for line, label in appended:
            rows.append(ProbeRow("nsd", problem.id, split, k, proof.n_steps, label, line, prefix, " " + line + ";" + tail))
    return rows


def kept_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as what the ``probing`` memo keeps (None: nothing): :func:`probing_problems`'
    problems (dicts :meth:`Problem.from_dict` reads) or one problem's :func:`nsd_lines`."""
    if type(value) is not list:
        return f"a list of problems or NSD lines was expected, not {str(value)[:60]}"
    if all(type(v) is dict for v in value):
        try:
            [Problem.from_dict(v) for v in value]
        except (TypeError, ValueError, KeyError, AttributeError) as error:
            return f"a problem cannot be read back ({type(error).__name__}: {str(error)[:80]})"
        return None
    for point in value:
        if type(point) is not list or len(point) != 2 or type(point[0]) is not int or type(point[1]) is not list \
                or any(type(p) is not list or len(p) != 2 or type(p[0]) is not str or p[1] not in (0, 1)
                       or type(p[1]) is not int for p in point[1]):
            return f"an NSD point must be [k, [[line, 0 or 1], ...]], not {str(point)[:60]}"
    return None


def nsd_lines(problem: Problem, rng: random.Random, points: int = 6) -> list[tuple[int, list[tuple[str, int]]]]:
    """What :func:`nsd_rows` appends, without the read-out: ``(k, [(line, label), ...])`` per point, the
    (derivable, not yet) pairs of one rule closest in length."""
    proof = ProofLogic.of(problem)
    lines = []
    for k in nsd_points(proof, points, rng):
        pairs = closest_pairs(*nsd_candidates(proof, k), lambda c: c.rule_family, lambda c: len(c.line()), rng,
                              CANDIDATES_PER_CLASS)
        if len(pairs) < CANDIDATES_PER_CLASS:
            raise ValueError(f"only {len(pairs)} same-rule pairs; NSD needs {CANDIDATES_PER_CLASS}")
        lines.append((k, [(c.line(), int(c.derivable)) for c in [y for y, _ in pairs] + [n for _, n in pairs]]))
    return lines


def build_rows(splits: Mapping[str, Sequence[Problem]], task: str, readout: Readout, seed: int,
               *, nsd_points: int = 6, memo: MutableMapping[str, Any] | None = None) -> list[ProbeRow]:
    """All rows of ``task`` for every split, in problem order; each problem's random choices are seeded by its id,
    independent of the other problems and the read-out. ``memo`` keeps each problem's NSD lines across runs."""
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
                lines = None
                if memo is not None:
                    key = memo_key({"kind": "nsd lines", "problem": problem.to_dict(),
                                    "random": f"{seed}/{task}/{problem.id}", "points": nsd_points})
                    lines = memo.get(key)
                    if lines is None:
                        lines = memo[key] = nsd_lines(problem, rng, nsd_points)
                rows += nsd_rows(problem, readout, split, rng, nsd_points, lines=lines)
    return rows


def row_counts(rows: Sequence[ProbeRow]) -> "pd.DataFrame":
    """Problems, rows and ``label 1 (%)`` per ``task`` (upper case) and ``split``."""
    import pandas as pd

    records = []
    for task in TASKS:
        for split in ("train", "test"):
            chosen = [r for r in rows if r.task == task and r.split == split]
            records.append({"task": task.upper(), "split": split, "problems": len({r.problem_id for r in chosen}),
                            "rows": len(chosen),
                            "label 1 (%)": round(100 * sum(r.label for r in chosen) / max(len(chosen), 1), 1)})
    return pd.DataFrame(records, columns=["task", "split", "problems", "rows", "label 1 (%)"])


def shown_rows(rows: Sequence[ProbeRow]) -> list[ProbeRow]:
    """One test row per task, the one a page shows (CSS: a problem's first prefix)."""
    shown = []
    for task in TASKS:
        row = next((r for r in rows if r.task == task and r.split == "test" and (task != "css" or r.step == 1)), None)
        if row is not None:
            shown.append(row)
    return shown
