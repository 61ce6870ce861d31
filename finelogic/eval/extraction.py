"""Reading the final answer out of a model's response (overall benchmark accuracy, Section 3.1).

Two named policies, both returning ``PROVED`` / ``DISPROVED`` / ``UNKNOWN`` (or None):

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
with none present it answers UNKNOWN (``reference/official_code.md``). So an empty response is
"correct" on every UNKNOWN item, a response that mentions ``__PROVED__`` anywhere is PROVED, and
``NO`` matches inside ``NOT`` or ``NONE``. ``labels`` is ignored, as in the released code.
"""
from __future__ import annotations

import re
from typing import Sequence

from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN

POLICIES = ("principled", "paper_code_compat")

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
    """Every marker of the principled policy in ``response``, in order of appearance, as labels.

    Markers of labels outside ``labels`` are left out (see the module docstring for what counts).
    """
    pattern = _MARKERS_THREE_LABELS if UNKNOWN in labels else _MARKERS_TWO_LABELS
    found = (_WORD_LABEL[next(g for g in m.groups() if g).upper()] for m in pattern.finditer(response))
    return [label for label in found if label in labels]


def extract_answer(response: str | None, policy: str = "principled",
                   labels: Sequence[str] = LABELS) -> str | None:
    """The label a response concludes with, or None when the principled policy finds no marker.

    Args:
        response: the model's completion (None is read as the empty string).
        policy: ``"principled"`` (last marker; None without one) or ``"paper_code_compat"`` (the
            released code's first marker in a fixed order; UNKNOWN without one). Details in the module
            docstring.
        labels: the labels the problem's prompt offered (:func:`finelogic.prompts.labels_for`); the
            principled policy ignores markers of other labels and reads bare YES/NO only when
            UNKNOWN is not among them.
    """
    response = response or ""
    if policy == "principled":
        found = marker_labels(response, labels)
        return found[-1] if found else None
    if policy == "paper_code_compat":
        return next((label for marker, label in COMPAT_ORDER if marker in response), UNKNOWN)
    raise ValueError(f"unknown answer policy {policy!r}; choose one of {', '.join(POLICIES)}")
