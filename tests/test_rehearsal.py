"""The rehearsal script (benchmarks/rehearsal.py) and its stand-in server (benchmarks/standin.py): the
stand-in's replies reach the real code paths, the plan table's arithmetic, and the script driving
`finelogic run` against the stand-in counts what each family sends."""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from model_fixtures import REPO, model_cache  # noqa: F401 (fixture)

from finelogic.baselines.logic_lm import parse_translation
from finelogic.data import generate
from finelogic.eval.judges import parse_reply
from rehearsal import parse_price, plan_table
from standin import FINGERPRINT, StandInProcess, StandInServer, prompt_kind

SCRIPT = REPO / "benchmarks" / "rehearsal.py"


def _chat(server: StandInServer, content: str, system: str = "", max_tokens: int = 3072) -> dict:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": content}]
    return server.answer("/v1/chat/completions", {"model": "gpt-4o", "messages": messages,
                                                  "max_tokens": max_tokens})["choices"][0]


def test_stand_in_replies_are_deterministic_and_labelled():
    server = StandInServer(sample=1)  # every message counted (whitespace words: no tokenizer given)
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "fact1: a\nQ"}], "max_tokens": 9}
    first, second = server.answer("/v1/chat/completions", body), server.answer("/v1/chat/completions", body)
    assert first == second
    assert first["system_fingerprint"] == FINGERPRINT
    assert server.counts() == [{"model": "gpt-4o", "kind": "answer", "requests": 2,
                                "prompt_tokens": 2 * (3 + 4), "cap_tokens": 18,
                                "reply_tokens": 2 * len((first["choices"][0]["message"]["content"] or "").split())}]


def test_the_server_in_its_own_process_answers_counts_and_dies_with_a_killed_parent(tmp_path):
    from finelogic.models.spec import open_model

    with StandInProcess() as server:  # whitespace words as tokens: no tokenizer folder
        model = open_model({"kind": "openai", "model": "gpt-4o", "base_url": server.url}, cache=False)
        replies = model.generate([[{"role": "user", "content": "Is it true? Answer true or false only."}]] * 2)
        assert replies[0] == replies[1] and replies[0].strip().lower() in ("true", "false")
        assert [(c["model"], c["kind"], c["requests"]) for c in server.counts()] == [("gpt-4o", "judge", 1)]
    # A parent killed with SIGKILL has no time to stop its server: the server must end by itself.
    script = (f"import sys, time; sys.path.insert(0, {str(SCRIPT.parent)!r}); from standin import StandInProcess; "
              "s = StandInProcess(); print(s._process.pid, flush=True); time.sleep(120)")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO)
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _running(child):
        time.sleep(0.2)
    assert not _running(child), f"the stand-in server process {child} outlived its killed parent"


def test_the_server_process_counts_prompt_tokens_as_the_checkpoints_tokenizer_does(model_cache):
    from transformers import AutoTokenizer

    from finelogic.models.embedded import converted_path
    from finelogic.models.spec import open_model

    folder = converted_path()
    prompts = ["fact1: {A}{a} -> {B}{a}\nfact2: {A}{a}\nhypothesis: {B}{a}", "Is it true?  Answer café ∀x <|im_end|>"]
    with StandInProcess(folder, sample=1) as server:  # sample=1: every message tokenized, none estimated
        model = open_model({"kind": "openai", "model": "stand-in:m", "base_url": server.url}, cache=False)
        model.generate([[{"role": "user", "content": p}] for p in prompts])
        counted = sum(c["prompt_tokens"] for c in server.counts())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    expected = sum(len(tokenizer(p, add_special_tokens=False)["input_ids"]) + 4 for p in prompts)  # 4 per message
    assert counted == expected


