"""FLD-style deduction problems with gold proofs, deterministic from a seed: our own generator after FLD
(Morishita et al.; ``book/data-formats.md``, "FLD") in the paper's Appendix A.1 shapes. A proof tree is built
backwards from the goal, distractors and decoys are checked with z3, then the whole item is re-verified.
"""
from __future__ import annotations

import dataclasses
import logging
import random
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks

from finelogic.data.generators.nl import ADJECTIVES, EVENTS, NOUNS, Vocabulary, parse_sentence, render_sentence
from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN, Fact, Problem
from finelogic.logic import (And, Atom, Const, Exists, ForAll, Formula, Implies, Not, Or, Theory, Var, constants,
                             entails, entails_each, format_formula, matches_rule, negate, parse_formula, states,
                             subformulas, substitute)
from finelogic.logic.proof import ProofStep, parse_proof_steps

log = logging.getLogger(__name__)

GENERATOR = "finelogic.fld"
X = Var("x")
MAX_ATTEMPTS = 200
DISTRACTOR_ATTEMPTS = 4
PAPER_SHAPES = {
    # kind: (depths, PROVED per depth, DISPROVED per depth, UNKNOWN in total) -- Appendix A.1
    "test": (range(0, 20), 25, 25, 100),
    "train": (range(0, 16), 250, 250, 1500),
}


class GeneratorError(RuntimeError):
    """The generator produced something that fails its own verification (a bug, never a bad sample)."""


class _Rejected(Exception):
    """This random draw does not work out (vocabulary exhausted, distractor check): draw again."""


@dataclass(frozen=True)
class ProofNode:
    """A node of a gold proof tree: ``formula`` derived by ``rule`` from ``children`` (a leaf: rule None).
    Every new atom of a tree has a fresh predicate, so the tree has no accidental shortcuts."""

    formula: Formula
    rule: str | None = None
    children: tuple["ProofNode", ...] = ()

    @property
    def height(self) -> int:
        """Rule applications on the longest path down to a leaf: FLD's ``depth``."""
        return 0 if self.rule is None else 1 + max(c.height for c in self.children)

    def nodes(self) -> Iterable["ProofNode"]:
        """Post-order: children before their parent (the order a proof is written in)."""
        for child in self.children:
            yield from child.nodes()
        yield self

    def leaves(self) -> list[Formula]:
        return [n.formula for n in self.nodes() if n.rule is None]


