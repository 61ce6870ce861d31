"""FineLogic's benchmarks as lm-evaluation-harness tasks: lm-eval reads the items `finelogic eval` reads and,
on the same model, makes the same choices and reads the same answers."""
from __future__ import annotations

import json

import pytest

from model_fixtures import model_cache  # noqa: F401 (fixture)

from finelogic.book.cli import main
from finelogic.lm_eval_tasks import TASKS_DIR


def test_finelogic_tasks_prints_the_include_path(capsys):
    assert main(["tasks", "--lm-eval"]) == 0
    assert capsys.readouterr().out.strip() == str(TASKS_DIR)
    assert main(["tasks"]) == 0
    listed = capsys.readouterr().out
    for task in ("finelogic_fld", "finelogic_folio", "finelogic_multi_logieval", "finelogic_prontoqa",
                 "finelogic_logicmark", "finelogic_accuracy"):
        assert task in listed


def test_the_tasks_hold_the_items_finelogic_eval_reads():
    from finelogic.data.datasets import DataNotFoundError
    from finelogic.data.suites import evaluation_sets
    from finelogic.lm_eval_tasks import utils
    from finelogic.prompts import build_conversation
    from finelogic.runs.accuracy import PROFILES
    from finelogic.runs.logicmark import PROFILES as LOGICMARK, logicmark_items

    docs = utils.prontoqa(profile="smoke", setting="Direct", version=1.0, config_source="x")["test"]
    [prontoqa] = [s for s in evaluation_sets(PROFILES["smoke"]) if s.name == "prontoqa"]
    assert docs["id"] == [p.id for p in prontoqa.problems]
    system, user = build_conversation(prontoqa.problems[0], "Direct")
    assert (docs[0]["system"], docs[0]["user"]) == (system["content"], user["content"])
    marks = utils.logicmark(profile="smoke")["test"]
    items = logicmark_items(LOGICMARK["smoke"].items, 0)
    assert marks["id"] == [p.id for p in items] and marks["answer"] == [p.answer_index for p in items]
    with pytest.raises(ValueError, match="no folio items"):  # offline, without a data folder: not present
        utils.folio(profile="smoke")
    with pytest.raises(DataNotFoundError, match="/nonexistent"):
        utils.folio(profile="smoke", data_dir="/nonexistent")


@pytest.mark.slow
def test_lm_eval_on_the_embedded_model_chooses_and_answers_as_finelogic_eval(tmp_path, model_cache):  # noqa: F811
    pytest.importorskip("lm_eval", reason="lm-eval is not installed (the lm-eval extra)")
    import torch
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from finelogic.evaluate import evaluate
    from finelogic.lm_eval_tasks.utils import process_results
    from finelogic.models.embedded import converted_path
    from finelogic.runs.accuracy import AccuracyRun
    from finelogic.runs.logicmark import LogicMarkRun

    torch.set_num_threads(1)
    out = tmp_path / "eval"
    evaluate(["embedded"], profile="smoke", families=["accuracy", "logicmark"], out=out)
    ours = AccuracyRun.read(out / "accuracy").records
    ours = ours[(ours["dataset"] == "prontoqa") & (ours["setting"] == "CoT")].set_index("id")
    marks = LogicMarkRun.read(out / "logicmark").items.set_index("id")

    model = HFLM(pretrained=str(converted_path()), dtype="float32", device="cpu", batch_size=4)

    def tasks(**metadata):  # what `lm_eval --include_path DIR --metadata JSON` makes
        return TaskManager(include_path=str(TASKS_DIR), metadata={"profile": "smoke", **metadata})

    chosen = simple_evaluate(model=model, tasks=["finelogic_logicmark"], task_manager=tasks(),
                             log_samples=True)["samples"]["finelogic_logicmark"]
    assert len(chosen) == len(marks) > 0
    for sample in chosen:
        scores = [float(loglik) for loglik, _ in sample["filtered_resps"]]
        lengths = [len(option) for option in sample["doc"]["choices"]]
        row = marks.loc[sample["doc"]["id"]]
        assert max(range(len(scores)), key=scores.__getitem__) == row["pred_none"]
        assert max(range(len(scores)), key=lambda k: scores[k] / lengths[k]) == row["pred_char"]

    answered = simple_evaluate(model=model, tasks=["finelogic_prontoqa"], task_manager=tasks(setting="CoT"),
                               apply_chat_template=True, gen_kwargs="max_gen_toks=16", log_samples=True)
    samples = answered["samples"]["finelogic_prontoqa"]
    assert len(samples) == len(ours) > 0
    for sample in samples:
        response = sample["filtered_resps"][0]
        mine = ours.loc[sample["doc"]["id"]]
        assert response == mine["response"]
        assert sample["acc"] == float(bool(mine["correct"]))
        assert sample["acc_released"] == float(bool(mine["correct_compat"]))
        assert process_results(sample["doc"], [response]) == {"acc": sample["acc"], "acc_released": sample["acc_released"]}
    assert json.loads(samples[0]["doc"]["problem"])["id"] == samples[0]["doc"]["id"]