def test_a_plain_script_starts_the_server_process_without_a_main_guard(tmp_path):
    script = tmp_path / "rehearse_here.py"  # no `if __name__ == "__main__":`, as a user writes it
    script.write_text(f"import sys\nsys.path.insert(0, {str(SCRIPT.parent)!r})\nfrom standin import StandInProcess\n"
                      "with StandInProcess() as server:\n    print(server.url.startswith('http://127.0.0.1:'))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr[-2000:]


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"  # a zombie has ended; only its exit status waits to be read


def test_answer_prompts_get_every_shape_and_judge_prompts_true_or_false():
    server = StandInServer()
    answers = [_chat(server, f"fact1: x{i}\nfact2: y\n__PROVED__ __DISPROVED__ __UNKNOWN__", max_tokens=64)
               for i in range(300)]
    texts = [a["message"]["content"] for a in answers]
    assert {a["finish_reason"] for a in answers} == {"stop", "length"}
    assert any(t == "" for t in texts) and any("-> int1:" in t and t.endswith("__") for t in texts)
    assert any("->" in t and "__" not in t and a["finish_reason"] == "stop" for t, a in zip(texts, answers))
    assert max(len(t.split()) for t in texts) <= 64  # a cut reply stays under the cap it was given
    verdicts = [parse_reply(_chat(server, f"Premises:\nA{i}\nConclusion:\nB\nDo the premises entail the conclusion? "
                                          "Answer true or false only.")["message"]["content"]) for i in range(100)]
    assert {True, False, None} == set(verdicts)
    assert verdicts.count(True) > verdicts.count(None)


def test_logic_lm_programs_parse_mostly_and_fail_sometimes():
    problem = generate("fld", n=1, depths=(3,), seed=0)[0]
    server = StandInServer()
    system = "Translate a logic problem into formulas. ..."
    errors = [parse_translation(_chat(server, f"{problem.facts_text}\nHypothesis: {problem.hypothesis}\nattempt {i}",
                                      system)["message"]["content"], problem).errors for i in range(40)]
    failed = sum(bool(e) for e in errors)
    assert 40 - failed > failed > 0
    assert any("position" in message or "parse" in message for e in errors for message in e)
    assert prompt_kind(system) == "logic-lm"


def test_plan_table_counts_and_prices_by_model():
    requests = pd.DataFrame([
        {"family": "accuracy", "model": "gpt-4o", "kind": "answer", "requests": 10, "prompt_tokens": 2_000_000,
         "cap_tokens": 30_720, "reply_tokens": 5},
        {"family": "accuracy", "model": "gpt-4o", "kind": "logic-lm", "requests": 5, "prompt_tokens": 1_000_000,
         "cap_tokens": 15_360, "reply_tokens": 5},
        {"family": "soundness", "model": "gpt-4.1-mini", "kind": "judge", "requests": 4, "prompt_tokens": 400,
         "cap_tokens": 20, "reply_tokens": 4}])
    plan = plan_table(requests, {"gpt-4o": (2.5, 10.0)}).set_index("model")
    gpt4o = plan.loc["gpt-4o"]
    assert (gpt4o["requests"], gpt4o["prompt_tokens"], gpt4o["output_tokens_at_cap"]) == (15, 3_000_000, 46_080)
    assert gpt4o["input_usd"] == pytest.approx(7.5)  # 3 M tokens x $2.5 per million
    assert gpt4o["output_usd_at_cap"] == pytest.approx(0.4608)  # 46,080 tokens x $10 per million
    assert gpt4o["total_usd_at_cap"] == pytest.approx(7.9608)
    assert pd.isna(plan.loc["gpt-4.1-mini", "input_usd"])  # no price given: no cost made up


def test_prices_are_read_as_model_input_output():
    assert parse_price("gpt-4o=2.5/10") == ("gpt-4o", (2.5, 10.0))
    with pytest.raises(argparse.ArgumentTypeError, match="MODEL=INPUT/OUTPUT"):
        parse_price("gpt-4o=2.5")


@pytest.mark.slow  # two notebooks through `finelogic run` (about 30 s at load 10 on 2 cores)
def test_the_script_runs_finelogic_run_against_the_stand_in_and_counts_what_each_family_sends(tmp_path):
    out = tmp_path / "tables"
    done = subprocess.run([sys.executable, str(SCRIPT), "--profile", "smoke", "--families", "accuracy", "depth",
                           "--whitespace-tokens", "--root", str(tmp_path / "root"), "--out", str(out),
                           "--price", "embedded=1/2"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = pd.read_csv(out / "report.csv").set_index("family")
    assert report["status"].tolist() == ["ok", "ok"]
    # The smoke profile's accuracy: 8 items (6 FLD, 2 ProntoQA) under Direct and CoT, 16 new tokens each; depth
    # reads the accuracy run and sends nothing.
    assert report.loc["accuracy", ["requests", "cap_tokens", "cache_calls"]].tolist() == [16, 256, 16]
    assert report.loc["depth", ["requests", "cache_calls"]].tolist() == [0, 0]
    records = pd.read_csv(tmp_path / "root" / "smoke" / "accuracy" / "records.csv")
    assert len(records) == 16 and set(records["model"]) == {"embedded"}
    plan = pd.read_csv(out / "plan.csv").set_index("model")
    assert plan.loc["embedded", "requests"] == 16
    assert plan.loc["embedded", "output_usd_at_cap"] == pytest.approx(256 / 1e6 * 2)
    assert "finelogic run --profile smoke --family accuracy" in (out / "provenance.md").read_text()
    assert (tmp_path / "root" / "notebooks" / "02_accuracy.ipynb").is_file()  # not the book's own pages


def test_the_book_page_includes_the_committed_tables_of_a_rehearsal_where_every_family_ran():
    page = (REPO / "book" / "rehearsal.md").read_text(encoding="utf-8")
    folder = REPO / "book" / "generated-static" / "rehearsal"
    for name in ("report.md", "plan.md", "provenance.md"):
        assert f"```{{include}} generated-static/rehearsal/{name}" in page
        assert (folder / name).is_file()
    report = pd.read_csv(folder / "report.csv")
    assert report["family"].tolist() == ["datasets", "accuracy", "depth", "soundness"]
    assert set(report["status"]) == {"ok"}
    assert report.set_index("family").loc["soundness", "judge_calls"] > 0
