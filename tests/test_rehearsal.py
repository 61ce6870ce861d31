"""The paper-scale rehearsal (issue 18): the stand-in's replies reach the real code paths, the plan table's
arithmetic, and a killed rehearsal that resumes sends only what was missing."""
from __future__ import annotations

import json
import os
import random
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
from finelogic.rehearsal import parse_price, plan_table, rehearse
from finelogic.rehearsal.standin import FINGERPRINT, StandInProcess, StandInServer, prompt_kind

#: A few items per test set: enough for every reply shape, seconds per run.
SMALL = {"accuracy": {"fld": {"name": "fld", "n": 6, "depths": (1, 3)}, "prontoqa_generated": {"n": 2, "hops": (5,)},
                      "limit": 0},
         "soundness": {"quality": {"n": 4, "depths": (3, 4)}, "llm_quality_steps": 8}}
SMALL["depth"] = SMALL["accuracy"]


def _chat(server: StandInServer, content: str, system: str = "", max_tokens: int = 3072) -> dict:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": content}]
    return server.answer("/v1/chat/completions", {"model": "stand-in:gpt-4o", "messages": messages,
                                                  "max_tokens": max_tokens})["choices"][0]


def test_stand_in_replies_are_deterministic_and_labelled():
    server = StandInServer(sample=1)  # every message counted (whitespace words: no tokenizer given)
    body = {"model": "stand-in:gpt-4o", "messages": [{"role": "user", "content": "fact1: a\nQ"}], "max_tokens": 9}
    first, second = server.answer("/v1/chat/completions", body), server.answer("/v1/chat/completions", body)
    assert first == second
    assert first["system_fingerprint"] == FINGERPRINT
    assert server.counts() == [{"model": "stand-in:gpt-4o", "kind": "answer", "requests": 2,
                                "prompt_tokens": 2 * (3 + 4), "cap_tokens": 18,
                                "reply_tokens": 2 * len((first["choices"][0]["message"]["content"] or "").split())}]


