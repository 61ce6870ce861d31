"""Loaders: the published formats become Problem records; bad files fail with file + line/item + field."""
from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from finelogic.data import DISPROVED, PROVED, UNKNOWN
from finelogic.data.generators.logicmark import to_record
from finelogic.data.datasets import DataNotFoundError, DatasetFormatError, LoadedDataset, load_dataset
from finelogic.data.loaders.records import split_sentences

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

CARD_RECORD = {
    "id": "symbolic_00042",
    "domain": "Symbolic",
    "context": "If:\na = b\nb != c\na = d\n\nThen",
    "options": ["a != c", "d = c", "b = d", "a = c"],
    "answer_index": 0,
    "answer": "a != c",
    "hop_depth": 2,
}


@pytest.fixture
def data_root() -> Path:
    if not (SHARED_DATA / "folio").is_dir():
        pytest.skip(f"real data files not present in {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Tests never reach the hub, and never see a user's FINELOGIC_DATA_DIR."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.delenv("FINELOGIC_DATA_DIR", raising=False)


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------- real files (acceptance numbers)


def test_folio_v0_validation_has_204_items_labelled_72_true_63_false_69_uncertain(data_root):
    problems = load_dataset("folio", data_root)
    assert len(problems) == 204
    assert Counter(p.label for p in problems) == {PROVED: 72, DISPROVED: 63, UNKNOWN: 69}
    first = problems[0]
    assert first.id == "folio-validation_0"
    assert len(first.facts) == 6 and first.facts[5].id == "fact6"
    assert first.hypothesis == "Bonnie performs in school talent shows often."
    assert first.label == UNKNOWN
    assert first.meta["fol"]["conclusion"] == "Engaged(bonnie)"  # FOLIO's FOL, not FLD notation
    assert first.formulas == {}
    assert first.meta["source"].endswith("folio-validation.jsonl line 1")


def test_logic_lm_folio_copy_has_the_same_204_labels_and_drops_the_question_prefix(data_root):
    problems = load_dataset("folio", data_root / "folio" / "Logic-LLM_data_FOLIO" / "dev.json")
    assert len(problems) == 204
    assert Counter(p.label for p in problems) == {PROVED: 72, DISPROVED: 63, UNKNOWN: 69}
    assert problems[0].id == "FOLIO_dev_0"
    assert problems[0].hypothesis == "Bonnie performs in school talent shows often."
    assert len(problems[0].facts) == 6


def test_multi_logieval_default_is_the_papers_390_items_of_depth_4_and_5(data_root):
    problems = load_dataset("multi_logieval", data_root)
    assert len(problems) == 390
    assert Counter(p.depth for p in problems) == {4: 280, 5: 110}
    assert Counter(p.meta["logic"] for p in problems) == {"fol": 165, "pl": 165, "nm": 60}
    assert Counter(p.label for p in problems) == {PROVED: 300, DISPROVED: 90}
    assert len({p.id for p in problems}) == 390


def test_multi_logieval_cp1252_file_is_decoded_and_recorded(data_root):
    problems = load_dataset("multi_logieval", data_root, depths=(5,), logic_types=("pl",))
    cp1252 = [p for p in problems if p.meta["encoding"] == "cp1252"]
    assert len(problems) == 45 and len(cp1252) == 15
    assert {p.meta["rule"] for p in cp1252} == {"BD_C_DS_MP_MP"}
    assert any("°" in f.text for p in cp1252 for f in p.facts)  # byte 0xb0 in cp1252


def test_multi_logieval_nm_capitalised_yes_no_map_to_proved_disproved(data_root):
    problems = load_dataset("multi_logieval", data_root, depths=(4,), logic_types=("nm",))
    assert len(problems) == 40
    last = problems[-1]
    assert last.id == "d4_nm_d4_2_20" and last.depth == 4
    assert {p.label for p in problems} == {PROVED, DISPROVED}


def test_multi_logieval_missing_depth_folder_is_an_error_not_an_empty_list(data_root):
    with pytest.raises(DataNotFoundError, match=r"d3_Data"):
        load_dataset("multi_logieval", data_root, depths=(3,))


def test_prontoqa_dev_has_500_items_258_true_242_false_all_five_hops(data_root):
    problems = load_dataset("prontoqa", data_root)
    assert len(problems) == 500
    assert Counter(p.label for p in problems) == {PROVED: 258, DISPROVED: 242}
    assert {p.depth for p in problems} == {5}
    first = problems[0]
    assert first.hypothesis == "Max is sour."
    assert first.label == DISPROVED
    assert first.facts[17].text == "Max is a yumpus."
    assert first.proof == (
        "fact18 & fact4 -> int1: Max is a dumpus.; int1 & fact6 -> int2: Max is a wumpus.; "
        "int2 & fact8 -> int3: Max is an impus.; int3 & fact10 -> int4: Max is a tumpus.; "
        "int4 & fact12 -> ¬hypothesis;"
    )
    assert len(first.meta["explanation"]) == 11
    assert all(p.proof is not None for p in problems)


def test_fld_v02_record_loads_with_renamed_ids_and_formulas(data_root):
    (problem,) = load_dataset("fld", data_root)
    assert problem.label == PROVED and problem.depth == 6
    assert [f.id for f in problem.facts] == [f"fact{i}" for i in range(1, 7)]
    assert problem.meta["original_ids"] == [f"sent{i}" for i in range(1, 7)]
    assert problem.formulas["fact2"] == "(x): ¬({B}x & {D}x) -> ¬{D}x"
    assert problem.formulas["hypothesis"] == "(¬{C}{c} & {D}{c})"
    assert problem.formulas["int2"] == "#F#"
    assert problem.formulas["assump1"] == "(¬{AA}{a} & ¬{AB}{a})"
    assert problem.proof.startswith("void -> assump1: Let's assume")
    assert "fact1 & assump1 -> int1:" in problem.proof and "sent" not in problem.proof
    assert problem.proof.endswith("int5 & fact3 -> hypothesis;")


def test_data_dir_env_var_is_the_default_location(data_root, monkeypatch):
    monkeypatch.setenv("FINELOGIC_DATA_DIR", str(data_root))
    assert len(load_dataset("prontoqa")) == 500


# ---------------------------------------------------------------- formats from hand-made fixtures


def test_fld_renames_sent_ids_by_position_consistently_in_the_proof(tmp_path):
    record = {"hypothesis": "C.", "context": "sent2: B holds. sent1: A holds.",
              "context_formula": "sent2: {B}{a} sent1: {A}{a}", "proofs": ["sent1 & sent2 -> hypothesis;"],
              "world_assump_label": "PROVED", "depth": 1}
    (problem,) = load_dataset("fld", write_jsonl(tmp_path / "test.jsonl", [record]))
    assert [(f.id, f.text) for f in problem.facts] == [("fact1", "B holds."), ("fact2", "A holds.")]
    assert problem.proof == "fact2 & fact1 -> hypothesis;"
    assert problem.formulas == {"fact1": "{B}{a}", "fact2": "{A}{a}"}


def test_fldx2_fields_facts_steps_and_proof_label(tmp_path):
    record = {"hypothesis": "the cat is not red.", "hypothesis_formula": "¬{A}{a}",
              "facts": "fact1: the cat is blue. fact2: if the cat is blue it is not red.",
              "facts_formula": "fact1: {B}{a} fact2: {B}{a} -> ¬{A}{a}",
              "steps": ["fact1 & fact2 -> hypothesis;"], "proof_label": "__DISPROVED__", "depth": None}
    (problem,) = load_dataset("fld", write_jsonl(tmp_path / "x2.jsonl", [record]))
    assert problem.label == DISPROVED and problem.depth is None
    assert problem.proof == "fact1 & fact2 -> hypothesis;"
    assert problem.formulas["fact2"] == "{B}{a} -> ¬{A}{a}" and problem.formulas["hypothesis"] == "¬{A}{a}"
    assert problem.meta["format"] == "FLDx2"


def test_folio_v2_newline_premises_and_train_unknown_label(tmp_path):
    records = [
        {"story_id": 7, "example_id": 21, "premises": "All birds fly.\nTweety is a bird.",
         "premises-FOL": "∀x (Bird(x) → Fly(x))\nBird(tweety)", "conclusion": "Tweety flies.",
         "conclusion-FOL": "Fly(tweety)", "label": "True"},
        {"id": 3, "premises": ["P."], "premises-FOL": ["p"], "conclusion": "Q.", "conclusion-FOL": "q",
         "label": "Unknown"},
    ]
    v2, train = load_dataset("folio", write_jsonl(tmp_path / "folio_v2_sample.jsonl", records))
    assert v2.id == "21" and v2.meta["story_id"] == 7 and v2.meta["format"] == "v2"
    assert [f.text for f in v2.facts] == ["All birds fly.", "Tweety is a bird."]
    assert v2.label == PROVED and v2.meta["fol"]["premises"] == ["∀x (Bird(x) → Fly(x))", "Bird(tweety)"]
    assert train.label == UNKNOWN and train.meta["format"] == "v0.0"


def test_logicmark_card_example_round_trips_through_the_loader(tmp_path):
    path = tmp_path / "logicmark.json"
    path.write_text(json.dumps([CARD_RECORD]), encoding="utf-8")
    (problem,) = load_dataset("logicmark", path)
    assert [f.text for f in problem.facts] == ["a = b", "b != c", "a = d"]
    assert problem.options == ("a != c", "d = c", "b = d", "a = c")
    assert problem.answer_index == 0 and problem.depth == 2 and problem.label is None
    assert to_record(problem) == CARD_RECORD
    (again,) = load_dataset("logicmark", write_jsonl(tmp_path / "logicmark.jsonl", [CARD_RECORD]))
    assert to_record(again) == CARD_RECORD


def test_split_sentences_breaks_after_a_full_stop_before_a_capital():
    assert split_sentences("Max is a cat. Cats are red.  Is he? Yes. e.g. not here") == [
        "Max is a cat.", "Cats are red.", "Is he?", "Yes. e.g. not here"]


# The authors' merged evaluation files (YujunZhou/Logical data/eval/*.json): a JSON list, one item per
# problem, with the benchmark's own fields plus ``proof_label`` and ``input`` (the text the model saw).
# These items are our own, written in exactly the released shapes; each comment names the real-file
# property it mirrors.

# DataSet2-FOLIO.json: "Premise"/"Conclusion" hold FOL, "ori_premises" the English; input lines
# "Fact1:<text>." (no space after the colon, sentences keep their period), then "Hypothesis:<text>".
PAPER_FOLIO = {
    "Symbol Mapping": {"Bird(x)": "x is a bird", "Fly(x)": "x flies"},
    "Premise": {"P1": "∀x (Bird(x) → Fly(x))", "P2": "Bird(tweety)"},
    "Conclusion": "Fly(tweety)",
    "Label": "True",
    "ori_premises": ["All birds fly.", "Tweety is a bird."],
    "ori_conclusion": "Tweety flies.",
    "metadata": "FOLIO_1",
    "proof_label": "__PROVED__",
    "input": "Fact1:All birds fly.\nFact2:Tweety is a bird.\nHypothesis:Tweety flies.",
}
# Dataset3-Multi-LogiEval.json: integer ids, "answer" yes/no, "proof_label" __YES__/__NO__, input lines
# "Fact 1: <text>" (a space before the number, no final period), then "Question: <question>".
PAPER_MULTI_LOGIEVAL = {
    "id": 7,
    "context": "If Ann bakes, the kitchen smells of bread. Ann bakes.",
    "question": "Does the kitchen smell of bread?",
    "answer": "yes",
    "hypothesis": "The kitchen smells of bread.",
    "proof_label": "__YES__",
    "input": "Fact 1: If Ann bakes, the kitchen smells of bread\nFact 2: Ann bakes\n"
             "Question: Does the kitchen smell of bread?",
}
# Dataset4-ProntoQA.json: the Logic-LM fields plus proof_label and input. The input's facts have no final
# period (the explanation's sentences do), the first has no space after "Fact1:", and the list ends with
# an empty label ("Fact4:" here; "Fact19:" in the real file) before "Hypothesis: ...".
PAPER_PRONTOQA = {
    "id": "ProntoQA_1",
    "context": "Each gorpus is a lempus. Lempuses are not blue. Rex is a gorpus.",
    "question": "Is the following statement true or false? Rex is blue.",
    "options": ["A) True", "B) False"],
    "answer": "B",
    "explanation": ["Rex is a gorpus.", "Each gorpus is a lempus.", "Rex is a lempus.",
                    "Lempuses are not blue.", "Rex is not blue."],
    "proof_label": "__DISPROVED__",
    "input": "Fact1:Each gorpus is a lempus\nFact2: Lempuses are not blue\nFact3: Rex is a gorpus\nFact4:\n"
             "Hypothesis: Rex is blue.",
}
# Dataset1-FLD.json (not in the public snapshot; its shape from the released scripts): "original_data"
# holds the FLD record with "facts", "hypothesis", "proof_label" and "steps", the proof's depth that the
# Table 5 script buckets by ("__UNKNOWN__"/"UNKNOWN" items form their own bucket).
PAPER_FLD = {
    "input": "Fact1: the cat is red.\nFact2: if the cat is red then the cat sleeps.\nHypothesis: the cat sleeps.",
    "proof_label": "__PROVED__",
    "original_data": {"facts": "fact1: the cat is red. fact2: if the cat is red then the cat sleeps.",
                      "hypothesis": "the cat sleeps.", "proof_label": "__PROVED__", "steps": 1},
}
PAPER_FLD_UNKNOWN = {
    "input": "Fact1: the dog is blue.\nHypothesis: the cat sleeps.",
    "proof_label": "__UNKNOWN__",
    "original_data": {"facts": "fact1: the dog is blue.", "hypothesis": "the cat sleeps.",
                      "proof_label": "UNKNOWN", "steps": 3},
}


def write_paper_file(path: Path, items: list) -> Path:
    path.write_text(json.dumps(items, indent=4, ensure_ascii=False), encoding="utf-8")  # as released
    return path


def test_paper_eval_infers_each_items_dataset_from_its_fields(tmp_path):
    path = write_paper_file(tmp_path / "merged.json", [PAPER_FLD, PAPER_FOLIO, PAPER_MULTI_LOGIEVAL, PAPER_PRONTOQA])
    fld, folio, mle, pronto = load_dataset("paper_eval", path)
    assert [p.dataset for p in (fld, folio, mle, pronto)] == ["fld", "folio", "multi_logieval", "prontoqa"]
    assert [p.label for p in (fld, folio, mle, pronto)] == [PROVED, PROVED, PROVED, DISPROVED]


def test_paper_folio_items_read_fact_lines_without_a_space_after_the_colon(tmp_path):
    (problem,) = load_dataset("paper_eval", write_paper_file(tmp_path / "folio_part.json", [PAPER_FOLIO]))
    assert [(f.id, f.text) for f in problem.facts] == [("fact1", "All birds fly."), ("fact2", "Tweety is a bird.")]
    assert problem.hypothesis == "Tweety flies." and problem.depth is None


def test_paper_multi_logieval_reads_fact_n_with_a_space_and_the_question_line(tmp_path):
    no = {**PAPER_MULTI_LOGIEVAL, "id": 8, "answer": "no", "proof_label": "__NO__"}
    yes, no = load_dataset("paper_eval", write_paper_file(tmp_path / "multi_logieval_part.json",
                                                          [PAPER_MULTI_LOGIEVAL, no]))
    assert [(f.id, f.text) for f in yes.facts] == [("fact1", "If Ann bakes, the kitchen smells of bread"),
                                                   ("fact2", "Ann bakes")]
    assert yes.hypothesis == "Does the kitchen smell of bread?"
    assert (yes.id, yes.label, no.id, no.label) == ("7", PROVED, "8", DISPROVED)


@pytest.mark.parametrize("spelling", ["Fact1:", "Fact 1:", "fact 1:", "FACT1 :"])
def test_paper_fact_labels_read_in_every_spelling(tmp_path, spelling):
    item = {**PAPER_MULTI_LOGIEVAL, "input": f"{spelling} Ann bakes\nQuestion: Does Ann bake?"}
    (problem,) = load_dataset("paper_eval", write_paper_file(tmp_path / "m.json", [item]))
    assert [(f.id, f.text) for f in problem.facts] == [("fact1", "Ann bakes")]


def test_paper_prontoqa_drops_the_empty_last_fact_and_matches_its_explanation_without_periods(tmp_path):
    (problem,) = load_dataset("paper_eval", write_paper_file(tmp_path / "prontoqa_part.json", [PAPER_PRONTOQA]))
    assert [f.text for f in problem.facts] == ["Each gorpus is a lempus", "Lempuses are not blue", "Rex is a gorpus"]
    assert problem.hypothesis == "Rex is blue." and problem.depth == 2
    assert problem.proof == "fact3 & fact1 -> int1: Rex is a lempus.; int1 & fact2 -> ¬hypothesis;"


def test_paper_prontoqa_explanation_citing_no_fact_fails_naming_the_item(tmp_path):
    item = {**PAPER_PRONTOQA, "id": "ProntoQA_9",
            "explanation": ["Rex is a gorpus.", "Every gorpus is a lempus.", "Rex is a lempus.",
                            "Lempuses are not blue.", "Rex is not blue."]}
    path = write_paper_file(tmp_path / "prontoqa_part.json", [PAPER_PRONTOQA, item])
    with pytest.raises(DatasetFormatError, match=r"item 1 \(id 'ProntoQA_9'\): field 'explanation': no gold "
                                                 r"proof.*'Every gorpus is a lempus\.'"):
        load_dataset("paper_eval", path)


def test_an_empty_fact_between_others_is_an_error(tmp_path):
    item = {**PAPER_PRONTOQA, "input": "Fact1: Rex is a gorpus\nFact2:\nFact3: Lempuses are not blue\n"
                                       "Hypothesis: Rex is blue."}
    with pytest.raises(DatasetFormatError, match=r"empty fact\(s\) fact2 between other facts"):
        load_dataset("paper_eval", write_paper_file(tmp_path / "p.json", [item]))


def test_paper_fld_depth_is_original_steps_and_unknown_items_have_none(tmp_path):
    proved, unknown = load_dataset("paper_eval", write_paper_file(tmp_path / "Dataset1-FLD.json",
                                                                  [PAPER_FLD, PAPER_FLD_UNKNOWN]))
    assert (proved.dataset, proved.label, proved.depth) == ("fld", PROVED, 1)
    assert [f.text for f in proved.facts] == ["the cat is red.", "if the cat is red then the cat sleeps."]
    assert (unknown.label, unknown.depth) == (UNKNOWN, None)


def test_paper_fld_record_with_a_proof_in_steps_keeps_its_depth_and_proof(tmp_path):
    item = {**PAPER_FLD, "original_data": {**PAPER_FLD["original_data"], "depth": 1,
                                           "steps": ["fact1 & fact2 -> hypothesis;"]}}
    (problem,) = load_dataset("paper_eval", write_paper_file(tmp_path / "x.json", [item]))
    assert problem.depth == 1 and problem.proof == "fact1 & fact2 -> hypothesis;"


def merged_multi_logieval() -> list[dict]:
    """Dataset3-Multi-LogiEval.json's shape: 25 rule files joined in order, each numbered from 1 (22 fol/pl files
    of 15 items answered yes/no, 3 nm files of 20 answered Yes/No), 300 yes and 90 no in all."""
    items = []
    for file, size in enumerate([15] * 22 + [20] * 3):
        for number in range(1, size + 1):
            yes = number % 2 == 1 if size == 20 else not (file < 20 and number in (3, 8, 13))
            answer = ("Yes" if yes else "No") if size == 20 else ("yes" if yes else "no")
            facts = [f"If Ann bakes loaf {file}-{number}, the kitchen smells of bread",
                     f"Ann {'bakes' if yes else 'does not bake'} loaf {file}-{number}"]
            question = f"Does the kitchen smell of bread from loaf {file}-{number}?"
            items.append({"id": number, "context": ". ".join(facts) + ".", "question": question, "answer": answer,
                          "hypothesis": f"The kitchen smells of bread from loaf {file}-{number}.",
                          "proof_label": "__YES__" if yes else "__NO__",
                          "input": "\n".join(f"Fact {i}: {f}" for i, f in enumerate(facts, 1))
                                   + f"\nQuestion: {question}"})
    return items


@pytest.mark.parametrize("strict", [True, False])
def test_the_merged_multi_logieval_file_loads_all_390_items_in_file_order_despite_repeated_ids(tmp_path, strict):
    items = merged_multi_logieval()
    path = write_paper_file(tmp_path / "Dataset3-Multi-LogiEval.json", items)
    problems = load_dataset("paper_eval", path, strict=strict)
    assert len(problems) == 390 and problems.skipped == []
    assert Counter(p.label for p in problems) == {PROVED: 300, DISPROVED: 90}
    # ids by position, as the released code reads the file; each record's own id kept in meta["original"]
    assert [p.id for p in problems[14:16]] == ["multi_logieval_14", "multi_logieval_15"]
    assert [p.meta["original"]["id"] for p in problems[14:16]] == [15, 1]
    assert [p.meta["input"] for p in problems] == [item["input"] for item in items]


def test_a_published_merged_file_that_keeps_fewer_items_than_published_says_so(tmp_path):
    items = merged_multi_logieval()
    items[200] = {**items[200], "proof_label": "__MAYBE__"}
    path = write_paper_file(tmp_path / "Dataset3-Multi-LogiEval.json", items)
    problems = load_dataset("paper_eval", path, strict=False)
    assert len(problems) == 389
    assert [where for where, _ in problems.skipped] == [f"{path} item 200 (id 6)", str(path)]
    assert problems.skipped[1][1] == "389 of its 390 published items kept (the others are listed as skipped)"


def test_ids_repeated_across_two_merged_files_are_still_an_error(tmp_path):
    first = write_paper_file(tmp_path / "a.json", [PAPER_MULTI_LOGIEVAL])
    write_paper_file(tmp_path / "b.json", [{**PAPER_MULTI_LOGIEVAL, "answer": "no", "proof_label": "__NO__"}])
    with pytest.raises(DatasetFormatError, match=rf"b\.json item 0 \(id 7\): id '7' is already the id of {first}"):
        load_dataset("paper_eval", tmp_path)


PAPER_FILES = {"DataSet2-FOLIO.json": (203, {PROVED: 72, DISPROVED: 62, UNKNOWN: 69}),
               "Dataset3-Multi-LogiEval.json": (390, {PROVED: 300, DISPROVED: 90}),
               "Dataset4-ProntoQA.json": (500, {PROVED: 258, DISPROVED: 242})}


@pytest.mark.parametrize("name", sorted(PAPER_FILES))
def test_the_released_merged_files_load_whole(name):
    """Runs where the authors' files sit in ``$FINELOGIC_PAPER_EVAL_DIR`` (never copied into this repository)."""
    import os

    folder = Path(os.environ.get("FINELOGIC_PAPER_EVAL_DIR", "/nonexistent"))
    if not (folder / name).is_file():
        pytest.skip(f"{name} not found in $FINELOGIC_PAPER_EVAL_DIR")
    problems = load_dataset("paper_eval", folder / name)
    size, labels = PAPER_FILES[name]
    assert len(problems) == size and Counter(p.label for p in problems) == labels
    assert len({p.id for p in problems}) == size
    assert len(load_dataset("paper_eval", folder / name, strict=False)) == size
    assert all(f.text for p in problems for f in p.facts)
    if name == "Dataset4-ProntoQA.json":
        assert all(p.proof for p in problems) and {p.depth for p in problems} == {5}


# ---------------------------------------------------------------- errors name file, line/item and field


def test_missing_field_names_file_line_and_field(tmp_path):
    good = {"premises": ["P."], "conclusion": "Q.", "label": "True"}
    path = write_jsonl(tmp_path / "folio-validation.jsonl", [good] * 16 + [{"premises": ["P."], "label": "True"}])
    with pytest.raises(DatasetFormatError, match=r"folio-validation\.jsonl line 17: missing field 'conclusion'"):
        load_dataset("folio", path)


def test_truncated_json_names_file_and_position(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([CARD_RECORD, CARD_RECORD], indent=1)[:-40], encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"dev\.json line \d+ column \d+: invalid JSON.*truncated"):
        load_dataset("logicmark", path)


def test_truncated_last_jsonl_line_names_the_line(tmp_path):
    path = tmp_path / "lm.jsonl"
    path.write_text(json.dumps(CARD_RECORD) + "\n" + json.dumps(CARD_RECORD)[:30] + "\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"lm\.jsonl line 2: invalid JSON"):
        load_dataset("logicmark", path)


def test_bytes_that_are_neither_utf8_nor_cp1252_name_the_file(tmp_path):
    folder = tmp_path / "data" / "d4_Data" / "fol"
    folder.mkdir(parents=True)
    bad = folder / "BD_C_DS_MP.json"
    bad.write_bytes(b'{"logic": "fol", "rule": "BD", "depth": "d4", "samples": [{"context": "\x81\x8d"}]}')
    for logic in ("pl", "nm"):
        (tmp_path / "data" / "d4_Data" / logic).mkdir()
    with pytest.raises(DatasetFormatError, match=r"BD_C_DS_MP\.json: undecodable bytes.*0x81.*cp1252"):
        load_dataset("multi_logieval", tmp_path, depths=(4,), logic_types=("fol",))


def test_cp1252_fallback_is_recorded_per_item(tmp_path):
    path = tmp_path / "d4.json"
    path.write_bytes(b'{"logic": "pl", "rule": "MP", "depth": "d4", "samples": [{"id": 1, '
                     b'"context": "It is 30\xb0 outside. If hot, swim.", "question": "Swim?", "answer": "Yes"}]}')
    (problem,) = load_dataset("multi_logieval", path)
    assert problem.meta["encoding"] == "cp1252"
    assert problem.facts[0].text == "It is 30° outside." and problem.label == PROVED and problem.depth == 4


def test_empty_file_is_named(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text("  \n", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"dev\.json: empty file"):
        load_dataset("prontoqa", path)


def test_item_errors_name_the_item_index_and_id(tmp_path):
    path = tmp_path / "lm.json"
    path.write_text(json.dumps([CARD_RECORD, {**CARD_RECORD, "id": "x7", "answer": "a = c"}]), encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"lm\.json item 1 \(id 'x7'\): field 'answer'"):
        load_dataset("logicmark", path)


def test_unknown_label_names_the_field_and_value(tmp_path):
    path = write_jsonl(tmp_path / "f.jsonl", [{"premises": ["P."], "conclusion": "Q.", "label": "Maybe"}])
    with pytest.raises(DatasetFormatError, match=r"f\.jsonl line 1: field 'label': unknown label 'Maybe'"):
        load_dataset("folio", path)


def test_non_strict_skips_bad_items_and_reports_every_one(tmp_path, caplog):
    records = [{"premises": ["P."], "conclusion": "Q.", "label": "True"},
               {"premises": ["P."], "label": "True"},
               {"premises": ["P."], "conclusion": "Q.", "label": "Maybe"}]
    path = write_jsonl(tmp_path / "f.jsonl", records)
    with caplog.at_level(logging.WARNING, logger="finelogic.data.loaders"):
        problems = load_dataset("folio", path, strict=False)
    assert isinstance(problems, LoadedDataset) and len(problems) == 1
    assert [(loc.split("/")[-1], reason.split(" (")[0]) for loc, reason in problems.skipped] == [
        ("f.jsonl line 2", "missing field 'conclusion'"),
        ("f.jsonl line 3", "field 'label': unknown label 'Maybe'"),
    ]
    assert "skipped 2 bad item(s)" in caplog.text


def test_non_strict_reports_an_unreadable_file_as_skipped(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text("", encoding="utf-8")
    problems = load_dataset("prontoqa", path, strict=False)
    assert problems == [] and problems.skipped == [(str(path), "empty file")]


def test_no_local_files_and_offline_says_where_to_put_them(tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_DATA_DIR", str(tmp_path))
    with pytest.raises(DataNotFoundError) as error:
        load_dataset("folio")
    message = str(error.value)
    assert "folio/folio-validation.jsonl" in message and "FINELOGIC_DATA_DIR" in message
    assert "HF_HUB_OFFLINE" in message
    assert isinstance(error.value, FileNotFoundError)


def test_unset_data_dir_and_no_hub_copy_raises_for_prontoqa():
    with pytest.raises(DataNotFoundError, match=r"prontoqa/dev\.json.*FINELOGIC_DATA_DIR"):
        load_dataset("prontoqa")


def test_unknown_dataset_name_is_rejected():
    with pytest.raises(ValueError, match="unknown dataset 'gsm8k'"):
        load_dataset("gsm8k")


# ---------------------------------------------------------------- Table 1


def test_table1_summary_of_the_real_sets(data_root):
    from finelogic.data.stats import dataset_summary

    table = dataset_summary({name: load_dataset(name, data_root)
                             for name in ("folio", "multi_logieval", "prontoqa")}).set_index("dataset")
    assert table["samples"].to_dict() == {"folio": 204, "multi_logieval": 390, "prontoqa": 500}
    assert table["label_types"].to_dict() == {"folio": "{T, F, Unknown}", "multi_logieval": "{T, F}",
                                              "prontoqa": "{T, F}"}
    assert table.loc["folio", ["PROVED", "DISPROVED", "UNKNOWN"]].tolist() == [72, 63, 69]
    assert table.loc["multi_logieval", "depths"] == "4: 280, 5: 110"
    assert table.loc["folio", "depths"] == "None: 204"


def test_table1_summary_counts_labels_options_and_depths():
    from finelogic.data import generate
    from finelogic.data.stats import dataset_summary

    table = dataset_summary({"prontoqa": generate("prontoqa", n=10, seed=3),
                             "logicmark": generate("logicmark", n=10, seed=0)})
    pronto, mark = table.to_dict("records")
    assert pronto == {"dataset": "prontoqa", "samples": 10, "label_types": "{T, F}", "PROVED": 5,
                      "DISPROVED": 5, "UNKNOWN": 0, "multiple_choice": 0, "min_depth": 1, "max_depth": 5,
                      "depths": "1: 2, 2: 2, 3: 2, 4: 2, 5: 2"}
    assert mark["label_types"] == "{4 options}" and mark["multiple_choice"] == 10 and mark["PROVED"] == 0
    assert mark["depths"] == "1: 1, 2: 4, 3: 3, 4: 1, 5: 1"  # 10 x (.1, .4, .25, .15, .1), largest remainder


def test_record_converters_are_usable_alone_and_raise_format_errors():
    from finelogic.data.loaders.fld import fld_problem
    from finelogic.data.loaders.logicmark import logicmark_problem

    with pytest.raises(DatasetFormatError, match="missing field 'hypothesis'"):
        fld_problem({"context": "sent1: a."}, problem_id="x")
    with pytest.raises(DatasetFormatError, match=r"field 'context': expected 'If:"):
        logicmark_problem({**CARD_RECORD, "context": "a = b\nThen"})
    assert logicmark_problem(CARD_RECORD).depth == 2


def test_hub_is_used_only_when_online_and_rows_go_through_the_same_converter(monkeypatch, tmp_path):
    import sys
    import types

    calls = []

    def fake_load_dataset(repo, split):
        calls.append((repo, split))
        return [CARD_RECORD]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=fake_load_dataset))
    monkeypatch.setenv("FINELOGIC_DATA_DIR", str(tmp_path))  # empty: nothing local
    with pytest.raises(DataNotFoundError):
        load_dataset("logicmark")  # offline (autouse fixture): the hub is not tried
    assert calls == []
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    monkeypatch.setenv("FINELOGIC_OFFLINE", "0")  # online without probing the network
    (problem,) = load_dataset("logicmark")
    assert calls == [("AxiomicLabs/LogicMark", "train")]
    assert to_record(problem) == CARD_RECORD
    assert problem.meta["source"] == "hf:AxiomicLabs/LogicMark[train] item 0 (id 'symbolic_00042')"


def test_a_root_without_the_datasets_folder_is_not_searched_for_stray_files(data_root):
    with pytest.raises(DataNotFoundError, match=r"no logicmark files in .*logicmark/\*\.json"):
        load_dataset("logicmark", data_root)


# ---------------------------------------------------------------- corrupted inputs are errors, not silent


def test_data_dir_pointing_to_a_missing_folder_is_an_error(tmp_path, monkeypatch):
    from finelogic.data.datasets import DataDirError
    from finelogic.data.suites import evaluation_sets

    monkeypatch.setenv("FINELOGIC_DATA_DIR", str(tmp_path / "nonexistent"))
    with pytest.raises(DataDirError, match=r"FINELOGIC_DATA_DIR=.*nonexistent: no such folder"):
        load_dataset("prontoqa")
    with pytest.raises(DataDirError):  # not "not present" plus generated stand-ins
        evaluation_sets({"fld": {"name": "fld", "n": 1}, "prontoqa_generated": {"n": 2}}, seed=0)


def test_a_published_file_cut_at_a_line_boundary_is_reported(data_root, tmp_path):
    lines = (data_root / "folio" / "folio-validation.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "folio" / "folio-validation.jsonl"
    cut.parent.mkdir()
    cut.write_text("".join(lines[:150]), encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"folio-validation\.jsonl: 150 items where the published file "
                                                 r"has 204; cut short"):
        load_dataset("folio", tmp_path)
    loose = load_dataset("folio", tmp_path, strict=False)
    assert len(loose) == 150 and loose.skipped == [(str(cut), "150 items where the published file has 204; "
                                                              "cut short or edited?")]


def test_a_missing_multi_logieval_file_is_named_not_silently_skipped(data_root, tmp_path):
    import shutil

    copy = tmp_path / "multi_logieval"
    shutil.copytree(data_root / "multi_logieval", copy)
    (copy / "data" / "d4_Data" / "pl" / "HS_MT_DS_MP.json").unlink()
    gone = copy / "data" / "d4_Data" / "pl" / "HS_MT_DS_MP.json"
    with pytest.raises(DataNotFoundError, match=rf"1 published file\(s\) missing.*: {gone}$"):
        load_dataset("multi_logieval", tmp_path)
    assert len(load_dataset("multi_logieval", tmp_path, strict=False)) == 375
    assert len(load_dataset("multi_logieval", tmp_path, depths=(5,))) == 110  # a selection without the gap


def test_utf8_with_a_stray_latin1_byte_names_the_file_and_offset(tmp_path):
    record = {"context": "Zoë is a wumpus. Café owners are red.", "question": "Is the following statement "
              "true or false? Zoë is red.", "answer": "A"}
    raw = json.dumps([record], ensure_ascii=False).encode("utf-8")
    offset = raw.index("Café".encode("utf-8")) + 3
    path = tmp_path / "dev.json"
    path.write_bytes(raw[:offset] + "é".encode("latin-1") + raw[offset + 2:])  # one é re-encoded as latin-1
    with pytest.raises(DatasetFormatError, match=rf"dev\.json: mixed encodings: .*byte 0xe9 at offset {offset}"):
        load_dataset("prontoqa", path)


def test_a_folder_where_a_file_is_expected_is_an_error_not_a_fall_back(data_root, tmp_path):
    import shutil

    shutil.copytree(data_root / "folio" / "Logic-LLM_data_FOLIO", tmp_path / "folio" / "Logic-LLM_data_FOLIO")
    (tmp_path / "folio" / "folio-validation.jsonl").mkdir()
    with pytest.raises(DatasetFormatError, match=r"folio-validation\.jsonl: is a folder, expected a file"):
        load_dataset("folio", tmp_path)
    (tmp_path / "prontoqa" / "dev.json").mkdir(parents=True)
    with pytest.raises(DatasetFormatError, match=r"dev\.json: is a folder"):
        load_dataset("prontoqa", tmp_path)


@pytest.mark.parametrize("name", ["fld", "prontoqa", "logicmark"])
def test_a_negative_number_of_problems_is_refused(name):
    from finelogic.data import generate
    from finelogic.data.generators.fld import generate_fld

    with pytest.raises(ValueError, match="n must be 0 or more, got -3"):
        generate(name, n=-3)
    with pytest.raises(ValueError, match="n must be 0 or more, got -3"):
        generate_fld(-3, seed=0)


def test_a_flipped_prontoqa_answer_is_caught_against_its_explanation(tmp_path):
    flipped = {**PAPER_PRONTOQA, "id": "ProntoQA_3", "answer": "A", "proof_label": "__PROVED__"}
    with pytest.raises(DatasetFormatError, match=r"id 'ProntoQA_3'\): field 'answer': PROVED disagrees with the "
                                                 r"explanation, which concludes 'Rex is not blue\.'"):
        load_dataset("paper_eval", write_paper_file(tmp_path / "p.json", [flipped]))
    logic_lm = {k: PAPER_PRONTOQA[k] for k in ("id", "context", "question", "options", "explanation")}
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([{**logic_lm, "answer": "A"}]), encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="field 'answer': PROVED disagrees"):
        load_dataset("prontoqa", path, strict=True)


def test_paper_items_keep_their_input_text_for_the_released_prompt_layout(tmp_path):
    (problem,) = load_dataset("paper_eval", write_paper_file(tmp_path / "prontoqa_part.json", [PAPER_PRONTOQA]))
    assert problem.meta["input"] == PAPER_PRONTOQA["input"]
