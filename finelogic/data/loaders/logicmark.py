"""LogicMark records (the card's format): ``logicmark/*.json`` or ``logicmark/*.jsonl``."""
from __future__ import annotations

import re
from typing import Any, Mapping

from finelogic.data.loaders.records import Format, Item, bad, numbered_facts, required
from finelogic.data.problem import Problem

LOGICMARK_CONTEXT = re.compile(r"\AIf:\n(?P<premises>.*?)\n\n(?P<stem>Then)\s*\Z", re.S)


def logicmark_problem(record: Mapping[str, Any], *, source: str = "") -> Problem:
    """A LogicMark record (card format) -> a multiple-choice Problem: ``context`` must read
    ``If:\\n<premises, one a line>\\n\\nThen``; the premises become the facts and the closing ``Then`` the
    hypothesis, so the context can be rebuilt exactly."""
    context = required(record, "context")
    match = LOGICMARK_CONTEXT.match(context)
    if not match:
        raise bad("context", "expected 'If:\\n<premises>\\n\\nThen'")
    options = required(record, "options", list)
    if not options or not all(isinstance(o, str) for o in options):
        raise bad("options", "expected a non-empty list of strings")
    answer_index = required(record, "answer_index", int)
    if not 0 <= answer_index < len(options):
        raise bad("answer_index", f"{answer_index} is out of range for {len(options)} options")
    if "answer" in record and record["answer"] != options[answer_index]:
        raise bad("answer", f"{record['answer']!r} != options[{answer_index}] = {options[answer_index]!r}")
    hop_depth = required(record, "hop_depth", int)
    return Problem(
        id=str(required(record, "id", (str, int))),
        dataset="logicmark",
        facts=numbered_facts(line for line in match.group("premises").split("\n") if line.strip()),
        hypothesis=match.group("stem"),
        options=tuple(options),
        answer_index=answer_index,
        depth=hop_depth,
        meta={"source": source, "domain": record.get("domain", "Symbolic")},
    )


def convert(item: Item) -> Problem:
    return logicmark_problem(item.data, source=item.location)


FORMAT = Format(convert, "logicmark/*.json or logicmark/*.jsonl (records in the LogicMark card's format)")