def _symbol(i: int, upper: bool) -> str:
    """FLD-style symbol names: A..Z, then AA, AB, ... (lower case for constants)."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    name = letters[i] if i < 26 else letters[(i - 26) // 26 % 26] + letters[(i - 26) % 26]
    return name if upper else name.lower()


def _atoms(f: Formula) -> list[Atom]:
    return [g for g in subformulas(f) if isinstance(g, Atom)]


def _lone_constant(f: Formula) -> Const | None:
    """The one constant of a quantifier-free ``f`` (None otherwise): a formula a universal rule can instantiate to."""
    cs = constants(f)
    if len(cs) != 1 or any(isinstance(g, (ForAll, Exists)) for g in subformulas(f)):
        return None
    return next(iter(cs))


def statement_counts(facts: Iterable[Formula], target: Formula) -> tuple[int, int]:
    """How many of ``facts`` state ``target`` and how many state its negation (:func:`finelogic.logic.states`)."""
    facts = list(facts)
    other = negate(target)
    return sum(states(f, target) for f in facts), sum(states(f, other) for f in facts)


# --- Backward construction of one proof tree


class _TreeBuilder:
    """Fresh symbols and the backward proof search for one problem."""

    def __init__(self, rng: random.Random, propositional: bool, n_constants: int) -> None:
        self.rng = rng
        self.propositional = propositional
        self.constants = [Const(_symbol(i, upper=False)) for i in range(n_constants)]
        self.n_predicates = 0

    # -- fresh formulas --
    def atom(self, term: Const | Var | None = None) -> Atom:
        name = _symbol(self.n_predicates, upper=True)
        self.n_predicates += 1
        if self.propositional:
            return Atom(name)
        return Atom(name, term if term is not None else self.rng.choice(self.constants))

    def ground(self, atom: Atom) -> Atom:
        """``atom`` itself, or its predicate applied to the first constant when its term is a variable."""
        return Atom(atom.predicate, self.constants[0]) if isinstance(atom.term, Var) else atom

    def literal(self, term: Const | Var | None = None) -> Formula:
        atom = self.atom(term)
        return Not(atom) if self.rng.random() < 0.4 else atom

    def subject_of(self, goal: Formula) -> Const | None:
        """A constant of ``goal`` (kept with probability 0.7 so that universal rules can apply)."""
        found = sorted(constants(goal), key=lambda c: c.name)
        if self.propositional or not found or self.rng.random() > 0.7:
            return None
        return self.rng.choice(found)

    def antecedent(self, goal: Formula) -> Formula:
        """A fresh antecedent for an implication into ``goal``."""
        return self.antecedent_about(self.subject_of(goal))

    def antecedent_about(self, term: Const | None) -> Formula:
        """A fresh antecedent whose literals are about ``term``: a literal, or a conjunction a quarter of the time."""
        if self.rng.random() < 0.25:
            return And(self.literal(term), self.literal(term))
        return self.literal(term)

    def hypothesis(self) -> Formula:
        """The hypothesis, drawn alike whatever the label (so :mod:`finelogic.eval.cues`'s negation rule is at
        chance): half literals, else a compound of literals; a negation word half the time."""
        negated = self.rng.random() < 0.5
        r = self.rng.random()
        term = None if self.propositional else self.rng.choice(self.constants)
        if r < 0.5:
            atom = self.atom()
            return Not(atom) if negated else atom
        if not negated:  # every literal positive
            if r < 0.7:
                return And(self.atom(term), self.atom(term))
            if r < 0.85 or self.propositional:
                return Or(self.atom(term), self.atom(term))
            return Exists(X, self.atom(X))
        if r < 0.6:
            return And(*self._some_negated(term))
        if r < 0.7:
            return Or(*self._some_negated(term))
        if r < 0.8 or (r >= 0.85 and self.propositional):
            return Not(And(self.literal(term), self.literal(term)))
        if r < 0.85:
            return Not(Or(self.literal(term), self.literal(term)))
        if r < 0.9:
            return Exists(X, Not(self.atom(X)))
        return Not(Exists(X, self.literal(X)))

    def _some_negated(self, term: Const | None) -> tuple[Formula, Formula]:
        """Two literals about ``term``, at least one of them negated (each of the three sign patterns alike)."""
        left, right = self.atom(term), self.atom(term)
        signs = self.rng.choice(((True, False), (False, True), (True, True)))
        return tuple(Not(a) if neg else a for a, neg in zip((left, right), signs))

    # -- proof search --
    def side_depth(self, depth: int) -> int:
        """Depth of a premise off the deepest path: mostly a fact, sometimes a short sub-proof."""
        return self.rng.randint(0, min(depth - 1, 3)) if self.rng.random() < 0.3 else 0

    def implication(self, impl: Formula, max_depth: int) -> ProofNode:
        """A fact ``A -> B``, or (depth 1) its instance of a universal fact ``(x): A[x] -> B[x]``."""
        c = _lone_constant(impl)
        if max_depth >= 1 and c is not None and self.rng.random() < 0.35:
            return ProofNode(impl, "universal_instantiation", (ProofNode(ForAll(X, substitute(impl, c, X))),))
        return ProofNode(impl)

    def prove(self, goal: Formula, depth: int, forbid: frozenset[str] = frozenset()) -> ProofNode:
        """A proof tree of ``goal`` of height exactly ``depth``, built backwards with the assumption-free rules
        of :mod:`finelogic.logic.rules`; ``forbid``: strategies that would rebuild what the caller extracts."""
        if depth == 0:
            return ProofNode(goal)
        options = ["modus_ponens"] * 3
        if isinstance(goal, Atom) or (isinstance(goal, Not) and isinstance(goal.body, Atom)):  # a literal
            options += ["and_elim", "or_elim"]
            if not self.propositional:
                options += ["exists_elim"]
                if depth == 1:
                    options += ["universal_instantiation"]
        elif isinstance(goal, And) and "and_intro" not in forbid:
            options += ["and_intro"] * 3
        elif isinstance(goal, Or) and "or_intro" not in forbid:
            options += ["or_intro"] * 3
        elif isinstance(goal, Exists):
            options += ["existential_intro"] * 3
        strategy = self.rng.choice(options)
        return getattr(self, "_" + strategy)(goal, depth)

    def _modus_ponens(self, goal: Formula, depth: int) -> ProofNode:
        a = self.antecedent(goal)
        proof = self.prove(a, depth - 1)
        return ProofNode(goal, "modus_ponens", (proof, self.implication(Implies(a, goal), depth - 1)))

    def _and_elim(self, goal: Formula, depth: int) -> ProofNode:
        other = self.literal(self.subject_of(goal))
        left = self.rng.random() < 0.5
        conj = And(goal, other) if left else And(other, goal)
        child = self.prove(conj, depth - 1, forbid=frozenset({"and_intro"}))
        return ProofNode(goal, "and_elim_left" if left else "and_elim_right", (child,))

    def _or_elim(self, goal: Formula, depth: int) -> ProofNode:
        a, b = self.literal(self.subject_of(goal)), self.literal(self.subject_of(goal))
        disj = self.prove(Or(a, b), depth - 1, forbid=frozenset({"or_intro"}))
        ia = self.implication(Implies(a, goal), self.side_depth(depth))
        ib = self.implication(Implies(b, goal), self.side_depth(depth))
        return ProofNode(goal, "or_elim", (disj, ia, ib))

    def _exists_elim(self, goal: Formula, depth: int) -> ProofNode:
        body = self.literal(X)
        witness = self.prove(Exists(X, body), depth - 1)
        return ProofNode(goal, "existential_elim", (witness, ProofNode(ForAll(X, Implies(body, goal)))))

    def _universal_instantiation(self, goal: Formula, depth: int) -> ProofNode:
        (c,) = constants(goal)
        return ProofNode(goal, "universal_instantiation", (ProofNode(ForAll(X, substitute(goal, c, X))),))

    def _and_intro(self, goal: And, depth: int) -> ProofNode:
        deep_left = self.rng.random() < 0.5
        left = self.prove(goal.left, depth - 1 if deep_left else self.side_depth(depth))
        right = self.prove(goal.right, self.side_depth(depth) if deep_left else depth - 1)
        return ProofNode(goal, "and_intro", (left, right))

    def _or_intro(self, goal: Or, depth: int) -> ProofNode:
        if self.rng.random() < 0.5:
            return ProofNode(goal, "or_intro_left", (self.prove(goal.left, depth - 1),))
        return ProofNode(goal, "or_intro_right", (self.prove(goal.right, depth - 1),))

    def _existential_intro(self, goal: Exists, depth: int) -> ProofNode:
        instance = substitute(goal.body, goal.var, self.rng.choice(self.constants))
        return ProofNode(goal, "existential_intro", (self.prove(instance, depth - 1),))

    # -- distractors --
    def distractors(self, tree: ProofNode, k: int) -> list[Formula]:
        """``k`` facts that share the proof's predicates or constants but are not needed (the kinds below)."""
        atoms = sorted({self.ground(a) for n in tree.nodes() for a in _atoms(n.formula)}, key=format_formula)
        implications = [n.formula for n in tree.nodes() if isinstance(n.formula, Implies) and n.rule is None]
        out: list[Formula] = []
        kinds = ["fresh_premise", "fresh_conclusion"] + (["negated_premise"] if implications else [])
        if not self.propositional:
            kinds += ["other_constant", "universal"]
        for _ in range(k):
            atom = self.rng.choice(atoms)
            proof_literal = Not(atom) if self.rng.random() < 0.5 else atom
            kind = self.rng.choice(kinds)
            if kind == "fresh_premise":  # fresh premise -> proof literal
                out.append(Implies(self.literal(atom.term), proof_literal))
            elif kind == "fresh_conclusion":  # proof literal -> fresh conclusion
                out.append(Implies(proof_literal, self.literal(atom.term)))
            elif kind == "negated_premise":  # negated-premise variant of a proof implication
                impl = self.rng.choice(implications)
                out.append(Implies(negate(impl.left), self.literal(self.subject_of(impl))))
            elif kind == "other_constant":  # proof predicate, another constant
                others = [c for c in self.constants if c != atom.term] or [Const(_symbol(len(self.constants), False))]
                other = Atom(atom.predicate, self.rng.choice(others))
                out.append(Not(other) if self.rng.random() < 0.5 else other)
            else:  # universal rule into a proof predicate
                out.append(ForAll(X, Implies(self.literal(X), Atom(atom.predicate, X))))
        return out

    def decoys(self, goal: Formula, facts: Sequence[Formula]) -> list[Formula]:
        """Decoys after which the facts state the goal and its negation equally often, at least once (twice a
        quarter of the time), so the consequent cue rule of :mod:`finelogic.eval.cues` learns nothing."""
        stated = statement_counts(facts, goal)
        target = max(*stated, 2 if self.rng.random() < 0.25 else 1)
        out: list[Formula] = []
        for side, count in zip((goal, negate(goal)), stated):
            for _ in range(target - count):
                out += self.decoy(side)
        return out

    def decoy(self, side: Formula) -> list[Formula]:
        """``D -> side`` (or ``(x): D[x] -> side[x]``) with fresh ``D`` and a dead-end chain ``C -> D`` of 0-2 links."""
        c = _lone_constant(side)
        if not self.propositional and c is not None and self.rng.random() < 0.35:
            antecedent = self.antecedent_about(c)  # the chain reaches the instance at c, as a real one would
            body = ForAll(X, Implies(substitute(antecedent, c, X), substitute(side, c, X)))
            out = [body]
        else:
            antecedent = self.antecedent(side)
            out = [Implies(antecedent, side)]
        links = self.rng.choices((0, 1, 2), weights=(1, 3, 1))[0]
        reached = antecedent
        for _ in range(links):
            before = self.antecedent(reached)
            out.append(Implies(before, reached))
            reached = before
        return out


