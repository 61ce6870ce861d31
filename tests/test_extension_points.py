"""Adding a dataset is one format and one ``Dataset`` record; adding a model kind is one backend and one
``ModelKind`` record; adding a LogicMark metric is one function and one ``ITEM_METRICS`` entry (README, "Where
to add things"). A toy of each, added that way and nowhere else, goes through the public functions: loading,
prompts, answer extraction, the released gold, opening, the cache, the family's run and its results CSV."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from finelogic.data import datasets
from finelogic.data.loaders.records import YES_NO, Format, label, numbered_facts, required
from finelogic.data.problem import DISPROVED, PROVED, Problem
from finelogic.eval.accuracy import evaluate_accuracy
from finelogic.eval.extraction import released_gold_marker
from finelogic.eval.forced_choice import chance_level
from finelogic.models import spec
from finelogic.models.base import BackendStats, Completion, GenerationConfig
from finelogic.prompts import SYSTEM_PROMPT_TWO_LABELS, build_conversation, labels_for

ITEMS = [
    {"id": "t1", "premises": ["All cats purr.", "Tom is a cat."], "claim": "Tom purrs.", "answer": "yes"},
    {"id": "t2", "premises": ["No dogs purr.", "Rex is a dog."], "claim": "Rex does not purr.", "answer": "yes"},
    {"id": "t3", "premises": ["No dogs purr.", "Rex is a dog."], "claim": "Rex purrs.", "answer": "no"},
]


def convert(item) -> Problem:
    """The toy format: premises -> facts, claim -> hypothesis, yes/no -> PROVED/DISPROVED."""
    record = item.data
    return Problem(id=required(record, "id"), dataset="toy", facts=numbered_facts(required(record, "premises", list)),
                   hypothesis=required(record, "claim"), label=label(required(record, "answer"), "answer", YES_NO))


TOY_DATASET = datasets.Dataset("toy", "Toy", Format(convert, "toy/*.json"), (PROVED, DISPROVED), yes_no_gold=True)


class RuleBackend:
    """Answers ``__DISPROVED__`` when the hypothesis line says "not", else ``__PROVED__``."""

    def __init__(self, rule: str):
        self.rule, self.stats, self.closed = rule, BackendStats(), False

    def generate(self, conversations, config=GenerationConfig(), *, on_result=None):
        self.stats.add(calls=1)
        answers = []
        for i, conversation in enumerate(conversations):
            hypothesis = conversation[-1]["content"].split("Hypothesis: ")[1].split("\n")[0]
            answers.append(Completion("__DISPROVED__" if " not " in hypothesis else "__PROVED__", "stop"))
            if on_result is not None:
                on_result(i, answers[-1])
        return answers

    def loglikelihood(self, requests):
        raise NotImplementedError("the toy kind scores no continuations")

    def hidden_states(self, text, boundaries, **kwargs):
        raise NotImplementedError("the toy kind has no hidden states")

    hidden_states_batch = hidden_states

    def close(self):
        self.closed = True


TOY_KIND = spec.ModelKind("toy", "toy:<rule>", lambda rest: {"model": rest} if rest else None,
                          lambda s: f"toy:{s.model}", lambda s, batch_size: RuleBackend(s.model), needs="model")


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy dataset's published file under ``tmp_path/toy``, both records added, a cache of its own."""
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "claims.json").write_text(json.dumps(ITEMS))
    monkeypatch.setattr(datasets, "DATASETS", datasets.DATASETS + (TOY_DATASET,))
    monkeypatch.setattr(spec, "MODEL_KINDS", spec.MODEL_KINDS + (TOY_KIND,))
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_a_toy_dataset_added_as_one_record_loads_prompts_and_reads_its_gold(toy):
    problems = datasets.load_dataset("toy", toy)
    assert [(p.id, p.label, p.hypothesis) for p in problems] == [
        ("t1", PROVED, "Tom purrs."), ("t2", PROVED, "Rex does not purr."), ("t3", DISPROVED, "Rex purrs.")]
    assert datasets.dataset("toy").paper_name == "Toy" and labels_for("toy") == (PROVED, DISPROVED)
    system, user = build_conversation(problems[0], "Direct")
    assert system == {"role": "system", "content": SYSTEM_PROMPT_TWO_LABELS}  # two labels: two markers
    assert user["content"] == "Facts: fact1: All cats purr.\nfact2: Tom is a cat.\nHypothesis: Tom purrs."
    assert chance_level("toy") == 50
    assert [released_gold_marker(p.label, "toy") for p in problems] == ["__YES__", "__YES__", "__NO__"]


def test_a_toy_model_kind_added_as_one_record_opens_behind_the_cache_and_answers(toy):
    assert spec.parse_model("toy:rule") == spec.ModelSpec("rule", "toy", model="rule")
    assert spec.parse_model({"kind": "toy", "model": "rule"}).model_id == "toy:rule"
    with pytest.raises(ValueError, match="a toy model needs 'model'"):
        spec.parse_model({"kind": "toy"})
    problems = datasets.load_dataset("toy", toy)
    model = spec.open_model("toy:rule")
    records = evaluate_accuracy(problems, model, "CoT", model="rule")
    # t1 and t3 answered PROVED, t2 ("does not") DISPROVED: t1 right, t2 wrong (its gold is PROVED), t3 wrong.
    assert records["prediction"].tolist() == [PROVED, DISPROVED, PROVED]
    assert records["correct"].tolist() == [True, False, False]
    opened = model.backend
    assert opened.stats.calls == 1 and model.stats.calls == 1
    model.release()  # lets the model go: the protocol's close
    assert opened.closed
    again = spec.open_model("toy:rule")
    assert evaluate_accuracy(problems, again, "CoT", model="rule")["correct"].tolist() == [True, False, False]
    assert again.stats.cache_hits == 3 and not again.loaded  # every answer from the store: never opened


class WordCountBackend:
    """Scores a continuation by its length: log-prob ``-len(text)``, one token per word."""

    def __init__(self):
        self.stats, self.closed = BackendStats(), False

    def loglikelihood(self, requests):
        self.stats.add(calls=1)
        return [(-float(len(text)), len(text.split()), False) for _, text in requests]

    def close(self):
        self.closed = True


def test_a_toy_metric_added_as_one_function_and_one_entry_is_a_column_of_the_logicmark_items_csv(tmp_path,
                                                                                                   monkeypatch):
    """A LogicMark metric is a function and its entry in ``ITEM_METRICS`` (README, "Where to add things"): the
    family's smoke run on a handed-in backend writes it as a column of ``items.csv``, after the others."""
    from finelogic.eval import logicmark as scoring
    from finelogic.runs import logicmark

    def gold_words(problem, record):
        return record[f"tokens_{problem.answer_index}"]

    monkeypatch.setitem(scoring.ITEM_METRICS, "gold_words", gold_words)
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))
    run = logicmark.run("smoke", backends={logicmark.EMBEDDED: WordCountBackend()})
    run.write()
    items = pd.read_csv(tmp_path / "results" / "smoke" / "logicmark" / "items.csv")
    assert list(items.columns[-3:]) == ["prediction", "correct", "gold_words"]
    assert len(items) == 5  # the smoke profile's items
    assert items["gold_words"].tolist() == [len(p.options[p.answer_index].split()) for p in run.problems]
    # The shortest option wins under the "none" normalisation (-len), the first on a tie.
    assert items["pred_none"].tolist() == [min(range(len(p.options)), key=lambda k: len(p.options[k]))
                                           for p in run.problems]
