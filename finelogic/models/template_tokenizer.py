"""A saved fast tokenizer read without transformers (and torch): chat templates and token counts for cached
reruns. ``tokenizer.json`` is read with ``tokenizers`` and the chat template rendered with jinja2 as
transformers renders it; a folder this cannot read exactly gives None and the caller uses ``AutoTokenizer``.
"""
from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping, Sequence

#: transformers' special-token attributes, in the order its ``special_tokens_map`` lists them.
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


class TemplateTokenizer:
    """A fast tokenizer's ``tokenizer.json`` and chat template, read without transformers."""

    def __init__(self, folder: Path, backend: Any, chat_template: str, special: Mapping[str, Any]) -> None:
        self.folder = folder
        self.chat_template = chat_template
        self.special_tokens_map = dict(special)
        self._backend = backend
        self._template: Any = None

    def __repr__(self) -> str:
        return f"TemplateTokenizer({str(self.folder)!r})"

    def __call__(self, text: str, *, add_special_tokens: bool = True) -> dict[str, list[int]]:
        """``{"input_ids": [...]}`` of ``text``; only with ``add_special_tokens=False`` (what transformers adds
        around a text depends on its tokenizer class)."""
        if add_special_tokens:
            raise ValueError(f"{self!r} counts a text's own tokens only: call it with add_special_tokens=False, "
                             "or load the tokenizer with transformers")
        return {"input_ids": self._backend.encode(text, add_special_tokens=False).ids}

    def apply_chat_template(self, conversation: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool = False,
                            tokenize: bool = True) -> str | list[int]:
        """The conversation rendered by the chat template (encoded without added special tokens if ``tokenize``)."""
        if self._template is None:
            self._template = _compile(self.chat_template)
        text = self._template.render(messages=list(conversation), tools=None, documents=None,
                                     add_generation_prompt=add_generation_prompt, **self.special_tokens_map)
        return self(text, add_special_tokens=False)["input_ids"] if tokenize else text


def read_template_tokenizer(folder: str | Path) -> TemplateTokenizer | None:
    """The tokenizer saved in ``folder``, or None when it is not one this module reads exactly."""
    folder = Path(folder)
    config_file, tokenizer_file = folder / "tokenizer_config.json", folder / "tokenizer.json"
    if not (config_file.is_file() and tokenizer_file.is_file()):
        return None
    config = json.loads(config_file.read_text(encoding="utf-8"))
    template_file = folder / "chat_template.jinja"  # where transformers >= 4.50 saves it
    template = template_file.read_text(encoding="utf-8") if template_file.is_file() else config.get("chat_template")
    if template is None:  # a base model: its plain-text prompt is encoded with the special tokens transformers adds
        return None
    if not isinstance(template, str) or re.search(r"\{%-?\s*generation\s*-?%\}", template):
        return None  # several named templates (transformers picks one), or its generation-tracking tag
    special = _special_tokens(folder, config)
    if special is None:
        return None
    from tokenizers import Tokenizer

    return TemplateTokenizer(folder, Tokenizer.from_file(str(tokenizer_file)), template, special)


def _special_tokens(folder: Path, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """transformers' ``special_tokens_map`` (the template's variables), or None for an entry of unknown shape."""
    path = folder / "special_tokens_map.json"
    saved = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    special: dict[str, Any] = {}
    for name in SPECIAL_TOKENS:
        value = saved.get(name, config.get(name))
        if isinstance(value, Mapping):
            value = value.get("content")
        if value is None:
            continue
        if not isinstance(value, str):
            return None
        special[name] = value
    extra = saved.get("additional_special_tokens", config.get("additional_special_tokens"))
    if extra:
        tokens = [t.get("content") if isinstance(t, Mapping) else t for t in extra]
        if not all(isinstance(t, str) for t in tokens):
            return None
        special["additional_special_tokens"] = tokens
    return special


def _compile(template: str) -> Any:
    """The chat template compiled as transformers compiles it (without ``{% generation %}`` blocks)."""
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    environment.filters["tojson"] = tojson
    environment.globals["raise_exception"] = raise_exception
    environment.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return environment.from_string(template)