# --- One problem


def _distractor_check(facts: Sequence[Formula], leaves: Sequence[Formula], goal: Formula) -> bool:
    """The facts are consistent and no gold leaf can be dropped with the goal still entailed."""
    with Theory(facts) as theory:
        return theory.consistent() and all(not theory.entails(goal, without=[leaf]) for leaf in leaves)


def _vocabulary(rng: random.Random, builder: _TreeBuilder, facts: Sequence[Formula], hypothesis: Formula) -> Vocabulary:
    atoms = sorted({a for f in [*facts, hypothesis] for a in _atoms(f)}, key=format_formula)
    preds = sorted({a.predicate for a in atoms})
    consts = sorted({a.term.name for a in atoms if isinstance(a.term, Const)})
    pool = EVENTS if builder.propositional else ADJECTIVES
    if len(preds) > len(pool) or len(consts) > len(NOUNS):
        raise _Rejected(f"{len(preds)} predicates but only {len(pool)} words")
    words = rng.sample(pool, len(preds))
    nouns = rng.sample(NOUNS, len(consts))
    table = dict(zip(preds, words if not builder.propositional else ["the " + w for w in words]))
    return Vocabulary(
        predicates={} if builder.propositional else table,
        propositions=table if builder.propositional else {},
        constants={c: "the " + n for c, n in zip(consts, nouns)},
    )


