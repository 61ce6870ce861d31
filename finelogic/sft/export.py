"""The training sets for the released engine: LLaMA-Factory's dataset format and training YAML.

The paper trained with LLaMA-Factory (``logical.yaml``, :mod:`finelogic.sft.recipes`). :func:`export_llamafactory`
writes a folder LLaMA-Factory reads as its ``dataset_dir``: ``finelogic_<style>.json`` (the style's examples in
the OpenAI-style variant of its ``sharegpt`` format: ``messages`` of ``system``, ``user`` and ``assistant``
turns, our ``id`` kept), the entry in ``dataset_info.json`` (merged, other entries kept) and the released recipe
per base model, ``train_<style>_llama3.yaml`` and ``train_<style>_qwen.yaml``. Train with ``llamafactory-cli
train DIR/train_NL_llama3.yaml`` from a LLaMA-Factory checkout (its ``examples/deepspeed/ds_z3_config.json`` is
the ZeRO-3 file the recipe names), on 4 GPUs.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from finelogic.files import write_text_atomic
from finelogic.sft.recipes import BASE_MODELS, llamafactory_config

#: The ``dataset_info.json`` entry's fixed part (the file name is added per style); it names the tags, since
#: the format's defaults are ShareGPT's (``from``/``value``).
DATASET_ENTRY = {
    "formatting": "sharegpt",
    "columns": {"messages": "messages"},
    "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant",
             "system_tag": "system"},
}


def dataset_name(style: str) -> str:
    """``finelogic_nl``, ``finelogic_symb_struct``, ``finelogic_logipt``: the registered name of a style's set."""
    return "finelogic_" + style.lower().replace("-", "_")


def llamafactory_records(examples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``{"id", "messages"}`` per example, turns reduced to ``role`` and ``content``; ValueError (naming the id)
    unless the turns are (system,) user, assistant, ... ending with the assistant (LLaMA-Factory drops others)."""
    out = []
    for example in examples:
        turns = [{"role": m["role"], "content": m["content"]} for m in example["messages"]]
        roles = [t["role"] for t in turns]
        body = roles[1:] if roles and roles[0] == "system" else roles
        ok = (len(body) >= 2 and len(body) % 2 == 0 and body[-1] == "assistant"
              and all(r == ("user" if i % 2 == 0 else "assistant") for i, r in enumerate(body)))
        if not ok:
            raise ValueError(f"example {example.get('id', '?')!r}: turns {roles} are not "
                             "(system,) user, assistant, ... ending with the assistant")
        out.append({"id": str(example.get("id", "")), "messages": turns})
    return out


def export_llamafactory(examples: Sequence[Mapping[str, Any]], style: str, out: str | os.PathLike, *,
                        output_root: str = "saves/finelogic") -> dict[str, Path]:
    """Write one ``style``'s ``examples``, its ``dataset_info.json`` entry and a YAML per base model into ``out``
    (created), the YAMLs saving to ``<output_root>/<base>/<style>``; the paths, keyed ``data``, ``dataset_info``,
    ``llama3`` and ``qwen``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    name = dataset_name(style)
    records = llamafactory_records(examples)
    data = folder / f"{name}.json"
    write_text_atomic(data, json.dumps(records, ensure_ascii=False, indent=1))
    info_path = folder / "dataset_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
    info[name] = {"file_name": data.name, **DATASET_ENTRY}
    write_text_atomic(info_path, json.dumps(info, ensure_ascii=False, indent=2))
    written = {"data": data, "dataset_info": info_path}
    for base in BASE_MODELS:
        config = llamafactory_config(base, name, f"{output_root}/{base}/{name}", dataset_dir=str(folder))
        path = folder / f"train_{style.replace('/', '_')}_{base}.yaml"
        write_text_atomic(path, f"# FineLogic {style}: the released recipe (logical.yaml) for {BASE_MODELS[base].name}.\n"
                          f"# Run from a LLaMA-Factory checkout on 4 GPUs: llamafactory-cli train {path}\n"
                          + yaml.safe_dump(config, sort_keys=False))
        written[base] = path
    return written