def test_the_server_in_its_own_process_answers_counts_and_dies_with_a_killed_parent(tmp_path):
    from finelogic.models.spec import open_model

    with StandInProcess() as server:  # whitespace words as tokens: no tokenizer folder
        model = open_model({"kind": "openai", "model": "stand-in:gpt-4o", "base_url": server.url}, cache=False)
        replies = model.generate([[{"role": "user", "content": "Is it true? Answer true or false only."}]] * 2)
        assert replies[0] == replies[1] and replies[0].strip().lower() in ("true", "false")
        assert [(c["model"], c["kind"], c["requests"]) for c in server.counts()] == [("stand-in:gpt-4o", "judge", 1)]
    # A parent killed with SIGKILL has no time to stop its server: the server must end by itself.
    script = ("import sys, time; from finelogic.rehearsal.standin import StandInProcess; s = StandInProcess(); "
              "print(s._process.pid, flush=True); time.sleep(120)")
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
    script.write_text("from finelogic.rehearsal.standin import StandInProcess\n"
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
        {"family": "accuracy", "model": "stand-in:gpt-4o", "kind": "answer", "requests": 10, "prompt_tokens": 2_000_000,
         "cap_tokens": 30_720, "reply_tokens": 5},
        {"family": "accuracy", "model": "stand-in:gpt-4o", "kind": "logic-lm", "requests": 5, "prompt_tokens": 1_000_000,
         "cap_tokens": 15_360, "reply_tokens": 5},
        {"family": "soundness", "model": "stand-in:gpt-4.1-mini", "kind": "judge", "requests": 4, "prompt_tokens": 400,
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
    with pytest.raises(ValueError, match="MODEL=INPUT/OUTPUT"):
        parse_price("gpt-4o=2.5")


@pytest.mark.slow  # ~1 min on an idle 2-core machine (4 minutes at load 15)
def test_the_accuracy_depth_and_soundness_runs_take_the_stand_in_replies(model_cache, tmp_path):
    made = rehearse(["accuracy", "depth", "soundness"], root=tmp_path, overrides=SMALL)
    assert made.errors == {}
    records = pd.read_csv(tmp_path / "paper" / "accuracy" / "records.csv")
    assert set(records["model"]) == {"stand-in:Llama-3.1-8B-Instruct", "stand-in:Qwen-2.5-7B-Instruct",
                                     "stand-in:GPT-4o", "stand-in:DeepSeek-R1"}
    assert records["correct"].any() and not records["correct"].all()
    assert records["truncated"].any() and (records["finish_reason"] == "length").any()
    assert records["no_output"].any()  # empty replies are recorded as such, never scored as answers
    traces = [json.loads(t) for t in pd.read_csv(tmp_path / "paper" / "accuracy" / "traces.csv")["trace"]]
    logic_lm = [t for t in traces if t["setting"] == "Logic-LM"]
    assert any(t["refinements"] > 0 for t in logic_lm) and any(t["solver"] for t in logic_lm)
    steps = pd.read_csv(tmp_path / "paper" / "soundness" / "steps.csv")
    assert {True, False} <= set(steps.loc[steps["decided_by"] == "llm", "valid"])
    report = made.report.set_index(["family", "stage"])
    assert report.loc[("soundness", "run"), "judge_calls"] > 0
    assert report.loc[("accuracy", "write"), "files"] == 7  # 5 tables, the test sets, run.json
    requests = made.requests
    assert set(requests.loc[requests["family"] == "soundness", "model"]) == {"stand-in:gpt-4.1-mini"}
    assert {"answer", "logic-lm", "symbcot-plan", "sel-inf-select"} <= set(requests["kind"])


def _cached_lines(root: Path) -> int:
    """Model answers in the rehearsal's store (``sqlite3 <root>/cache/store.sqlite "SELECT count(*) FROM calls"``)."""
    import sqlite3

    try:  # read-only: polling must not create the file before the rehearsal does
        with sqlite3.connect(f"file:{root / 'cache' / 'store.sqlite'}?mode=ro", uri=True) as db:
            return db.execute("SELECT count(*) FROM calls").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet (or its tables not yet)
        return 0


@pytest.mark.slow
def test_a_killed_rehearsal_resumes_sending_only_what_was_missing(model_cache, tmp_path):
    overrides = {"accuracy": {**SMALL["accuracy"], "settings": ("Direct", "CoT", "Logic-LM")}}
    script = ("import sys; from finelogic.rehearsal import rehearse; "
              f"rehearse(['accuracy'], root=sys.argv[1], fresh=sys.argv[2] == 'fresh', overrides={overrides!r})")
    env = {**os.environ, "FINELOGIC_CACHE": str(model_cache)}

    def run(root: Path, mode: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", script, str(root), mode], cwd=REPO, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert run(whole, "fresh").wait(timeout=600) == 0
    sent_whole = int(pd.read_csv(whole / "requests.csv")["requests"].sum())

    killed = run(broken, "fresh")
    threshold = random.Random(0).randint(20, sent_whole // 2)
    deadline = time.monotonic() + 600
    while killed.poll() is None and _cached_lines(broken) < threshold and time.monotonic() < deadline:
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    stored = _cached_lines(broken)
    assert 0 < stored < sent_whole

    assert run(broken, "resume").wait(timeout=600) == 0
    sent_again = int(pd.read_csv(broken / "requests-resumed.csv")["requests"].sum())
    assert sent_again == sent_whole - stored
    for name in ("records", "sets", "traces"):
        ours, theirs = (pd.read_csv(root / "paper" / "accuracy" / f"{name}.csv") for root in (broken, whole))
        pd.testing.assert_frame_equal(ours.drop(columns=["seconds"], errors="ignore"),
                                      theirs.drop(columns=["seconds"], errors="ignore"))


#: The in-process families at smoke size: a few shallow problems, a few LogicMark items.
SMALL_LOCAL = {"supervision": {"styles": ("NL",), "fld_n": 4, "fld_unknown": 1, "fld_depths": (0, 1), "prontoqa_n": 2, "prontoqa_hops": 3,
                               "eval": {"fld": {"name": "fld", "n": 2, "depths": (1,)}, "prontoqa_generated": {"n": 0},
                                        "limit": {"folio": 0, "multi_logieval": 0, "prontoqa": 0},
                                        "generation": {"max_new_tokens": 64}, "batch_size": 4}},
               "probing": {"n_train": 4, "n_test": 2, "depths": (3, 4), "distractors": (4, 6), "nsd_points": 1},
               "logicmark": {"items": 12}}


@pytest.mark.slow  # 236 s at load 12 with all four styles; one style and LogiPT here
def test_the_supervision_probing_and_logicmark_runs_rehearse_on_the_stand_in_checkpoints(model_cache, tmp_path):
    """Training in float32 on the 2-block stand-in, its models answered by the server; probing and LogicMark
    read every profile model as a stand-in checkpoint."""
    made = rehearse(["supervision", "probing", "logicmark"], root=tmp_path, overrides=SMALL_LOCAL,
                    train_steps=1)
    assert made.errors == {}
    training = pd.read_csv(tmp_path / "paper" / "supervision" / "training.csv")
    assert list(training["setting"]) == ["SFT-NL", "LogiPT"]
    assert set(training["steps"]) == {1} and set(training["method"]) == {"full"}
    records = pd.read_csv(tmp_path / "paper" / "supervision" / "records.csv")
    assert set(records["model"]) == {"stand-in:Llama-3.1-8B-Instruct"}
    assert {"SFT-NL", "LogiPT"} < set(records["setting"])  # and the base model's rows
    probes = pd.read_csv(tmp_path / "paper" / "probing" / "predictions.csv")
    assert probes["model"].nunique() == 4
    items = pd.read_csv(tmp_path / "paper" / "logicmark" / "items.csv")
    assert len(items) == 12 * 6 and items["model"].nunique() == 6
    requests = made.requests
    assert set(requests["family"]) == {"supervision"}  # probing and LogicMark stay in process