def _attempt(rng: random.Random, depth: int, label: str, distractors: tuple[int, int], problem_id: str,
             seed_meta: object) -> Problem:
    builder = _TreeBuilder(rng, propositional=rng.random() < 0.25, n_constants=rng.randint(1, 3))
    style = label if label != UNKNOWN else rng.choice((PROVED, DISPROVED))
    hypothesis = builder.hypothesis()
    goal = hypothesis if style == PROVED else negate(hypothesis)
    tree = builder.prove(goal, depth)
    if tree.height != depth:
        raise GeneratorError(f"built a tree of height {tree.height} for depth {depth}")
    nodes = [n.formula for n in tree.nodes()]
    if len(set(nodes)) != len(nodes):
        raise _Rejected("a formula occurs twice in the proof tree")
    leaves = list(dict.fromkeys(tree.leaves()))  # distinct, in proof order
    removed: Formula | None = rng.choice(leaves) if label == UNKNOWN else None
    kept_leaves = [f for f in leaves if f != removed]

    # decoys are drawn after the other distractors: they balance what the facts finally given state
    chosen: list[Formula] = []
    decoys: list[Formula] = []
    for _ in range(DISTRACTOR_ATTEMPTS):
        drawn = builder.distractors(tree, rng.randint(*distractors))
        candidates = list(dict.fromkeys(d for d in drawn if d not in nodes))
        decoys = builder.decoys(goal, kept_leaves + candidates)
        if _distractor_check(leaves + candidates + decoys, leaves, goal):
            chosen = candidates
            break
    else:
        log.debug("%s: distractors dropped after %d draws", problem_id, DISTRACTOR_ATTEMPTS)
        decoys = builder.decoys(goal, kept_leaves)
        if not _distractor_check(leaves + decoys, leaves, goal):
            raise GeneratorError(f"{problem_id}: a leaf of the gold proof is not necessary, or the facts are "
                                 "inconsistent, with decoys alone")
    chosen += decoys
    fact_formulas = kept_leaves + chosen
    rng.shuffle(fact_formulas)
    fact_ids = {f: f"fact{i + 1}" for i, f in enumerate(fact_formulas)}
    vocab = _vocabulary(rng, builder, [*fact_formulas, *nodes, *leaves], hypothesis)

    formulas = {fact_ids[f]: format_formula(f) for f in fact_formulas}
    formulas["hypothesis"] = format_formula(hypothesis)
    meta: dict = {
        "generated": True,
        "generator": GENERATOR,
        "seed": seed_meta,
        "vocabulary": vocab.to_dict(),
        "distractors": sorted((fact_ids[f] for f in chosen), key=lambda s: int(s[4:])),
        "decoys": sorted((fact_ids[f] for f in decoys), key=lambda s: int(s[4:])),
        "propositional": builder.propositional,
    }
    proof = None
    if label == UNKNOWN:
        meta["proof_depth"] = depth
        meta["removed_fact"] = format_formula(removed)
        meta["removed_fact_text"] = render_sentence(removed, vocab)
        meta["proof_formal"] = None
    else:
        final = "hypothesis" if style == PROVED else "¬hypothesis"
        steps_nl, steps_formal, int_formulas = _linearize(tree, fact_ids, final, vocab)
        formulas.update(int_formulas)
        proof = "; ".join(s.format() for s in steps_nl) + ";"
        meta["proof_formal"] = "; ".join(s.format() for s in steps_formal) + ";"
        meta["num_steps"] = len(steps_nl)
    problem = Problem(
        id=problem_id,
        dataset="fld",
        facts=tuple(Fact(fact_ids[f], render_sentence(f, vocab)) for f in fact_formulas),
        hypothesis=render_sentence(hypothesis, vocab),
        label=label,
        depth=None if label == UNKNOWN else depth,
        proof=proof,
        formulas=formulas,
        meta=meta,
    )
    verify_fld_problem(problem)
    return problem


