"""Showing model outputs in pages: always as escaped text, never as markup a browser would run."""
from __future__ import annotations

import html
import re
from typing import Mapping

from IPython.display import HTML


#: Tokenizer control tokens (``<|im_end|>``, ``<|im_start|>``, ``<|endoftext|>``, ``<|eot_id|>``, ...).
CONTROL_TOKEN = re.compile(r"<\|[A-Za-z0-9_]+\|>")


def without_control_tokens(text: str) -> str:
    """``text`` without tokenizer control tokens: a page shows what the model wrote, not its chat markup."""
    return CONTROL_TOKEN.sub("", text)


def model_output(text: str, *, title: str | None = None) -> HTML:
    """A model's response as preformatted, HTML-escaped text (a ``<script>`` in it stays visible text)."""
    heading = f"<div><strong>{html.escape(title)}</strong></div>" if title else ""
    body = html.escape(without_control_tokens(text) if text else "(empty response)")
    return HTML(f'{heading}<pre style="white-space: pre-wrap; max-height: 24em; overflow-y: auto">{body}</pre>')


def side_by_side(texts: Mapping[str, str]) -> HTML:
    """Several texts in columns (e.g. one problem under four supervision styles), each escaped."""
    columns = "".join(
        f'<div style="flex: 1 1 0; min-width: 14em"><div><strong>{html.escape(title)}</strong></div>'
        f'<pre style="white-space: pre-wrap; font-size: 0.8em">{html.escape(without_control_tokens(text or "") or "(empty)")}</pre></div>'
        for title, text in texts.items())
    return HTML(f'<div style="display: flex; gap: 0.8em; flex-wrap: wrap">{columns}</div>')
