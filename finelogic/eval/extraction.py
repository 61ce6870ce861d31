"""Reading the final answer out of a model's response (overall benchmark accuracy, Section 3.1).

Two rules (:class:`AnswerRule`), both returning ``PROVED`` / ``DISPROVED`` / ``UNKNOWN`` (or None):

``principled`` (the default here): the **last** marker in the response is the answer; a response with
no marker has no answer (None), which counts as wrong and is also counted separately. What counts as
a marker:

* the underscored markers ``__PROVED__``, ``__DISPROVED__``, ``__UNKNOWN__``, ``__YES__``, ``__NO__`` in
  any letter case (``__proved__`` counts);
* the bare words ``PROVED``, ``DISPROVED``, ``UNKNOWN`` in upper case, as whole words;
* on two-label datasets only (``UNKNOWN`` not in ``labels``), the bare words ``YES`` and ``NO`` in upper
  case, as whole words;
* ``YES`` maps to PROVED, ``NO`` to DISPROVED (the paper stored Multi-LogiEval gold as ``__YES__``/``__NO__``).

Lower-case bare words do not count: prose like "int2 cannot be proved" or "it is unknown whether ..."
would otherwise become an answer, and "no" is far too common. Whole words means ``\\b`` boundaries, and
``_`` is a word character, so the ``PROVED`` inside ``DISPROVED`` or inside ``__PROVED__`` is never a
second, bare match. A marker for a label outside ``labels`` (``__UNKNOWN__`` on ProntoQA, whose prompt
offers only two markers) is not an answer and is skipped.

``paper_code_compat``: the authors' released code. It tests ``marker in response`` (case-sensitive
substring) for each marker in the fixed order ``__PROVED__, __DISPROVED__, __UNKNOWN__, __YES__, __NO__,
DISPROVED, PROVED, UNKNOWN, YES, NO`` and takes the first one present, wherever it is in the text;
with none present it answers UNKNOWN (``book/released-code.md``, "Answer scoring"). So an empty response is
"correct" on every UNKNOWN item, a response that mentions ``__PROVED__`` anywhere is PROVED, and
``NO`` matches inside ``NOT`` or ``NONE``. ``labels`` is ignored. This reads a label only; whether the
released code counted it *correct* depends on the item's gold marker, which the three released scorers
below decide.

**The released scorers** (``book/released-code.md``, "Answer scoring"): the authors scored with three
different functions, each reproduced here as a small function of (response, gold label, dataset) that
returns a :class:`ReleasedVerdict`:

* :func:`score_vllm_overall` (``src/eval_vllm_overall.py``; Table 2, open models);
* :func:`score_api` (``src/evaluate_api.py``; Table 2, the GPT-4o and DeepSeek-R1 rows);
* :func:`score_depth` (``src/process_result_by_step.py``; Table 5).

All three compare against the item's gold *marker* as the released files store it
(:func:`released_gold_marker`): ``__YES__``/``__NO__`` on Multi-LogiEval, ``__PROVED__``/``__DISPROVED__``
/``__UNKNOWN__`` elsewhere. That is why bare or underscored YES/NO count as PROVED/DISPROVED only on
Multi-LogiEval: on FLD, FOLIO and ProntoQA a first-found ``NO`` (inside ``NOTE``, ``NONE``, ``KNOWN``)
makes the answer wrong. The functions score any text exactly as the released code would, the empty text
included (the vLLM scorer reads it as UNKNOWN); the accuracy records never hand them an empty response
(:func:`finelogic.eval.accuracy.accuracy_record` counts it as "no output" instead), because an empty
completion is a failed request (a null or empty server reply), not a model's answer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from finelogic.data import datasets
from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN
from finelogic.settings import Choice


class AnswerRule(Choice):
    """How the label is read from a response: ours (the last marker), or the released scorers' rules."""

    PRINCIPLED = "principled"
    PAPER_CODE_COMPAT = "paper_code_compat"