def _linearize(tree: ProofNode, fact_ids: Mapping[Formula, str], final: str,
               vocab: Vocabulary) -> tuple[list[ProofStep], list[ProofStep], dict[str, str]]:
    """The tree as FLD proof lines (English and formal) plus the ``intN`` formulas; depth 0 restates the fact."""
    names: dict[int, str] = {}  # id(node) -> fact or int id
    steps_nl, steps_formal, ints = [], [], {}
    for node in tree.nodes():
        if node.rule is None:
            names[id(node)] = fact_ids[node.formula]
        elif node is not tree:
            premises = tuple(names[id(c)] for c in node.children)
            name = names[id(node)] = f"int{len(ints) + 1}"
            ints[name] = format_formula(node.formula)
            steps_nl.append(ProofStep(premises, name, render_sentence(node.formula, vocab)))
            steps_formal.append(ProofStep(premises, name, ints[name]))
    last = ProofStep(tuple(names[id(c)] for c in tree.children) or (names[id(tree)],), final)
    return steps_nl + [last], steps_formal + [last], ints


def verify_fld_problem(problem: Problem) -> None:
    """Re-check a generated FLD problem from its own fields (z3 re-decides the label, every gold step is valid
    and one rule's instance, every sentence parses back); a :class:`GeneratorError` names what failed."""
    try:
        _verify(problem)
    except (KeyError, ValueError) as error:  # unknown ids, unparseable formulas or sentences
        raise GeneratorError(f"{problem.id}: {type(error).__name__}: {error}") from error


