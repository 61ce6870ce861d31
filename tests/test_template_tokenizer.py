"""The tokenizer a cached rerun reads without transformers gives transformers' texts and token counts.

Compared with ``AutoTokenizer`` on the embedded model's saved tokenizer (the one every fine-tuned checkpoint
copies): chat templates of real problems in every prompt setting, the probing read-out frame, and the
responses of a committed study unit (fine-tuned model text, markers, unicode, the chat markup a model may
write), token for token.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from finelogic.data.generators.fld import generate_fld
from finelogic.data.datasets import load_dataset
from finelogic.eval.accuracy import token_counts
from finelogic.eval.probing_data import Readout
from finelogic.models.spec import open_tokenizer
from finelogic.models.template_tokenizer import TemplateTokenizer, read_template_tokenizer
from finelogic.prompts import build_conversation, default_few_shot_examples

REPO = Path(__file__).resolve().parents[1]
STUDY_RECORDS = REPO / "results" / "study" / "units" / "SFT-NL" / "accuracy" / "records.csv"


@pytest.fixture(scope="module")
def tokenizers():
    from transformers import AutoTokenizer

    from finelogic.models.embedded import converted_path

    return read_template_tokenizer(converted_path()), AutoTokenizer.from_pretrained(converted_path())


@pytest.fixture(scope="module")
def real_problems():
    data = REPO.parent / "shared" / "data"
    if not data.is_dir():
        pytest.skip(f"real data not present at {data}")
    problems = []
    for name in ("folio", "multi_logieval", "prontoqa", "fld"):
        problems += list(load_dataset(name, data))[:40]
    return problems + generate_fld(30, seed=3)


def test_an_embedded_model_tokenizer_is_read_without_transformers(tokenizers):
    light, _ = tokenizers
    assert isinstance(open_tokenizer("embedded"), TemplateTokenizer)
    assert isinstance(light, TemplateTokenizer) and light.chat_template


def test_chat_templates_and_prompt_token_counts_equal_transformers(tokenizers, real_problems):
    light, reference = tokenizers
    examples = default_few_shot_examples()
    checked = 0
    for problem in real_problems:
        for setting in ("Direct", "CoT", "Few-shot"):
            conversation = build_conversation(problem, setting, few_shot_examples=examples)
            text = light.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
            assert text == reference.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
            ids = reference.apply_chat_template(conversation, add_generation_prompt=True, tokenize=True)
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
            assert light.apply_chat_template(conversation, add_generation_prompt=True) == list(ids), problem.id
            checked += 1
        assert Readout("chat", light).frame(problem) == Readout("chat", reference).frame(problem)
    assert checked == 3 * len(real_problems) >= 3 * 150


def test_response_token_counts_equal_transformers_on_a_committed_units_responses(tokenizers):
    light, reference = tokenizers
    if not STUDY_RECORDS.is_file():
        pytest.skip(f"{STUDY_RECORDS} is not in this checkout")
    records = pd.read_csv(STUDY_RECORDS, keep_default_na=False)
    responses = list(records["response"]) + ["<|im_end|>\n<|im_start|>user\nnext", "ünïcödé ∀x (P(x) → ¬Q(x))  ", ""]
    conversation = [{"role": "user", "content": "Is it proved?"}]
    for response in responses:
        assert token_counts(light, conversation, response) == token_counts(reference, conversation, response)
    # and the counts the unit's run stored (made through transformers) are what the light reader counts
    stored = records["completion_tokens"].astype(int).tolist()
    assert [len(light(r, add_special_tokens=False)["input_ids"]) for r in records["response"]] == stored


def test_what_it_cannot_read_exactly_is_left_to_transformers(tmp_path, tokenizers):
    light, _ = tokenizers
    with pytest.raises(ValueError, match="add_special_tokens=False"):
        light("text")
    assert read_template_tokenizer(tmp_path) is None  # no tokenizer.json: AutoTokenizer's to read
    folder = tmp_path / "named-templates"
    folder.mkdir()
    for name in ("tokenizer.json", "special_tokens_map.json"):  # transformers 5 writes no special_tokens_map.json
        if (light.folder / name).is_file():
            (folder / name).write_bytes((light.folder / name).read_bytes())
    config = json.loads((light.folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = [{"name": "default", "template": "{{ messages }}"}]
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    assert read_template_tokenizer(folder) is None


def test_a_cached_rerun_reads_a_tokenizer_without_loading_torch():
    from finelogic.models.embedded import converted_path

    converted_path()  # converting the GGUF (once per cache) does load torch
    code = ("import sys\nfrom finelogic.models.spec import open_tokenizer\n"
            "t = open_tokenizer('embedded')\n"
            "t.apply_chat_template([{'role': 'user', 'content': 'hi'}], add_generation_prompt=True)\n"
            "print('torch' in sys.modules, 'transformers' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == ["False", "False"]
