"""LogicMark-style problems: premises ``a = b``, ``b != c``; options the entailed answer, its flip and statements
that do not follow; exact hop-depth targeting. Our own generator written from the LogicMark card
(``book/data-formats.md``, "LogicMark"), which names its ``Config`` but does not include the code.
"""
from __future__ import annotations

import itertools
import random
import string
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks

from finelogic.data.problem import Fact, Problem

STYLES = ("chain", "star", "clusters", "tree", "bipartite", "mixed")
EQ, NEQ = "=", "!="
MAX_ATTEMPTS = 20_000


@dataclass(frozen=True)
class Statement:
    """``left op right`` with op ``=`` or ``!=``; equal regardless of orientation (``a = b`` == ``b = a``)."""

    left: str
    op: str
    right: str

    def __post_init__(self) -> None:
        if self.op not in (EQ, NEQ):
            raise ValueError(f"operator must be '=' or '!=', got {self.op!r}")

    @classmethod
    def parse(cls, text: str) -> "Statement":
        """``"a != b"`` -> Statement("a", "!=", "b")."""
        parts = text.split()
        if len(parts) != 3 or parts[1] not in (EQ, NEQ):
            raise ValueError(f"not a LogicMark statement 'x = y' / 'x != y': {text!r}")
        return cls(parts[0], parts[1], parts[2])

    @property
    def key(self) -> tuple[str, str, str]:
        return (*sorted((self.left, self.right)), self.op)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Statement) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def flipped(self) -> "Statement":
        return Statement(self.left, NEQ if self.op == EQ else EQ, self.right)

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


class Premises:
    """A premise set with its equality graph and all-pairs equality distances."""

    def __init__(self, statements: Iterable[Statement]):
        self.statements = tuple(statements)
        self.variables = sorted({v for s in self.statements for v in (s.left, s.right)})
        self.neighbours: dict[str, set[str]] = {v: set() for v in self.variables}
        for s in self.statements:
            if s.op == EQ:
                self.neighbours[s.left].add(s.right)
                self.neighbours[s.right].add(s.left)
        self.inequalities = [(s.left, s.right) for s in self.statements if s.op == NEQ]
        self._dist = {v: self._bfs(v) for v in self.variables}

    def _bfs(self, source: str) -> dict[str, int]:
        dist, queue = {source: 0}, deque([source])
        while queue:
            v = queue.popleft()
            for w in self.neighbours[v]:
                if w not in dist:
                    dist[w] = dist[v] + 1
                    queue.append(w)
        return dist

    def dist_eq(self, x: str, y: str) -> int | None:
        """Shortest path length from x to y in the equality graph; None when not connected."""
        return self._dist.get(x, {}).get(y, 0 if x == y else None)

    def consistent(self) -> bool:
        """No inequality premise inside one equality class."""
        return all(self.dist_eq(u, v) is None for u, v in self.inequalities)

    def entails(self, s: Statement) -> bool:
        return self.hop_depth(s) is not None

    def hop_depth(self, s: Statement) -> int | None:
        """The fewest premises chained to derive ``s`` (a premise: 1), None when not entailed: for ``x != y``
        the least ``dist_eq(x, u) + 1 + dist_eq(v, y)`` over inequality premises ``u != v``, both ways round."""
        if s.op == EQ:
            return self.dist_eq(s.left, s.right)
        best = None
        for u, v in self.inequalities:
            for a, b in ((u, v), (v, u)):
                left, right = self.dist_eq(s.left, a), self.dist_eq(b, s.right)
                if left is not None and right is not None and (best is None or left + 1 + right < best):
                    best = left + 1 + right
        return best


def hop_depth(premises: Sequence[str], statement: str) -> int | None:
    """Hop depth of ``statement`` (``"a != c"``) given premise strings; None when not entailed."""
    return Premises(Statement.parse(p) for p in premises).hop_depth(Statement.parse(statement))