def _verify(problem: Problem) -> None:
    def fail(what: str) -> GeneratorError:
        return GeneratorError(f"{problem.id}: {what}")

    vocab = Vocabulary.from_dict(problem.meta["vocabulary"])
    formula = {k: parse_formula(v) for k, v in problem.formulas.items()}
    hypothesis = formula["hypothesis"]
    formula["¬hypothesis"] = negate(hypothesis)
    with Theory([formula[f.id] for f in problem.facts]) as theory:
        proves, disproves = theory.entails(hypothesis), theory.entails(negate(hypothesis))
    decided = {(True, False): PROVED, (False, True): DISPROVED, (False, False): UNKNOWN}.get((proves, disproves))
    if decided != problem.label:
        raise fail(f"labelled {problem.label} but z3 says proves={proves}, disproves={disproves}")
    texts = [(f.text, formula[f.id]) for f in problem.facts] + [(problem.hypothesis, hypothesis)]
    if problem.proof is not None:
        steps = parse_proof_steps(problem.proof)
        pairs = [([formula[p] for p in step.premises], formula[step.conclusion]) for step in steps]
        for step, (premises, conclusion) in zip(steps, pairs):
            rules = matches_rule(premises, conclusion)
            if len(rules) != 1:
                raise fail(f"step {step.format()!r} matches rules {rules}, not exactly one")
            if step.text is not None:
                texts.append((step.text, conclusion))
        if not entails_each(pairs):  # one z3 call for all steps; find the culprit only on failure
            bad = next(s for s, (p, c) in zip(steps, pairs) if not entails(p, c))
            raise fail(f"step {bad.format()!r} is not valid")
        if steps[-1].conclusion != ("hypothesis" if problem.label == PROVED else "¬hypothesis"):
            raise fail("the proof does not end at the (negated) hypothesis")
        if proof_depth(problem.proof, problem.formulas) != problem.depth:
            raise fail(f"the proof has depth {proof_depth(problem.proof, problem.formulas)}, not {problem.depth}")
    for text, expected in texts:
        if parse_sentence(text, vocab) != expected:
            raise fail(f"sentence {text!r} does not parse back to {format_formula(expected)}")


def proof_depth(proof: str, formulas: Mapping[str, str]) -> int:
    """FLD's ``depth`` of a proof string: rule applications on the longest path from a fact to the end.

    Facts, assumptions (``void -> assump1``, ``[assump1]``) count 0, and so does a step that restates its one
    premise's formula (a depth-0 proof); ``formulas`` maps ids to FLD formulas.
    """
    parsed = {k: parse_formula(v) for k, v in formulas.items()}
    if "hypothesis" in parsed:
        parsed["¬hypothesis"] = negate(parsed["hypothesis"])
    height: dict[str, int] = {}
    for step in parse_proof_steps(proof):
        premises = [p.strip("[]") for p in step.premises]
        if premises == ["void"]:
            height[step.conclusion] = 0
            continue
        below = max(height.get(p, 0) for p in premises)
        concl = parsed.get(step.conclusion)
        restated = len(premises) == 1 and concl is not None and parsed.get(premises[0]) == concl
        height[step.conclusion] = below + (0 if restated else 1)
    return height[step.conclusion]


