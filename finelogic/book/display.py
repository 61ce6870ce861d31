"""Showing model outputs in pages: always as escaped text, never as markup a browser would run."""
from __future__ import annotations

import html

from IPython.display import HTML


def model_output(text: str, *, title: str | None = None) -> HTML:
    """A model's response as preformatted, HTML-escaped text (a ``<script>`` in it stays visible text)."""
    heading = f"<div><strong>{html.escape(title)}</strong></div>" if title else ""
    body = html.escape(text if text else "(empty response)")
    return HTML(f'{heading}<pre style="white-space: pre-wrap; max-height: 24em; overflow-y: auto">{body}</pre>')
