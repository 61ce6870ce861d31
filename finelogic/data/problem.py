"""The one record every benchmark loader and generator returns."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

PROVED = "PROVED"
DISPROVED = "DISPROVED"
UNKNOWN = "UNKNOWN"
LABELS = (PROVED, DISPROVED, UNKNOWN)


@dataclass(frozen=True)
class Fact:
    """One numbered premise, e.g. ``Fact("fact3", "the dog is red")``."""

    id: str
    text: str


@dataclass(frozen=True)
class Problem:
    """A reasoning problem in one schema for FLD, FOLIO, Multi-LogiEval, ProntoQA and LogicMark (generated items
    use the same ``dataset`` names, with ``meta["generated"]`` True).

    Multiple-choice items (LogicMark) carry ``options`` and ``answer_index`` instead of a ``label``. ``depth``:
    proof steps or hops, None when unknown; ``proof``: the gold proof in FLD notation
    (``fact1 & fact2 -> int1: ...; int1 -> hypothesis;``); ``formulas``: id -> FLD formula for the facts,
    ``hypothesis`` and ``intN`` where known; ``meta``: provenance and the original fields.
    """

    id: str
    dataset: str
    facts: tuple[Fact, ...]
    hypothesis: str
    label: str | None = None
    options: tuple[str, ...] | None = None
    answer_index: int | None = None
    depth: int | None = None
    proof: str | None = None
    formulas: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.label is not None and self.label not in LABELS:
            raise ValueError(f"Problem {self.id!r}: label must be one of {LABELS}, got {self.label!r}")
        if self.label is None and self.answer_index is None:
            raise ValueError(f"Problem {self.id!r}: needs either a label or options + answer_index")
        object.__setattr__(self, "facts", tuple(self.facts))  # equal whatever container the caller used
        if self.options is not None:
            object.__setattr__(self, "options", tuple(self.options))

    __hash__ = None  # mutable mappings inside: compare by value, never hash

    @property
    def facts_text(self) -> str:
        """Facts as the paper's prompts show them: ``fact1: ... fact2: ...`` on one line each."""
        return "\n".join(f"{f.id}: {f.text}" for f in self.facts)

    def fact(self, fact_id: str) -> Fact:
        for f in self.facts:
            if f.id == fact_id:
                return f
        raise KeyError(f"Problem {self.id!r} has no fact {fact_id!r}")

    def key_fields(self) -> list[Any]:
        """Every field's value, facts as ``[id, text]`` pairs: a cheap, JSON-able identity for memo keys."""
        return [[[f.id, f.text] for f in self.facts] if name == "facts" else getattr(self, name) for name in _FIELDS]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["facts"] = [[f.id, f.text] for f in self.facts]
        d["options"] = list(self.options) if self.options is not None else None
        d["formulas"] = dict(self.formulas)
        d["meta"] = dict(self.meta)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Problem":
        d = dict(d)
        d["facts"] = tuple(Fact(i, t) for i, t in d["facts"])
        return cls(**d)  # options become a tuple in __post_init__

    def to_json(self) -> str:
        """Canonical JSON (sorted keys): equal problems give byte-identical lines."""
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)


_FIELDS = tuple(f.name for f in fields(Problem))