def generate_fld_problem(
    rng_or_seed: random.Random | int | str,
    depth: int,
    label: str,
    *,
    distractors: tuple[int, int] = (2, 8),
    problem_id: str | None = None,
) -> Problem:
    """One verified FLD-style problem whose gold proof of exactly ``depth`` ends at the hypothesis (PROVED) or
    ``¬hypothesis`` (DISPROVED); UNKNOWN: such a tree less one leaf, ``meta["proof_depth"]`` its depth."""
    if label not in LABELS:
        raise ValueError(f"label must be one of {LABELS}, got {label!r}")
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    rng = rng_or_seed if isinstance(rng_or_seed, random.Random) else random.Random(rng_or_seed)
    seed_meta = None if isinstance(rng_or_seed, random.Random) else rng_or_seed
    problem_id = problem_id or ("fld" if seed_meta is None else f"fld-{seed_meta}") + f"-d{depth}-{label}"
    for _ in range(MAX_ATTEMPTS):
        try:
            return _attempt(rng, depth, label, distractors, problem_id, seed_meta)
        except _Rejected as why:
            log.debug("%s: redrawing (%s)", problem_id, why)
    raise GeneratorError(f"{problem_id}: no valid draw in {MAX_ATTEMPTS} attempts")


# --- Many problems


def even_plan(n: int, depths: Iterable[int], labels: Sequence[str]) -> dict[tuple[int, str], int]:
    """``n`` spread over depths × labels as evenly as possible; the first cells (depth-major) get the rest."""
    if n < 0:
        raise ValueError(f"n must be 0 or more, got {n}")
    cells = [(d, lab) for d in depths for lab in labels]
    if not cells:
        raise ValueError("no (depth, label) cells to fill")
    base, rest = divmod(n, len(cells))
    return {cell: base + (i < rest) for i, cell in enumerate(cells)}


def generate_from_plan(plan: Mapping[tuple[int, str], int], seed: int, *, progress: bool | None = None,
                       **kwargs) -> list[Problem]:
    """Problems for every ``(depth, label): count`` of ``plan``, in plan order; item ``k`` of a cell draws from
    ``random.Random("<seed>/<d>/<label>/<k>")``, so it does not depend on the rest of the plan."""
    total = sum(plan.values())
    bar = tqdm(total=total, desc="FLD problems", disable=progress is False or (progress is None and total < 200))
    out = []
    for (depth, label), count in plan.items():
        for k in range(count):
            item_seed = f"{seed}/{depth}/{label}/{k}"
            problem_id = f"fld-{seed}-d{depth}-{label}-{k}"
            problem = generate_fld_problem(item_seed, depth, label, problem_id=problem_id, **kwargs)
            out.append(dataclasses.replace(problem, meta={**problem.meta, "seed": seed, "item_seed": item_seed}))
            bar.update()
    bar.close()
    return out


def generate_fld(
    n: int,
    seed: int,
    depths: Iterable[int] = range(0, 20),
    labels: Sequence[str] = (PROVED, DISPROVED, UNKNOWN),
    *,
    progress: bool | None = None,
    **kwargs,
) -> list[Problem]:
    """``n`` verified FLD-style problems spread by :func:`even_plan`; ``kwargs`` go to :func:`generate_fld_problem`."""
    return generate_from_plan(even_plan(n, depths, labels), seed, progress=progress, **kwargs)


def fld_paper_plan(kind: str, scale: float = 1.0) -> dict[tuple[int, str], int]:
    """The paper's FLD sample shape (Appendix A.1, :data:`PAPER_SHAPES`: 1,100 test, 9,500 train items) as
    ``{(depth, label): count}``, UNKNOWN spread by :func:`even_plan`; ``scale`` multiplies every cell, rounding
    half up, at least 1."""
    if kind not in PAPER_SHAPES:
        raise ValueError(f"kind must be one of {sorted(PAPER_SHAPES)}, got {kind!r}")
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    depths, n_proved, n_disproved, n_unknown = PAPER_SHAPES[kind]
    unknown = even_plan(n_unknown, depths, (UNKNOWN,))
    plan = {}
    for d in depths:
        for label, count in ((PROVED, n_proved), (DISPROVED, n_disproved), (UNKNOWN, unknown[d, UNKNOWN])):
            plan[d, label] = max(1, int(count * scale + 0.5))
    return plan