_WORD_LABEL = {"PROVED": PROVED, "DISPROVED": DISPROVED, "UNKNOWN": UNKNOWN, "YES": PROVED, "NO": DISPROVED}

_UNDERSCORED = r"(?i:__(?P<underscored>proved|disproved|unknown|yes|no)__)"
_BARE = r"\b(?P<bare>PROVED|DISPROVED|UNKNOWN)\b"
_BARE_YES_NO = r"\b(?P<yes_no>YES|NO)\b"
_MARKERS_THREE_LABELS = re.compile(f"{_UNDERSCORED}|{_BARE}")
_MARKERS_TWO_LABELS = re.compile(f"{_UNDERSCORED}|{_BARE}|{_BARE_YES_NO}")

#: The released code's marker order; the first marker present anywhere in the response wins.
COMPAT_ORDER = (
    ("__PROVED__", PROVED), ("__DISPROVED__", DISPROVED), ("__UNKNOWN__", UNKNOWN),
    ("__YES__", PROVED), ("__NO__", DISPROVED),
    ("DISPROVED", DISPROVED), ("PROVED", PROVED), ("UNKNOWN", UNKNOWN), ("YES", PROVED), ("NO", DISPROVED),
)


def marker_labels(response: str, labels: Sequence[str] = LABELS) -> list[str]:
    """Every marker of the principled rule in ``response``, in order of appearance, as labels.

    Markers of labels outside ``labels`` are left out (see the module docstring for what counts).
    """
    pattern = _MARKERS_THREE_LABELS if UNKNOWN in labels else _MARKERS_TWO_LABELS
    found = (_WORD_LABEL[next(g for g in m.groups() if g).upper()] for m in pattern.finditer(response))
    return [label for label in found if label in labels]


def extract_answer(response: str | None, rule: AnswerRule | str = AnswerRule.PRINCIPLED,
                   labels: Sequence[str] = LABELS) -> str | None:
    """The label a response concludes with, or None when the principled rule finds no marker.

    Args:
        response: the model's completion (None is read as the empty string).
        rule: ``"principled"`` (last marker; None without one) or ``"paper_code_compat"`` (the
            released code's first marker in a fixed order; UNKNOWN without one). Details in the module
            docstring.
        labels: the labels the problem's prompt offered (:func:`finelogic.prompts.labels_for`); the
            principled rule ignores markers of other labels and reads bare YES/NO only when
            UNKNOWN is not among them.
    """
    response = response or ""
    if AnswerRule.of(rule, "answer rule") is AnswerRule.PRINCIPLED:
        found = marker_labels(response, labels)
        return found[-1] if found else None
    return next((label for marker, label in COMPAT_ORDER if marker in response), UNKNOWN)


# ------------------------------------------------------------------------------------ released scorers


#: The released vLLM scorer's marker order: the first one present (plain substring) wins.
VLLM_OVERALL_ORDER = ("__PROVED__", "__DISPROVED__", "__UNKNOWN__", "__YES__", "__NO__",
                      "DISPROVED", "PROVED", "UNKNOWN", "YES", "NO")
#: The released API scorer's order: the underscored markers only.
API_ORDER = VLLM_OVERALL_ORDER[:5]

_YES_NO = {PROVED: "YES", DISPROVED: "NO"}
_AS_LABEL = {"YES": PROVED, "NO": DISPROVED}


@dataclass(frozen=True)
class ReleasedVerdict:
    """How a released scorer read one response.

    Attributes:
        prediction: the marker it found, without underscores: a label (``PROVED``, ``DISPROVED``,
            ``UNKNOWN``), or ``YES``/``NO`` on datasets whose gold is not yes/no (never correct there);
            on Multi-LogiEval YES/NO read as PROVED/DISPROVED. None when it found nothing and has no
            default (API scorer), or when it reads no single answer (depth scorer).
        correct: the released code's verdict.
    """

    prediction: str | None
    correct: bool