@dataclass(frozen=True)
class Config:
    """The LogicMark card's generator configuration: its fields, names and example values, none of our own.

    The card describes ``min_answer_hop``, ``target_hop_dist`` and ``styles``; the ranges (variables, ``=`` and
    ``!=`` premises per problem, each uniform) are our reading of their names. ``min_answer_hop`` applies only
    without ``target_hop_dist``: the card's example sets both it (2) and a 10% 1-hop target, which cannot both
    hold. ``num_choices``: the answer, its flip and ``num_choices - 2`` others. ``seed`` is our
    ``random.Random``'s, so the card's 42 does not give the card's items.
    """

    limit: int = 1000
    min_vars: int = 4
    max_vars: int = 8
    min_eq: int = 2
    max_eq: int = 5
    min_neq: int = 1
    max_neq: int = 3
    num_choices: int = 4
    min_answer_hop: int = 2
    target_hop_dist: Mapping[int, float] | None = field(
        default_factory=lambda: {1: 0.10, 2: 0.40, 3: 0.25, 4: 0.15, 5: 0.10})
    styles: tuple[str, ...] = STYLES
    seed: int = 42

    def __post_init__(self) -> None:
        checks = [
            (self.limit >= 0, "limit must be >= 0"),
            (2 <= self.min_vars <= self.max_vars <= 26, "need 2 <= min_vars <= max_vars <= 26"),
            (0 <= self.min_eq <= self.max_eq, "need 0 <= min_eq <= max_eq"),
            (0 <= self.min_neq <= self.max_neq, "need 0 <= min_neq <= max_neq"),
            (self.num_choices >= 2, "num_choices must be >= 2"),
            (bool(self.styles) and set(self.styles) <= set(STYLES), f"styles must be a subset of {STYLES}"),
        ]
        if self.target_hop_dist is not None:
            fractions = dict(self.target_hop_dist)
            checks.append((all(isinstance(h, int) and h >= 1 for h in fractions), "hops must be ints >= 1"))
            checks.append((abs(sum(fractions.values()) - 1) < 1e-6, "target_hop_dist must sum to 1"))
        for ok, message in checks:
            if not ok:
                raise ValueError(f"LogicMark Config: {message} ({self})")

    def bucket_sizes(self) -> dict[int, int]:
        """Problems per hop: ``limit * fraction`` by largest remainder (ties to the smaller hop)."""
        assert self.target_hop_dist is not None
        raw = {h: self.limit * f for h, f in sorted(self.target_hop_dist.items())}
        sizes = {h: int(r) for h, r in raw.items()}
        by_remainder = sorted(raw, key=lambda h: (-(raw[h] - sizes[h]), h))
        for h in by_remainder[: self.limit - sum(sizes.values())]:
            sizes[h] += 1
        return sizes


# Equality graphs, one function per style


def _chain(vs: list[str], k: int, rng: random.Random) -> list[tuple[str, str]]:
    return list(zip(vs, vs[1:]))[:k]


def _star(vs: list[str], k: int, rng: random.Random) -> list[tuple[str, str]]:
    return [(vs[0], v) for v in vs[1:]][:k]


