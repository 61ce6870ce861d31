"""Small, deterministic worked examples for the teaching chapters t1-t4 and their exercises' checks, built on
the package's own pieces (the FLD generator, z3, the symbolic judge, the paper's probe, LogicMark scoring) so
that a student sees what the paper pages compute.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from finelogic.book import figures
from finelogic.book.step_view import verdict_class
from finelogic.data import generate
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.eval.judge_quality import teaching_example
from finelogic.eval.judges import SymbolicJudge
from finelogic.eval.logicmark import NORMALIZATIONS
from finelogic.eval.probing import fit_probe
from finelogic.eval.soundness import judge_responses
from finelogic.eval.steps import problem_formulas
from finelogic.logic import Theory, matches_rule, negate, parse_formula
from finelogic.logic.proof import ProofNotationError, ProofStep, parse_proof_steps
from finelogic.models.spec import open_model

# --- t1: what a multi-step deduction is


def fld_example(seed: int = 0, depth: int = 3, *, n: int = 6, min_distractors: int = 2) -> Problem:
    """The first PROVED FLD-style problem of ``n`` generated with ``seed`` at ``depth`` with at least
    ``min_distractors`` distractors (else the first)."""
    problems = generate("fld", n=n, seed=seed, depths=[depth], labels=[PROVED])
    return next((p for p in problems if len(p.meta.get("distractors", ())) >= min_distractors), problems[0])


def decide_label(problem: Problem, without: Sequence[str] = ()) -> str:
    """PROVED / DISPROVED / UNKNOWN as z3 decides it from the fact formulas without the facts in ``without``."""
    facts = [parse_formula(problem.formulas[f.id]) for f in problem.facts if f.id not in set(without)]
    hypothesis = parse_formula(problem.formulas["hypothesis"])
    with Theory(facts) as theory:
        proves, disproves = theory.entails(hypothesis), theory.entails(negate(hypothesis))
    if proves and disproves:
        raise ValueError(f"{problem.id}: the facts are inconsistent")
    return PROVED if proves else DISPROVED if disproves else UNKNOWN


def facts_table(problem: Problem) -> pd.DataFrame:
    """One row per fact: its sentence and its formula in FLD notation (index: the fact id)."""
    return pd.DataFrame([{"fact": f.id, "sentence": f.text, "formula": problem.formulas.get(f.id, "")}
                         for f in problem.facts]).set_index("fact")


def proof_steps_table(problem: Problem) -> pd.DataFrame:
    """The gold proof, one row per step: premises, conclusion id, its sentence and formula, and the deduction
    rule it applies."""
    formulas = problem_formulas(problem)
    rows = []
    for k, step in enumerate(parse_proof_steps(problem.proof or ""), start=1):
        rules = matches_rule([formulas[p] for p in step.premises], formulas[step.conclusion])
        rows.append({"step": k, "premises": " & ".join(step.premises), "conclusion": step.conclusion,
                     "sentence": step.text or (problem.hypothesis if step.conclusion == "hypothesis"
                                               else "(the negated hypothesis)"),
                     "formula": problem.formulas.get(step.conclusion, "¬(" + problem.formulas["hypothesis"] + ")"),
                     "rule": ", ".join(rules)})
    return pd.DataFrame(rows).set_index("step")


def removal_table(problem: Problem) -> pd.DataFrame:
    """Per fact: its role and the label z3 decides when that one fact is removed (index: the fact id)."""
    cited = {p for s in parse_proof_steps(problem.proof or "") for p in s.premises}
    return pd.DataFrame([{"fact": f.id, "role": "used by the gold proof" if f.id in cited else "distractor",
                          "label without it": decide_label(problem, [f.id])} for f in problem.facts]).set_index("fact")


# --- t2: what makes a step valid, relevant, atomic


def soundness_example(seed: int = 0, depth: int = 5, *, n: int = 4) -> tuple[Problem, str]:
    """A problem with a long gold proof and a teaching response made from it
    (:func:`finelogic.eval.judge_quality.flawed_proof`)."""
    return teaching_example(generate("fld", n=n, seed=seed, depths=[depth], labels=[PROVED]))


def judge_response(problem: Problem, response: str) -> pd.DataFrame:
    """One response judged live by the symbolic judge (:func:`finelogic.eval.soundness.judge_responses` rows,
    plus the step view's ``verdict`` class)."""
    steps = judge_responses(pd.DataFrame({"id": [problem.id], "response": [response]}), {problem.id: problem},
                            SymbolicJudge())
    steps["verdict"] = [verdict_class(v, a, r) for v, a, r in zip(steps["valid"], steps["atomic"], steps["relevant"])]
    return steps


def verdict_table(steps: pd.DataFrame) -> pd.DataFrame:
    """The judged steps as a compact table: step number (1-based), the step, valid / atomic / relevant."""
    view = steps[steps["step"] >= 0]
    return pd.DataFrame({"step": view["step"].astype(int) + 1, "as written": view["raw"],
                         "valid": view["valid"], "atomic": view["atomic"], "relevant": view["relevant"],
                         "verdict": view["verdict"]}).set_index("step")


def first_step_of(steps: pd.DataFrame, verdict: str) -> pd.Series:
    """The first judged step whose ``verdict`` column is ``verdict`` (``sound``, ``non-atomic``, ...)."""
    found = steps[steps["verdict"] == verdict]
    if found.empty:
        raise ValueError(f"no step judged {verdict!r}")
    return found.iloc[0]


def gold_step_for(problem: Problem, conclusion_id: str) -> ProofStep:
    """The gold proof's step that concludes ``conclusion_id``."""
    for step in parse_proof_steps(problem.proof or ""):
        if step.conclusion == conclusion_id:
            return step
    raise KeyError(f"{problem.id}: the gold proof has no step concluding {conclusion_id!r}")


def merged_gold_steps(problem: Problem, premises: Sequence[str], conclusion_id: str) -> list[ProofStep]:
    """The gold steps a merged step ``premises -> conclusion_id`` skipped over (those concluding an id it does
    not cite), then the gold step of its conclusion, in proof order."""
    last = gold_step_for(problem, conclusion_id)
    skipped = {p for p in last.premises if p not in set(premises)}
    return [s for s in parse_proof_steps(problem.proof or "") if s.conclusion in skipped] + [last]


def proof_text(steps: Sequence[ProofStep]) -> str:
    """Steps written as an FLD proof string (``a & b -> int1: text; ...;``)."""
    return "; ".join(s.format() for s in steps) + ";"


# --- t3: what a linear probe can and cannot show

#: Toy tasks: name -> (what the label is, a function of the binary input words).
TOY_TASKS = {
    "word present": ("word 1 occurs in the input", lambda x: x[:, 0]),
    "words differ": ("exactly one of words 1 and 2 occurs (XOR)", lambda x: x[:, 0] ^ x[:, 1]),
    "rare event": ("words 1, 2 and 3 all occur", lambda x: x[:, 0] & x[:, 1] & x[:, 2]),
}
#: Toy "models": name -> whether its features contain the XOR of words 1 and 2 as a computed feature.
TOY_MODELS = {"trained (toy)": True, "random-init (toy)": False}


def toy_features(n: int, seed: int = 0, *, words: int = 6, dim: int = 16, noise: float = 0.3
                 ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(words, features)``: ``n`` rows of ``words`` random bits (an int array) and the hidden states of two toy
    "models" (``{name: (n, dim) float array}``, no language model involved). Both map the words linearly into
    ``dim`` dimensions (their own random matrix) plus Gaussian noise of scale ``noise``; the *trained* one also
    writes the XOR of words 1 and 2 into its state, the *random-init* one does not."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, size=(n, words))
    features = {}
    for k, (name, computes_xor) in enumerate(TOY_MODELS.items()):
        inputs = np.column_stack([x, x[:, 0] ^ x[:, 1]]) if computes_xor else x
        mixing = np.random.default_rng([seed, k]).normal(size=(inputs.shape[1], dim))
        features[name] = inputs @ mixing + noise * rng.normal(size=(n, dim))
    return x, features


def majority_accuracy(train: np.ndarray, test: np.ndarray) -> float:
    """Test accuracy (%) of always predicting the training rows' commoner 0/1 label (ties: 1)."""
    majority = int(2 * np.sum(train) >= len(train))
    return 100 * float(np.mean(np.asarray(test) == majority))


def toy_probe_table(seed: int = 0, *, n_train: int = 300, n_test: int = 300) -> pd.DataFrame:
    """Test accuracy (%) of the paper's linear probe per toy task (rows) and toy model (columns), then
    ``majority class`` and ``positives (%)``."""
    x, features = toy_features(n_train + n_test, seed)
    groups = [f"row{i}" for i in range(n_train)]  # every toy row is its own "problem" for the CV folds
    rows = []
    for task, (_, label_of) in TOY_TASKS.items():
        y = label_of(x).astype(int)
        row = {"task": task}
        for name, h in features.items():
            probe = fit_probe(h[:n_train], y[:n_train], groups, seed=seed)
            row[name] = 100 * float(np.mean(probe.predict(h[n_train:]) == y[n_train:]))
        row["majority class"] = majority_accuracy(y[:n_train], y[n_train:])
        row["positives (%)"] = 100 * float(np.mean(y[n_train:]))
        rows.append(row)
    return pd.DataFrame(rows).set_index("task")


# --- t4: how log-likelihood multiple choice works


class PremiseBigramScorer:
    """A tiny deterministic stand-in for a language model with the verb ``loglikelihood``: each character is a
    token, scored by add-one smoothed character-bigram counts of the *context itself*, so it prefers
    continuations whose pairs occur in the premises. No knowledge, no reasoning: it shows the mechanics of
    scoring in a second, offline."""

    name = "premise-bigram scorer (toy, not a language model)"
    alphabet = 95  # printable ASCII characters, incl. the space

    def loglikelihood(self, requests: Sequence[tuple[str, str]]) -> list[tuple[float, int, bool]]:
        """``(context, continuation)`` pairs -> ``(sum of log-probs in nats, tokens, greedy)`` per pair."""
        out = []
        for context, continuation in requests:
            pairs = Counter(zip(context, context[1:]))
            starts = Counter(context[:-1])
            total, greedy, previous = 0.0, True, context[-1] if context else ""
            for char in continuation:
                total += math.log((pairs[previous, char] + 1) / (starts[previous] + self.alphabet))
                best = max((c for (p, c) in pairs if p == previous), key=lambda c: pairs[previous, c], default=None)
                greedy = greedy and best == char
                previous = char
            out.append((total, len(continuation), greedy))
        return out


def make_scorer(name: str = "toy"):
    """The page's scorer: ``toy`` (:class:`PremiseBigramScorer`) or ``embedded`` (SmolLM2-135M-Instruct behind
    the model-call cache)."""
    if name == "toy":
        return PremiseBigramScorer()
    if name == "embedded":
        return open_model("embedded", batch_size=8)
    raise ValueError(f"unknown scorer {name!r}; choose 'toy' or 'embedded'")


def option_table(record: pd.Series | dict) -> pd.DataFrame:
    """One scored LogicMark record as a table: per option its log-likelihood sum, tokens, characters and the
    three normalised scores, and which normalisations pick it."""
    record = dict(record)
    rows = []
    k = 0
    while f"option_{k}" in record:
        rows.append({"option": record[f"option_{k}"], "correct": k == record["answer_index"],
                     "log-likelihood (sum, nats)": record[f"loglik_{k}"], "tokens": record[f"tokens_{k}"],
                     "characters": len(record[f"option_{k}"]),
                     **{f"score: {norm}": record[f"score_{norm}_{k}"] for norm in NORMALIZATIONS},
                     "picked by": ", ".join(n for n in NORMALIZATIONS if record[f"pred_{n}"] == k)})
        k += 1
    return pd.DataFrame(rows).set_index("option")


@figures.themed
def normalization_figure(table: pd.DataFrame, *, title: str = ""):
    """One panel per normalisation of the options' scores from :func:`option_table`; the correct option dark,
    the picked one outlined."""
    fig, axes = figures.new_figure(1, len(NORMALIZATIONS), height=3.6)
    picked = []
    for ax, norm in zip(axes[0], NORMALIZATIONS):
        values = table[f"score: {norm}"].to_numpy(dtype=float)
        colours = [figures.PALETTE[2] if c else figures.PALETTE[9] for c in table["correct"]]
        bars = ax.bar(range(len(values)), values, color=colours)
        best = int(np.argmax(values))
        bars[best].set_edgecolor("black")
        bars[best].set_linewidth(2)
        picked.append(f"{norm}: {table.index[best]}")
        figures.set_categories(ax, list(table.index))
        ax.set_title(norm)
        ax.set_xlabel("option")
        ax.set_ylabel("score" if ax is not axes[0, 0] else "score (higher is better)")
    if title:
        fig.suptitle(title)
    correct = [str(o) for o, c in zip(table.index, table["correct"]) if c]
    return figures.finish(fig, alt=f"Bar charts, one per normalisation ({', '.join(NORMALIZATIONS)}), of each "
                                   f"option's score; the correct option ({', '.join(correct)}) in green, the "
                                   f"picked option outlined (picked: {', '.join(picked)}).")


def prediction_shares(records: pd.DataFrame) -> pd.DataFrame:
    """Per normalisation: accuracy (%) and the share (%) of predictions that are ``=`` statements (the shorter
    kind of option)."""
    rows = []
    for norm in NORMALIZATIONS:
        picked = [r[f"option_{int(r[f'pred_{norm}'])}"] for r in records.to_dict("records")]
        rows.append({"normalization": norm, "accuracy (%)": 100 * float(records[f"correct_{norm}"].mean()),
                     "predicts '=' (%)": 100 * float(np.mean(["!=" not in o for o in picked]))})
    return pd.DataFrame(rows).set_index("normalization")


# --- Coding exercises: each check compares a student's answer with what the package computes and prints
# one clear verdict (it never raises on a wrong answer: a wrong answer is part of learning).

@dataclass(frozen=True)
class Check:
    """A check's verdict: ``correct`` (``None``: no answer yet) and the message a notebook shows."""

    correct: bool | None
    message: str

    def __repr__(self) -> str:  # what the notebook prints under the check cell
        return self.message


def _verdict(correct: bool, message: str) -> Check:
    return Check(correct, ("Correct. " if correct else "Not yet. ") + message[:1].upper() + message[1:])


#: The verdict of a check whose exercise has no answer yet.
UNANSWERED = Check(None, "No answer yet: fill in the cell above, run it, then run this check again.")


def check_necessary_facts(problem: Problem, answer: Sequence[str] | None) -> Check:
    """t1: ``answer`` lists the facts without which the label changes (each removed alone, decided by z3)."""
    if not answer:
        return UNANSWERED
    label = decide_label(problem)
    necessary = {f.id for f in problem.facts if decide_label(problem, without=[f.id]) != label}
    given = {str(a) for a in answer}
    unknown = sorted(given - {f.id for f in problem.facts})
    if unknown:
        return _verdict(False, f"{', '.join(unknown)} is not a fact id of this problem "
                               f"(they are {', '.join(f.id for f in problem.facts)}).")
    if given == necessary:
        return _verdict(True, f"Without any one of {', '.join(sorted(necessary))} the label is no longer "
                              f"{label}; every other fact is a distractor.")
    missing, extra = sorted(necessary - given), sorted(given - necessary)
    parts = ([f"removing {', '.join(missing)} also changes the label"] if missing else []) + \
            ([f"without {', '.join(extra)} the label is still {label}"] if extra else [])
    return _verdict(False, "; ".join(parts) + ". Try teaching.decide_label(problem, without=[...]).")


def check_corrected_step(problem: Problem, response: str, step: str | None) -> Check:
    """t2: ``step`` (``fact1 & int2 -> int3: sentence``) replaces the response's step concluding the same id
    and the whole response is judged again; correct when the new step is valid and atomic."""
    if not step or "?" in step:
        return UNANSWERED
    try:
        written = parse_proof_steps(step.strip().rstrip(";") + ";")
    except ProofNotationError as error:
        return _verdict(False, f"the step could not be read ({error}); write it as 'fact1 & int2 -> int3: sentence'.")
    if len(written) != 1:
        return _verdict(False, "write exactly one step, as 'fact1 & int2 -> int3: sentence'.")
    steps = judge_response(problem, response)
    steps = steps[steps["step"] >= 0]
    target = written[0].conclusion
    if target not in set(steps["conclusion_id"]):
        return _verdict(False, f"no step of the response concludes {target!r}; keep the conclusion id of the step "
                               f"you correct ({', '.join(steps['conclusion_id'].astype(str))}).")
    raws = [step.strip().rstrip(";") if c == target else r for r, c in zip(steps["raw"], steps["conclusion_id"])]
    judged = judge_response(problem, "; ".join(raws) + ";")
    row = judged[judged["conclusion_id"] == target].iloc[0]
    if bool(row["valid"]) and bool(row["atomic"]):
        return _verdict(True, f"the step is now valid and atomic: {row['reason']}")
    if not bool(row["valid"]):
        return _verdict(False, f"the judge does not find it valid: {row['reason']}")
    return _verdict(False, f"valid but not atomic: {row['reason']}")


def check_majority_accuracy(answer: float | None, seed: int = 0, *, task: str = "rare event", n_train: int = 300,
                            n_test: int = 300) -> Check:
    """t3: ``answer`` is the majority class's test accuracy (%) for ``task``; correct within 0.1 points."""
    if answer is None:
        return UNANSWERED
    x, _ = toy_features(n_train + n_test, seed)
    y = TOY_TASKS[task][1](x).astype(int)
    expected = majority_accuracy(y[:n_train], y[n_train:])
    if abs(float(answer) - expected) <= 0.1:
        return _verdict(True, f"the majority class scores {expected:.1f}% on {task!r}: the bar every probe "
                              "must clear before its accuracy means anything.")
    hint = " (a share, not a percentage? multiply by 100)" if abs(100 * float(answer) - expected) <= 0.1 else ""
    return _verdict(False, f"{float(answer):.1f} is not it{hint}. Take the commoner label of the first {n_train} "
                           f"rows and count how often it is right on the last {n_test}.")


def check_pick(record: pd.Series | dict, normalization: str, option: str | None) -> Check:
    """t4: ``option`` is the option text ``normalization`` picks for the scored ``record``."""
    if option is None:
        return UNANSWERED
    record = dict(record)
    picked = record[f"option_{int(record[f'pred_{normalization}'])}"]
    if str(option).strip() == picked:
        return _verdict(True, f"{normalization} picks {picked!r} (highest score; ties go to the first option).")
    return _verdict(False, f"{normalization} does not pick {str(option)!r}. Compute each option's score and take "
                           "the highest (least negative).")