def released_gold_marker(label: str, dataset: str) -> str:
    """The item's gold as the released files store it: ``__YES__``/``__NO__`` for PROVED/DISPROVED where the
    dataset's record says ``yes_no_gold`` (Multi-LogiEval), else the label's own marker (``__PROVED__``, ``__DISPROVED__``, ``__UNKNOWN__``).

    The FLD file is not in the public snapshot; FLD's own ``proof_label`` is underscored, which is assumed.
    """
    word = _YES_NO.get(label, label) if _yes_no_gold(dataset) else label
    return f"__{word}__"


def _released_verdict(found: str | None, label: str, dataset: str) -> ReleasedVerdict:
    """The comparison both Table 2 scorers make: the found marker equals the gold marker, or the gold
    is ``__YES__`` (``__NO__``) and the found marker is ``__PROVED__`` (``__DISPROVED__``)."""
    expected = released_gold_marker(label, dataset).strip("_")
    correct = found == expected or (expected, found) in {("YES", PROVED), ("NO", DISPROVED)}
    prediction = _AS_LABEL.get(found, found) if _yes_no_gold(dataset) else found
    return ReleasedVerdict(prediction, correct)


def _yes_no_gold(name: str) -> bool:
    """Whether the released files store dataset ``name``'s gold as ``__YES__``/``__NO__`` (its record says)."""
    return any(d.yes_no_gold for d in datasets.DATASETS if d.name == name)


def _first_present(response: str, order: Sequence[str]) -> str | None:
    found = next((marker for marker in order if marker in response), None)
    return found.strip("_") if found else None


def score_vllm_overall(response: str | None, label: str, dataset: str) -> ReleasedVerdict:
    """The released vLLM scorer (``src/eval_vllm_overall.py``, Table 2 rows of open models).

    The first marker of :data:`VLLM_OVERALL_ORDER` present anywhere in the text (case-sensitive
    substring: ``NOTE``, ``NONE``, ``KNOWN`` contain ``NO``, ``YESTERDAY`` contains ``YES``, ``DISPROVED``
    contains ``PROVED`` but is tested first), UNKNOWN when none is; correct as :func:`released_gold_marker`
    decides (YES/NO count only on Multi-LogiEval). An empty text is UNKNOWN, as in the released code
    (the records never score one: see the module docstring).

    Args:
        response: the completion (None reads as empty).
        label: the item's gold label (``PROVED``, ``DISPROVED``, ``UNKNOWN``).
        dataset: ``fld``, ``folio``, ``multi_logieval`` or ``prontoqa``.
    """
    return _released_verdict(_first_present(response or "", VLLM_OVERALL_ORDER) or UNKNOWN, label, dataset)


def score_api(response: str | None, label: str, dataset: str) -> ReleasedVerdict:
    """The released API scorer (``src/evaluate_api.py``, Table 2 rows of GPT-4o and DeepSeek-R1).

    Underscored markers only (:data:`API_ORDER`), the first present wins, and **no default**: a text
    without one is wrong on every item, UNKNOWN items included. Arguments as :func:`score_vllm_overall`.
    (The released function fails on a null response; it is read as empty here.)
    """
    found = _first_present(response or "", API_ORDER)
    if found is None:
        return ReleasedVerdict(None, False)
    return _released_verdict(found, label, dataset)


def score_depth(response: str | None, label: str, dataset: str) -> ReleasedVerdict:
    """The released depth scorer (``src/process_result_by_step.py``, Table 5).

    Correct when the gold marker (:func:`released_gold_marker`) appears **anywhere** in the text, so a
    response holding both ``__PROVED__`` and ``__DISPROVED__`` is correct on either kind of item; it reads
    no single answer (``prediction`` is None). Arguments as :func:`score_vllm_overall`.
    """
    return ReleasedVerdict(None, released_gold_marker(label, dataset) in (response or ""))


#: Scorer name -> function.
RELEASED_SCORERS = {"vllm_overall": score_vllm_overall, "api": score_api, "depth": score_depth}