def _tree(vs: list[str], k: int, rng: random.Random) -> list[tuple[str, str]]:
    return [(vs[(i - 1) // 2], vs[i]) for i in range(1, len(vs))][:k]  # binary heap layout


def _clusters(vs: list[str], k: int, rng: random.Random) -> list[tuple[str, str]]:
    groups = 2 if len(vs) < 6 else rng.choice((2, 3))
    cuts = sorted(rng.sample(range(2, len(vs) - 1), groups - 1)) if len(vs) >= 2 * groups else [len(vs) // 2]
    edges = []
    for part in (vs[a:b] for a, b in zip([0, *cuts], [*cuts, len(vs)])):
        edges += [(part[rng.randrange(j)], part[j]) for j in range(1, len(part))]  # random tree per group
    rng.shuffle(edges)
    return edges[:k]


def _bipartite(vs: list[str], k: int, rng: random.Random) -> list[tuple[str, str]]:
    half = len(vs) // 2
    edges = list(itertools.product(vs[:half], vs[half:]))
    rng.shuffle(edges)
    return edges[:k]


_SIMPLE_STYLES = {"chain": _chain, "star": _star, "tree": _tree, "clusters": _clusters, "bipartite": _bipartite}


def equality_edges(style: str, variables: Sequence[str], k: int, rng: random.Random) -> list[tuple[str, str]]:
    """Up to ``k`` distinct equality edges over ``variables`` (shuffled) in the topology ``style``."""
    vs = list(variables)
    rng.shuffle(vs)
    if style != "mixed":
        return _SIMPLE_STYLES[style](vs, k, rng)
    first, second = rng.sample(sorted(_SIMPLE_STYLES), 2)  # mixed: half the edges from each of two styles
    edges = _SIMPLE_STYLES[first](vs, (k + 1) // 2, rng) + _SIMPLE_STYLES[second](vs, k, rng)
    return list(dict.fromkeys(tuple(sorted(e)) for e in edges))[:k]  # each edge once


def _sample_premises(config: Config, rng: random.Random) -> tuple[Premises, str] | None:
    variables = list(string.ascii_lowercase[: rng.randint(config.min_vars, config.max_vars)])
    style = rng.choice(config.styles)
    eq_edges = equality_edges(style, variables, rng.randint(config.min_eq, config.max_eq), rng)
    if len(eq_edges) < config.min_eq:
        return None
    equalities = Premises(Statement(u, EQ, v) for u, v in eq_edges)
    candidates = [(u, v) for u, v in itertools.combinations(variables, 2) if equalities.dist_eq(u, v) is None]
    n_neq = min(rng.randint(config.min_neq, config.max_neq), len(candidates))
    if n_neq < config.min_neq:
        return None
    neq_edges = rng.sample(candidates, n_neq)
    statements = [Statement(u, EQ, v) for u, v in eq_edges] + [Statement(u, NEQ, v) for u, v in neq_edges]
    premises = Premises(statements)
    return (premises, style) if premises.consistent() else None


def _attempt(config: Config, op: str, hops: int | None, index: int, rng: random.Random) -> Problem | None:
    """Problem ``index``: an answer of type ``op`` with exactly ``hops`` hops (None: at least
    ``min_answer_hop``) and verified distractors; None when this draw cannot have them."""
    sampled = _sample_premises(config, rng)
    if sampled is None:
        return None
    premises, style = sampled
    pairs = list(itertools.combinations(premises.variables, 2))
    answers = []
    for x, y in pairs:
        depth = premises.hop_depth(Statement(x, op, y))
        if depth is not None and (depth == hops if hops is not None else depth >= config.min_answer_hop):
            answers.append(Statement(x, op, y))
    if not answers:
        return None
    answer = rng.choice(answers)
    flipped = answer.flipped()
    # Other distractors: statements that do not follow, preferring false ones (their negation follows).
    others = [Statement(x, o, y) for x, y in pairs for o in (EQ, NEQ)
              if {x, y} != {answer.left, answer.right} and not premises.entails(Statement(x, o, y))]
    rng.shuffle(others)
    others.sort(key=lambda s: not premises.entails(s.flipped()))
    needed = config.num_choices - 2
    if len(others) < needed or premises.entails(flipped) or not premises.entails(answer):
        return None
    statements = list(premises.statements)
    rng.shuffle(statements)
    options = [answer, flipped, *others[:needed]]
    rng.shuffle(options)
    option_texts = tuple(_oriented(s, rng) for s in options)
    answer_index = options.index(answer)
    return Problem(
        id=f"symbolic_{index:05d}",
        dataset="logicmark",
        facts=tuple(Fact(f"fact{i}", _oriented(s, rng)) for i, s in enumerate(statements, start=1)),
        hypothesis="Then",
        options=option_texts,
        answer_index=answer_index,
        depth=premises.hop_depth(answer),
        meta={"generated": True, "generator": "logicmark", "seed": config.seed, "domain": "Symbolic",
              "style": style, "answer_op": answer.op, "answer": option_texts[answer_index],
              "n_vars": len(premises.variables)},
    )


def _oriented(s: Statement, rng: random.Random) -> str:
    return str(s) if rng.random() < 0.5 else f"{s.right} {s.op} {s.left}"


def generate_logicmark(config: Config = Config(), *, progress: bool | None = None) -> list[Problem]:
    """``config.limit`` LogicMark-style problems, deterministic in ``config.seed``: hop bucket ``h`` gets exactly
    ``config.bucket_sizes()[h]`` problems, half ``=`` and half ``!=`` (a bar from 2,000 problems)."""
    rng = random.Random(config.seed)
    if config.target_hop_dist is not None:
        hops: list[int | None] = [h for h, size in config.bucket_sizes().items() for _ in range(size)]
    else:
        hops = [None] * config.limit
    plan = [(h, EQ if i % 2 == 0 else NEQ) for i, h in enumerate(hops)]
    rng.shuffle(plan)
    problems = []
    show = config.limit >= 2000 if progress is None else progress
    for index, (h, op) in enumerate(tqdm(plan, desc="LogicMark", unit="problem", disable=not show)):
        for _ in range(MAX_ATTEMPTS):
            problem = _attempt(config, op, h, index, rng)
            if problem is not None:
                break
        else:
            raise RuntimeError(f"LogicMark: no {h}-hop '{op}' problem in {MAX_ATTEMPTS} attempts with {config}; "
                               "allow more variables/equalities or a smaller hop")
        problems.append(problem)
    return problems


def to_record(problem: Problem) -> dict:
    """A Problem in the LogicMark card's record format, which ``finelogic.data.loaders`` reads back."""
    if problem.options is None or problem.answer_index is None:
        raise ValueError(f"Problem {problem.id!r} is not multiple-choice")
    return {
        "id": problem.id,
        "domain": problem.meta.get("domain", "Symbolic"),
        "context": "If:\n" + "\n".join(f.text for f in problem.facts) + "\n\n" + problem.hypothesis,
        "options": list(problem.options),
        "answer_index": problem.answer_index,
        "answer": problem.options[problem.answer_index],
        "hop_depth": problem.depth,
    }
