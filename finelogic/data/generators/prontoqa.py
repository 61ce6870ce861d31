"""ProntoQA-style problems (``book/data-formats.md``, "ProntoQA"): a fictional ontology chain, one distractor
rule on the negated property, a gold chain proof in FLD notation, and every fact, ``intN`` and the
hypothesis in FLD formal notation (``meta["vocabulary"]`` maps symbols back to words) for a symbolic judge.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from finelogic.data.problem import DISPROVED, PROVED, Fact, Problem

CONCEPTS = ("wumpus", "yumpus", "zumpus", "dumpus", "rompus", "numpus", "tumpus", "vumpus", "impus", "jompus")
ENTITIES = ("Fae", "Rex", "Sally", "Max", "Alex", "Sam", "Polly", "Stella", "Wren")
PROPERTY_FAMILIES = {
    "colour": ("red", "blue", "brown", "orange", "yellow"),
    "size": ("small", "large"),
    "material": ("wooden", "metallic"),
    "temperament": ("shy", "aggressive", "kind", "mean", "nervous", "happy", "feisty"),
    "taste": ("sour", "sweet", "bitter", "spicy", "fruity"),
    "temperature": ("hot", "cold", "temperate"),
    "opacity": ("opaque", "transparent"),
    "smell": ("earthy", "floral"),
}
HOPS = (1, 2, 3, 4, 5)
_SUBTYPE = ("Every {x} is {a_y}.", "Each {x} is {a_y}.", "{Xs} are {ys}.")
_PROPERTY = ("Every {x} is {neg}{p}.", "Each {x} is {neg}{p}.", "{Xs} are {neg}{p}.")
_SYMBOLS = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _plural(concept: str) -> str:
    return concept + "es"  # every concept ends in "-us": wumpus -> wumpuses


def _a(concept: str) -> str:
    return ("an " if concept[0] in "aeiou" else "a ") + concept


def chain_proof(start: str, rules: Sequence[str], derived: Sequence[str], *, negated: bool) -> str:
    """A linear modus-ponens chain in FLD proof notation from the fact ``start`` by ``rules``, one a hop, with
    ``derived`` the texts of the intermediate conclusions; the last concludes (``¬`` when ``negated``)
    ``hypothesis``: ``fact3 & fact1 -> int1: Max is a yumpus.; int1 & fact4 -> hypothesis;``."""
    if len(derived) != len(rules) - 1:
        raise ValueError(f"need {len(rules) - 1} intermediate conclusions for {len(rules)} rules, got {len(derived)}")
    steps, previous = [], start
    for k, (rule, text) in enumerate(zip(rules, derived), start=1):
        steps.append(f"{previous} & {rule} -> int{k}: {text}")
        previous = f"int{k}"
    steps.append(f"{previous} & {rules[-1]} -> {'¬' if negated else ''}hypothesis")
    return "; ".join(steps) + ";"


@dataclass(frozen=True)
class _Sentence:
    text: str
    formula: str


def _problem(index: int, hops: int, label: str, seed: int, rng: random.Random) -> Problem:
    """One problem of ``hops`` hops; before shuffling its facts read::

        Max is a wumpus.                       {A}{a}                  entity fact
        Every wumpus is a yumpus.              (x): {A}x -> {B}x       hops - 1 chain rules
        Yumpuses are not sour.                 (x): {B}x -> ¬{C}x      the property rule (last hop)
        Zumpuses are sour.                     (x): {D}x -> {C}x       distractor: the negated property
        Wumpuses are small.                    (x): {A}x -> {E}x       decorations (other property families)
    """
    entity = rng.choice(ENTITIES)
    concepts = rng.sample(CONCEPTS, hops + 1)
    chain, distractor = concepts[:hops], concepts[hops]
    families = rng.sample(sorted(PROPERTY_FAMILIES), hops)
    target = rng.choice(PROPERTY_FAMILIES[families[0]])
    decorations = [rng.choice(PROPERTY_FAMILIES[f]) for f in families[1:]]

    symbols: dict[str, str] = {}

    def sym(word: str) -> str:
        return symbols.setdefault(word, "{" + _SYMBOLS[len(symbols)] + "}")

    def subtype(x: str, y: str) -> _Sentence:
        text = rng.choice(_SUBTYPE).format(x=x, a_y=_a(y), Xs=_plural(x).capitalize(), ys=_plural(y))
        return _Sentence(text, f"(x): {sym(x)}x -> {sym(y)}x")

    def has_property(x: str, prop: str, negative: bool) -> _Sentence:
        text = rng.choice(_PROPERTY).format(x=x, Xs=_plural(x).capitalize(), p=prop,
                                            neg="not " if negative else "")
        return _Sentence(text, f"(x): {sym(x)}x -> {'¬' if negative else ''}{sym(prop)}x")

    hypothesis_negated = rng.random() < 0.5
    rule_negated = hypothesis_negated if label == PROVED else not hypothesis_negated
    start = _Sentence(f"{entity} is {_a(chain[0])}.", f"{sym(chain[0])}{{a}}")
    links = [subtype(x, y) for x, y in zip(chain, chain[1:])]
    property_rule = has_property(chain[-1], target, rule_negated)
    distractor_rule = has_property(distractor, target, not rule_negated)
    decoration_rules = [has_property(c, p, rng.random() < 0.5) for c, p in zip(chain, decorations)]

    sentences = [start, *links, property_rule, distractor_rule, *decoration_rules]
    order = list(range(len(sentences)))
    rng.shuffle(order)
    fact_id = {original: f"fact{position}" for position, original in enumerate(order, start=1)}
    facts = tuple(Fact(fact_id[i], sentences[i].text) for i in order)
    formulas = {fact_id[i]: sentences[i].formula for i in order}

    rule_ids = [fact_id[1 + k] for k in range(len(links))] + [fact_id[1 + len(links)]]
    derived = [f"{entity} is {_a(c)}." for c in chain[1:]]
    for k, c in enumerate(chain[1:], start=1):
        formulas[f"int{k}"] = f"{sym(c)}{{a}}"
    formulas["hypothesis"] = f"{'¬' if hypothesis_negated else ''}{sym(target)}{{a}}"
    vocabulary = {symbol: word for word, symbol in symbols.items()}
    vocabulary["{a}"] = entity
    return Problem(
        id=f"prontoqa-gen-{seed}-{index:05d}",
        dataset="prontoqa",
        facts=facts,
        hypothesis=f"{entity} is {'not ' if hypothesis_negated else ''}{target}.",
        label=label,
        depth=hops,
        proof=chain_proof(fact_id[0], rule_ids, derived, negated=label == DISPROVED),
        formulas=formulas,
        meta={"generated": True, "generator": "prontoqa", "seed": seed, "vocabulary": vocabulary,
              "distractor_fact": fact_id[1 + len(links) + 1]},
    )


def generate_prontoqa(n: int, seed: int = 0, hops: Sequence[int] = HOPS) -> list[Problem]:
    """``n`` ProntoQA-style problems, deterministic in ``seed``: hop counts (``depth``) cycle through ``hops``;
    ``n // 2`` PROVED and the rest DISPROVED, in a seeded order."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    most = min(len(CONCEPTS) - 1, len(PROPERTY_FAMILIES))  # h chain concepts + a distractor; h families
    if not hops or any(not 1 <= h <= most for h in hops):
        raise ValueError(f"hops must be in 1..{most}, got {tuple(hops)}")
    rng = random.Random(seed)
    labels = [PROVED] * (n // 2) + [DISPROVED] * (n - n // 2)
    rng.shuffle(labels)
    return [_problem(i, hops[i % len(hops)], labels[i], seed, rng) for i in range(n)]
