"""The four test sets as a profile asks for them: real where present, labelled stand-ins, never faked."""
from __future__ import annotations

from finelogic.data.suites import evaluation_sets

SMALL = {"fld": {"name": "fld", "n": 3}, "prontoqa_generated": {"n": 4, "hops": (5,)}, "limit": None}


def test_without_real_files_folio_and_multi_logieval_are_not_present_and_prontoqa_is_generated():
    sets = {s.name: s for s in evaluation_sets(SMALL, seed=0)}  # no data folder, offline (conftest)
    assert [len(sets[n].problems) for n in ("fld", "folio", "multi_logieval", "prontoqa")] == [3, 0, 0, 4]
    assert sets["folio"].source == "not present" and not sets["folio"].present
    assert sets["prontoqa"].generated and "generated stand-in" in sets["prontoqa"].source
    assert all(p.depth == 5 for p in sets["prontoqa"].problems)
    assert sets["fld"].generated


def test_with_real_files_every_set_but_fld_is_real_and_complete(shared_data):
    sets = {s.name: s for s in evaluation_sets(SMALL, seed=0, data_dir=shared_data)}
    assert {n: len(s.problems) for n, s in sets.items()} == {"fld": 3, "folio": 204, "multi_logieval": 390,
                                                              "prontoqa": 500}
    assert not any(sets[n].generated for n in ("folio", "multi_logieval", "prontoqa"))
    assert [s.paper_name for s in sets.values()] == ["FLD", "FOLIO", "Multi-LogiEval", "ProntoQA"]


def test_limit_draws_the_same_order_preserving_sample_for_the_same_seed(shared_data):
    limited = dict(SMALL, limit=10)
    first = {s.name: s for s in evaluation_sets(limited, seed=3, data_dir=shared_data)}
    again = {s.name: s for s in evaluation_sets(limited, seed=3, data_dir=shared_data)}
    folio = [p.id for p in first["folio"].problems]
    assert len(folio) == 10 and folio == [p.id for p in again["folio"].problems]
    full_order = [p.id for p in evaluation_sets(SMALL, seed=3, data_dir=shared_data)[1].problems]
    assert folio == [i for i in full_order if i in set(folio)]


def test_the_generated_prontoqa_set_can_be_chosen_over_the_real_file(shared_data):
    from finelogic.data.suites import FLDSet, ProntoQASet, TestSets, evaluation_sets

    real = TestSets(fld=FLDSet("fld", n=3, depths=(1,)), prontoqa_generated=ProntoQASet(n=4, hops=(3,)), limit=2)
    chosen = TestSets(fld=FLDSet("fld", n=3, depths=(1,)), prontoqa_generated=ProntoQASet(n=4, hops=(3,), always=True),
                      limit=2)
    (pq_real,) = [s for s in evaluation_sets(real, data_dir=shared_data) if s.name == "prontoqa"]
    (pq_gen,) = [s for s in evaluation_sets(chosen, data_dir=shared_data) if s.name == "prontoqa"]
    assert not pq_real.generated and len(pq_real.problems) == 2  # the real 5-hop file, limited
    assert pq_gen.generated and len(pq_gen.problems) == 4 and {p.depth for p in pq_gen.problems} == {3}
    assert "3-hop, chosen over the real file" in pq_gen.source
