"""The training sets for the released engine: LLaMA-Factory's dataset format and training YAML.

The paper trained with LLaMA-Factory (``logical.yaml``, :mod:`finelogic.sft.recipes`). For those who want
that engine as it is, :func:`export_llamafactory` writes a folder LLaMA-Factory reads as its
``dataset_dir``::

    DIR/finelogic_<style>.json        the style's examples, a JSON list of {"messages": [...]} records
    DIR/dataset_info.json             the dataset's entry (merged into an existing file, others kept)
    DIR/train_<style>_llama3.yaml     the released recipe for Llama-3.1-8B-Instruct (template llama3)
    DIR/train_<style>_qwen.yaml       the same for Qwen-2.5-7B-Instruct (template qwen)

Records use LLaMA-Factory's ``sharegpt`` formatting in its OpenAI-style variant (``messages``: ``system``,
then ``user`` and ``assistant`` turns; the loss covers the assistant turn, as in our loop and the TRL
trainer); the entry names the tags, since the format's defaults are ShareGPT's (``from``/``value``). Our
``id`` is kept in each record (LLaMA-Factory ignores columns it is not told about).

Train with ``llamafactory-cli train DIR/train_NL_llama3.yaml`` from a LLaMA-Factory checkout (its
``examples/deepspeed/ds_z3_config.json`` is the ZeRO-3 file the recipe names), on 4 GPUs.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from finelogic.files import write_text_atomic
from finelogic.sft.recipes import BASE_MODELS, llamafactory_config

#: The ``dataset_info.json`` entry's fixed part (the file name is added per style).
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
    """``{"id", "messages"}`` per example, turns reduced to ``role`` and ``content``.

    Raises:
        ValueError: an example whose turns are not (system,) user, assistant, ... ending with the assistant
            (names its id): LLaMA-Factory would drop or reject it.
    """
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
    """Write one style's set, its ``dataset_info.json`` entry and a YAML per base model into ``out``.

    Args:
        examples: the style's chat examples (:func:`finelogic.runs.supervision.style_examples`).
        style: the style name (``NL``, ``Symb-Struct``, ..., ``LogiPT``).
        out: the folder (LLaMA-Factory's ``dataset_dir``); created; an existing ``dataset_info.json`` keeps
            its other entries.
        output_root: where the YAMLs tell LLaMA-Factory to save (``<output_root>/<base>/<style>``).

    Returns:
        ``{"data": ..., "dataset_info": ..., "llama3": ..., "qwen": ...}`` paths.
    """
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
        path = folder / f"train_{safe_style(style)}_{base}.yaml"
        write_text_atomic(path, f"# FineLogic {style}: the released recipe (logical.yaml) for {BASE_MODELS[base].name}.\n"
                          f"# Run from a LLaMA-Factory checkout on 4 GPUs: llamafactory-cli train {path}\n"
                          + yaml.safe_dump(config, sort_keys=False))
        written[base] = path
    return written


def safe_style(style: str) -> str:
    return style.replace("/", "_")
