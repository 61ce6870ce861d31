"""Drawing probing problems: the quick usable-point check agrees with counting every NSD candidate."""
from __future__ import annotations

from finelogic.eval.probing_data import ProofLogic, pairs_possible, point_usable, probing_problems, nsd_candidates


def test_point_usable_agrees_with_the_full_candidate_count_at_every_point_of_deep_proofs():
    """``point_usable`` checks only the not-yet steps it needs; its answer is the full count's at each of
    the ~40 points of four depth-10/11 proofs (both answers occur)."""
    answers = []
    for problem in probing_problems(4, 0, (10, 11), distractors=(4, 8), progress=False):
        proof = ProofLogic.of(problem)
        for k in range(1, proof.n_steps):
            yes, no = nsd_candidates(proof, k)
            full = pairs_possible([c.rule_family for c in yes], [c.rule_family for c in no]) >= 3
            assert point_usable(proof, k) == full, (problem.id, k)
            answers.append(full)
    assert len(answers) >= 30 and True in answers and False in answers
