"""Reading the final answer out of a model's response (overall benchmark accuracy, Section 3.1): our rule and the
released code's (:class:`AnswerRule`), and the released code's three scorers
(``book/released-code.md``, "Answer scoring"), each a function of (response, gold label, dataset) returning a
:class:`ReleasedVerdict`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from finelogic.data import datasets
from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN
from finelogic.typed_config import Choice


class AnswerRule(Choice):
    """How the label is read from a response: ours (the last marker), or the released scorers' rules."""

    PRINCIPLED = "principled"
    RELEASED = "released"


_WORD_LABEL = {"PROVED": PROVED, "DISPROVED": DISPROVED, "UNKNOWN": UNKNOWN, "YES": PROVED, "NO": DISPROVED}

_UNDERSCORED = r"(?i:__(?P<underscored>proved|disproved|unknown|yes|no)__)"
_BARE = r"\b(?P<bare>PROVED|DISPROVED|UNKNOWN)\b"
_BARE_YES_NO = r"\b(?P<yes_no>YES|NO)\b"
_MARKERS_THREE_LABELS = re.compile(f"{_UNDERSCORED}|{_BARE}")
_MARKERS_TWO_LABELS = re.compile(f"{_UNDERSCORED}|{_BARE}|{_BARE_YES_NO}")

#: The released code's marker order: the first one present (case-sensitive substring) wins.
VLLM_OVERALL_ORDER = ("__PROVED__", "__DISPROVED__", "__UNKNOWN__", "__YES__", "__NO__",
                      "DISPROVED", "PROVED", "UNKNOWN", "YES", "NO")
#: The released API scorer's order: the underscored markers only.
API_ORDER = VLLM_OVERALL_ORDER[:5]


def marker_labels(response: str, labels: Sequence[str] = LABELS) -> list[str]:
    """Every marker of the principled rule in ``response``, in order of appearance, as labels (YES: PROVED, NO:
    DISPROVED). Markers: ``__PROVED__``, ``__DISPROVED__``, ``__UNKNOWN__``, ``__YES__``, ``__NO__`` in any case;
    the bare words PROVED, DISPROVED, UNKNOWN in upper case as whole words; on two-label datasets (no UNKNOWN in
    ``labels``) also bare YES and NO. Lower-case bare words do not count ("int2 cannot be proved"; "no" is far too
    common), nor do markers of labels outside ``labels`` (``__UNKNOWN__`` on ProntoQA).
    """
    pattern = _MARKERS_THREE_LABELS if UNKNOWN in labels else _MARKERS_TWO_LABELS
    found = (_WORD_LABEL[next(g for g in m.groups() if g).upper()] for m in pattern.finditer(response))
    return [label for label in found if label in labels]


def extract_answer(response: str | None, rule: AnswerRule | str = AnswerRule.PRINCIPLED,
                   labels: Sequence[str] = LABELS) -> str | None:
    """The label a response concludes with. ``principled``: the last of :func:`marker_labels` (``labels``: those
    the prompt offered), None without one. ``released``: the first of :data:`VLLM_OVERALL_ORDER` present
    anywhere, UNKNOWN without one (so ``NO`` matches inside ``NOT``); ``labels`` ignored.
    """
    response = response or ""
    if AnswerRule.of(rule, "answer rule") is AnswerRule.PRINCIPLED:
        found = marker_labels(response, labels)
        return found[-1] if found else None
    found = _first_present(response, VLLM_OVERALL_ORDER)
    return UNKNOWN if found is None else _WORD_LABEL[found]


# ------------------------------------------------------------------------------------ released scorers


_YES_NO = {PROVED: "YES", DISPROVED: "NO"}


@dataclass(frozen=True)
class ReleasedVerdict:
    """How a released scorer read one response: ``prediction`` the marker it found without underscores (YES/NO
    read as PROVED/DISPROVED on Multi-LogiEval only), None when it found nothing and has no default (API) or reads
    no single answer (depth); ``correct`` the released code's verdict."""

    prediction: str | None
    correct: bool


def released_gold_marker(label: str, dataset: str) -> str:
    """The item's gold as the released files store it: ``__YES__``/``__NO__`` where the dataset's record says
    ``yes_no_gold`` (Multi-LogiEval), else the label's own marker. So a first-found ``NO`` (inside ``NOTE``) is
    wrong on FLD, FOLIO and ProntoQA. (The FLD file is not public; FLD's underscored ``proof_label`` is assumed.)
    """
    word = _YES_NO.get(label, label) if _yes_no_gold(dataset) else label
    return f"__{word}__"


def _released_verdict(found: str | None, label: str, dataset: str) -> ReleasedVerdict:
    """The comparison both Table 2 scorers make: the found marker equals the gold marker, or the gold
    is ``__YES__`` (``__NO__``) and the found marker is ``__PROVED__`` (``__DISPROVED__``)."""
    expected = released_gold_marker(label, dataset).strip("_")
    correct = found == expected or (expected, found) in {("YES", PROVED), ("NO", DISPROVED)}
    prediction = _WORD_LABEL.get(found, found) if _yes_no_gold(dataset) else found
    return ReleasedVerdict(prediction, correct)


def _yes_no_gold(name: str) -> bool:
    """Whether the released files store dataset ``name``'s gold as ``__YES__``/``__NO__`` (its record says)."""
    return any(d.yes_no_gold for d in datasets.DATASETS if d.name == name)


def _first_present(response: str, order: Sequence[str]) -> str | None:
    found = next((marker for marker in order if marker in response), None)
    return found.strip("_") if found else None


def score_vllm_overall(response: str | None, label: str, dataset: str) -> ReleasedVerdict:
    """The released vLLM scorer (``src/eval_vllm_overall.py``, Table 2 rows of open models): the first marker of
    :data:`VLLM_OVERALL_ORDER` present anywhere, UNKNOWN when none (an empty text too; the accuracy records never
    hand it one: an empty completion is a failed request), against :func:`released_gold_marker`."""
    return _released_verdict(_first_present(response or "", VLLM_OVERALL_ORDER) or UNKNOWN, label, dataset)


def score_api(response: str | None, label: str, dataset: str) -> ReleasedVerdict:
    """The released API scorer (``src/evaluate_api.py``, Table 2 rows of GPT-4o and DeepSeek-R1): the first of
    :data:`API_ORDER` present, and **no default**: a text without one is wrong on every item, UNKNOWN included."""
    found = _first_present(response or "", API_ORDER)
    if found is None:
        return ReleasedVerdict(None, False)
    return _released_verdict(found, label, dataset)


def score_depth(response: str | None, label: str, dataset: str) -> ReleasedVerdict:
    """The released depth scorer (``src/process_result_by_step.py``, Table 5): correct when the gold marker appears
    **anywhere**, so a response holding both ``__PROVED__`` and ``__DISPROVED__`` is correct on either kind."""
    return ReleasedVerdict(None, released_gold_marker(label, dataset) in (response or ""))

