"""FLD proof notation (``book/data-formats.md``, "Proof notation"), read once for gold proofs and model responses.

>>> parse_proof_steps("fact3 & fact1 -> int1: Max is a yumpus.; int1 & fact4 -> ¬hypothesis;")[1]
ProofStep(premises=('int1', 'fact4'), conclusion='¬hypothesis', text=None)
"""
from __future__ import annotations

import re
from dataclasses import dataclass

HYPOTHESIS = "hypothesis"
NEGATED_HYPOTHESIS = "¬hypothesis"
VOID = "void"

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+\s*[.)])\s+")
_PREMISE = re.compile(r"\[\s*(assump)\s*(\d+)\s*\]|\b(fact|int|assump)\s*(\d+)\b|\b(void)\b", re.I)
# Raw FLD v0.2 records cite facts as ``sentN`` (the loader renames them ``factN``); responses never may.
_RECORD_PREMISE = re.compile(r"\[\s*(assump)\s*(\d+)\s*\]|\b(fact|sent|int|assump)\s*(\d+)\b|\b(void)\b", re.I)
_PREMISE_JOINERS = re.compile(r"&|\band\b|,|\+|∧|\s", re.I)
_CONCLUSION = re.compile(r"^(¬|~|!|not\s+)?\s*(hypothesis|int\s*\d+|assump\s*\d+)\s*(?:[:.]\s*(.*))?$", re.I | re.S)


@dataclass(frozen=True)
class ProofStep:
    """One step of an FLD proof: ``fact3 & int1 -> int2: <text>`` (text None when the step writes none,
    as FLD's final ``-> hypothesis`` step)."""

    premises: tuple[str, ...]
    conclusion: str
    text: str | None = None

    def format(self) -> str:
        head = f"{' & '.join(self.premises)} -> {self.conclusion}"
        return f"{head}: {self.text}" if self.text is not None else head


class ProofNotationError(ValueError):
    """A step that is not FLD proof notation; ``note`` says why, ``premises`` holds the ids read before
    the fault (empty when the premises themselves are at fault)."""

    def __init__(self, note: str, text: str, premises: tuple[str, ...] = ()) -> None:
        self.note = note
        self.text = text
        self.premises = premises
        super().__init__(f"{note}: {text!r}")


def _normalise_id(kind: str, number: str) -> str:
    return f"{kind.lower()}{int(number)}"


def parse_step(text: str, *, sent_ids: bool = False) -> ProofStep:
    """One ``premises -> conclusion[: text]`` step; ``sent_ids`` also reads FLD v0.2's ``sentN`` premise ids.

    Premises are ``factN``, ``intN``, ``assumpN``, ``[assumpN]`` or ``void`` joined by ``&`` (``and``, ``,``,
    ``+``, ``∧``); the conclusion is ``intN``, ``assumpN``, ``hypothesis`` or ``¬hypothesis`` (``~``, ``!``,
    ``not``). Tolerated, so that model responses read too (paper §3.2): letter case, spaces (``int 3``), ``→``,
    ``.`` for the colon, a trailing ``;``, a list bullet. Ids come back normalised (``int3``, ``[assump1]``). A
    :class:`ProofNotationError`'s ``note`` says what is wrong: no arrow, two, premises or a conclusion not ids.
    """
    raw = text.strip()
    body = _BULLET.sub("", raw.replace("→", "->"))
    head, arrow, tail = body.partition("->")
    if not arrow:
        raise ProofNotationError("no '->' in the step", raw)
    before, colon, after = tail.partition(":")
    formula_arrow = colon and "->" not in before and "{" in after  # ``int1: {A}{a} -> {B}{a}`` (symbolic styles)
    if "->" in tail and not formula_arrow:
        raise ProofNotationError("two arrows: steps not separated by ';' or a new line", raw)
    pattern = _RECORD_PREMISE if sent_ids else _PREMISE
    premises = tuple(f"[{_normalise_id(m[1], m[2])}]" if m[1] else _normalise_id(m[3], m[4]) if m[3] else VOID
                     for m in pattern.finditer(head))
    if not premises or _PREMISE_JOINERS.sub("", pattern.sub("", head)):  # anything but ids and joiners
        raise ProofNotationError(f"premises are not ids: {head.strip()!r}", raw)
    m = _CONCLUSION.match(tail.strip().rstrip(";").strip())
    if m is None:
        raise ProofNotationError(f"conclusion is not an id: {tail.strip()!r}", raw, premises)
    negated, name, written = m.groups()
    name = re.sub(r"\s+", "", name.lower())
    if name == HYPOTHESIS:
        conclusion = NEGATED_HYPOTHESIS if negated else HYPOTHESIS
    elif negated:
        raise ProofNotationError(f"negated id {tail.strip()!r}", raw, premises)
    else:
        conclusion = _normalise_id(re.match(r"[a-z]+", name).group(), re.search(r"\d+", name).group())
    written = (written or "").strip().rstrip(";").strip() or None
    return ProofStep(premises, conclusion, written)


def parse_proof_steps(proof: str) -> list[ProofStep]:
    """Split a gold FLD proof (``a & b -> int1: text; int1 -> hypothesis;``) into steps (:func:`parse_step`, its
    errors; ``sentN`` ids read too)."""
    return [parse_step(chunk, sent_ids=True) for chunk in proof.split(";") if chunk.strip()]
