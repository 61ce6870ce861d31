"""The paper's headline findings as verdicts on our tables (the claims page, ``notebooks/08_claims.ipynb``): each a
:class:`Claim` and a pure function of the upstream tables (accuracy ``records``, judged ``steps``, the probing
``summary``) returning a :class:`Verdict`. "SFT styles" are the ``SFT-<style>`` rows (Section 4); LogiPT is a baseline.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from finelogic.eval.accuracy import summarize
from finelogic.eval.cues import BEATS, baselines, clears, matched
from finelogic.eval.forced_choice import summarize_forced
from finelogic.eval.probing import LINEAR
from finelogic.eval.soundness import soundness_table
from finelogic.eval.stats import ABOVE, BELOW, OVERLAP, compare_intervals
from finelogic.paper import STYLES

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive at this scale"
NOT_TESTABLE = "not testable here"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTABLE)
#: Columns of the ``verdicts`` table.
VERDICT_COLUMNS = ("claim", "source", "what_paper_says", "verdict", "rule", "evidence", "effects")

#: The base model's row beside the fine-tuned ones: the prompt the styles are trained and tested with.
BASE_SETTING = "CoT"
#: The fine-tuned rows of the four supervision styles, in the paper's order.
SFT_SETTINGS = tuple(f"SFT-{style}" for style in STYLES)
NL, STRUCT, FILTER, DIRECT = SFT_SETTINGS
#: Datasets no style is trained on (the styles learn from FLD and ProntoQA only; Section 4, §5.2.1).
UNSEEN = {"folio": "FOLIO", "multi_logieval": "Multi-LogiEval"}
#: "Little improvement" in CSS: a change smaller than this share of the base's, the one gain §5.2.3 calls modest
#: (Llama SFT-Symb-Filter 9.7 against 8.0 steps, Table 4).
CSS_MODEST_GAIN = 0.2

#: A row cut at the token cap before an answer on more than this share of a claim's items is shown, not compared:
#: its accuracy measures the cap, not what the model learned.
CUT_SHARE = 0.5
CUT_RULE = (" A row whose responses were cut at the token cap before an answer on more than half of the items is "
            "shown but not compared: its accuracy measures the cap.")


@dataclass(frozen=True)
class Estimate:
    """One number with its 95% interval and n: a share in % (Wilson: accuracy, soundness, RFI, NSD) or CSS in
    steps (bootstrap)."""

    label: str
    value: float
    low: float
    high: float
    n: int
    unit: str = "%"
    of: str = ""  # what n counts, when not items (``scored samples``, ``test problems``)

    @property
    def known(self) -> bool:
        return self.n > 0 and not any(math.isnan(v) for v in (self.value, self.low, self.high))

    def text(self) -> str:
        n = f"(n = {self.n}{' ' + self.of if self.of else ''})"
        if not self.known:
            return f"{self.label}: no value {n}"
        digits, unit = (2, " steps") if self.unit == "steps" else (1, "%")
        return f"{self.label} {self.value:.{digits}f}{unit} [{self.low:.{digits}f}, {self.high:.{digits}f}] {n}"


def compare(a: Estimate, b: Estimate) -> str | None:
    """:func:`finelogic.eval.stats.compare_intervals` of the two intervals; None when either has no value."""
    return compare_intervals(a.low, a.high, b.low, b.high) if a.known and b.known else None


def effect(a: Estimate, b: "Estimate | float", name: str = "") -> dict[str, Any]:
    """``a - b`` with its 95% interval (:func:`difference`; against a fixed level, ``a``'s interval shifted) as
    ``label``, ``difference``, ``low``, ``high``, ``unit`` (``pp`` or ``steps``)."""
    if isinstance(b, Estimate):
        d, low, high = difference(a, b)
        name = name or b.label
    else:
        d, low, high = a.value - b, a.low - b, a.high - b
    unit = "steps" if a.unit == "steps" else "pp"
    return {"label": f"{a.label} − {name}", "difference": round(d, 3), "low": round(low, 3), "high": round(high, 3),
            "unit": unit}


@dataclass(frozen=True)
class Verdict:
    """A claim's row of the ``verdicts`` table; ``effects``: the compared pairs (JSON of :func:`effect`s)."""

    claim: str
    source: str
    what_paper_says: str
    verdict: str
    rule: str
    evidence: str
    effects: str = "[]"


@dataclass(frozen=True)
class Claim:
    """What a claim function states about the paper (its row's fixed cells)."""

    claim: str
    source: str
    what_paper_says: str
    rule: str
    #: Which way its differences go when the paper is right: ``above`` 0, ``below`` 0, or ``within`` a margin.
    direction: str = "above"

    def verdict(self, verdict: str, evidence: Sequence[str] | str, effects: Sequence[dict[str, Any]] = ()) -> Verdict:
        text = evidence if isinstance(evidence, str) else "; ".join(e for e in evidence if e)
        effects = [{**e, "wanted": self.direction} for e in effects]
        return Verdict(self.claim, self.source, self.what_paper_says, verdict, self.rule, text,
                       json.dumps(effects, ensure_ascii=False))


# ------------------------------------------------------------------------------------------- helpers


def decide(outcomes: Sequence[str | None], wanted: str, *, most: bool = False) -> str:
    """The verdict from per-comparison outcomes (None: not comparable, left out); a comparison goes the paper's way
    only when the intervals do not overlap. All must be ``wanted`` (``most``: more than half); not reproduced when
    any (``most``: more than half) is the opposite; inconclusive otherwise; not testable with no comparison."""
    opposite = BELOW if wanted == ABOVE else ABOVE
    made = [o for o in outcomes if o is not None]
    if not made:
        return NOT_TESTABLE
    if most:
        if 2 * made.count(wanted) > len(made):
            return REPRODUCED
        return NOT_REPRODUCED if 2 * made.count(opposite) > len(made) else INCONCLUSIVE
    if any(o == opposite for o in made):
        return NOT_REPRODUCED
    return REPRODUCED if all(o == wanted for o in made) else INCONCLUSIVE


def _outcome_text(outcome: str | None, first: str, second: str) -> str:
    if outcome is None:
        return f"{first} vs {second}: not comparable (no value)"
    words = {ABOVE: "above", BELOW: "below", OVERLAP: "overlaps"}[outcome]
    return f"{first} {words} {second}"


def accuracy_estimates(records: pd.DataFrame, label: str = "") -> dict[str, Estimate]:
    """Accuracy per ``setting`` of ``records``."""
    if records is None or records.empty:
        return {}
    table = summarize(records, by=("setting",))
    return {row.setting: Estimate(f"{_name(row.setting)}{label}", row.accuracy, row.ci_low, row.ci_high, int(row.n))
            for row in table.itertuples()}


def soundness_estimates(steps: pd.DataFrame, metric: str) -> dict[str, Estimate]:
    """``metric`` (``all_valid``, ``all_relevant``, ``all_atomic``) per ``setting`` in % of the scored samples."""
    if steps is None or steps.empty or "setting" not in steps:
        return {}
    table = soundness_table(steps, by=("setting",))
    return {row["setting"]: Estimate(_name(str(row["setting"])), 100 * row[metric], 100 * row[f"{metric}_low"],
                                     100 * row[f"{metric}_high"], int(row["scored"]),
                                     of=f"scored of {int(row['samples'])} responses")
            for row in table.to_dict("records")}


def cut_at_cap(records: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """{setting: (responses cut, items)} for the settings cut at the token cap on more than :data:`CUT_SHARE`."""
    if records is None or records.empty or "truncated" not in records:
        return {}
    prediction = records["prediction"]
    unanswered = prediction.isna() | (prediction.astype(str).str.strip() == "")
    cut = records["truncated"].fillna(False).astype(bool) & unanswered
    table = pd.DataFrame({"setting": records["setting"], "cut": cut}).groupby("setting")["cut"].agg(["sum", "size"])
    return {str(setting): (int(row["sum"]), int(row["size"])) for setting, row in table.iterrows()
            if row["sum"] > CUT_SHARE * row["size"]}


def _cut_text(setting: str, cut: int, n: int) -> str:
    return (f"{_name(setting)} not compared: {cut} of its {n} responses were cut at the token cap before an answer "
            "(its accuracy measures the cap)")


def cue_outcome(estimate: Estimate, records: pd.DataFrame,
                problems: Sequence[Any] | None) -> tuple[str | None, str, list[dict[str, Any]]]:
    """Whether ``estimate`` (one row's accuracy on ``records``) clears the cue rules on the same items: a gain a rule
    that follows no reasoning also reaches is no gain in reasoning. Returns (``above`` when its interval lies above
    every rule, else ``overlap``; None without ``problems``), the evidence text, the effect against the top rule."""
    if problems is None:
        return None, f"{estimate.label}: cue rules not scored (no test items handed in)", []
    levels = baselines(matched(records, problems), list(records["gold"].astype(str)))
    named = {f"the {name}": level for name, level in levels.items()}
    reading = clears(estimate.low, named)
    shown = ", ".join(f"{name} {level:.1f}%" for name, level in levels.items())
    top = max(levels, key=levels.get)
    effects = [effect(estimate, levels[top], f"the {top}")]
    if reading == BEATS:
        return ABOVE, f"{estimate.label} above every cue rule ({shown})", effects
    return OVERLAP, f"{estimate.label} {reading} ({shown}): a rule that follows no reasoning scores as high", effects


def _name(setting: str) -> str:
    """A row's name in the evidence: the base model's row says so."""
    return f"the base ({setting})" if setting == BASE_SETTING else setting


def fine_tuned_setting(model: str) -> str | None:
    """The ``SFT-<style>`` a probed model's name contains (``SmolLM2-135M-Instruct-SFT-NL``); None if none."""
    return next((s for s in sorted(SFT_SETTINGS, key=len, reverse=True) if s in str(model)), None)


def probing_estimates(summary: pd.DataFrame, task: str, *, base: str | None = None,
                      readout: str | None = None) -> tuple[Estimate | None, dict[str, Estimate], str]:
    """The linear probe's ``task`` metric: (the base model's, {SFT setting: the fine-tuned model's}, a note on what
    was read). ``readout``: default the summary's first; ``base``: default the first model neither fine-tuned nor
    the random-init control."""
    if summary is None or summary.empty:
        return None, {}, "the probing run trained no probe"
    readout = readout or str(summary["readout"].iloc[0])
    rows = summary[(summary["readout"] == readout) & (summary["probe"] == LINEAR) & (summary["task"] == task)]
    if rows.empty:
        return None, {}, f"the probing run has no linear {task.upper()} probe on the {readout} read-out"
    models = list(pd.unique(rows["model"]))
    if base is None or base not in models:
        # The random-init control's row says so (finelogic.runs.probing.RANDOM_INIT).
        base = next((m for m in models if fine_tuned_setting(m) is None and "random" not in str(m).lower()), None)
    unit = "steps" if task == "css" else "%"

    def estimate(row: Any, label: str) -> Estimate:
        return Estimate(label, float(row["metric"]), float(row["ci_low"]), float(row["ci_high"]),
                        int(row["problems"]), unit, "test problems")

    base_estimate = None
    tuned: dict[str, Estimate] = {}
    for row in rows.to_dict("records"):
        setting = fine_tuned_setting(row["model"])
        if row["model"] == base:
            base_estimate = estimate(row, f"base ({base})")
        elif setting is not None and setting not in tuned:
            tuned[setting] = estimate(row, setting)
    return base_estimate, {s: tuned[s] for s in SFT_SETTINGS if s in tuned}, f"{readout} read-out"


def _probing_missing(base: Estimate | None, tuned: Mapping[str, Estimate], note: str, need: int = 1) -> str:
    """Why a probing claim cannot be tested ("" when it can)."""
    if base is None and not tuned:
        return note if note.startswith("the probing run") else f"the probing run has no base model row ({note})"
    if base is None:
        return "the probing run has no row of the base model"
    if len(tuned) < need:
        return (f"the probing run probed {len(tuned)} fine-tuned model(s) ({', '.join(tuned) or 'none'}); the claim "
                f"needs {need} (probe the supervision run's models: the probing family's fine-tuned setting or "
                "sft_checkpoints)")
    return ""


# ------------------------------------------------------------------------------------------- Table 2


FINE_TUNING_RAISES_ACCURACY = Claim(
    "Fine-tuning raises accuracy over the base model",
    "Table 2; §5.2.1",
    "\"Compared to inference-time prompting strategies, SFT yields significantly greater improvements in logical "
    "reasoning performance\"; with SFT-NL Llama's FLD "
    "accuracy \"increased from 31.7% (direct prompting) to 67.5%\" (§5.2.1; in Table 2 every SFT style of both "
    "models is above its base model on FLD).",
    "On FLD, every SFT style's accuracy interval lies above the base model's (CoT prompt, same items), and above "
    "the base model's forced-choice accuracy, uncalibrated and contextually calibrated, where the records carry them "
    "(a base model that never writes an answer marker scores 0% on the CoT prompt whatever it knows), and above every "
    "cue rule on the same items (best constant answer, negation rule, consequent rule)." + CUT_RULE)


def fine_tuning_raises_accuracy(records: pd.DataFrame, problems: Sequence[Any] | None = None) -> Verdict:
    """Table 2, §5.2.1. Rule: :data:`FINE_TUNING_RAISES_ACCURACY`'s (``problems``: the test items, for cue rules)."""
    return _raises_over_base(FINE_TUNING_RAISES_ACCURACY, records, problems)


SFT_NL_RAISES_FLD = Claim(
    "SFT-NL raises FLD accuracy over the base model",
    "§5.2.1; Table 2",
    "\"under the SFT-NL setting, Llama’s accuracy on FLD increased from 31.7% (direct prompting) to 67.5% and Qwen "
    "improved from 46.6% to 71.0%\" (§5.2.1; Table 2).",
    "On FLD, SFT-NL's accuracy interval lies above the base model's (CoT prompt, same items), and above the base "
    "model's forced-choice accuracy, uncalibrated and contextually calibrated, where the records carry them, and "
    "above every cue rule on the same items. (Listed on its own after the study's numbers were known: §5.2.1 gives "
    "this style's gain as its example; the claim about every style is unchanged.)" + CUT_RULE)


def sft_nl_raises_fld(records: pd.DataFrame, problems: Sequence[Any] | None = None) -> Verdict:
    """Table 2, §5.2.1. Rule: that of :func:`fine_tuning_raises_accuracy` for the SFT-NL row alone."""
    return _raises_over_base(SFT_NL_RAISES_FLD, records, problems, only=NL)


def _raises_over_base(claim: Claim, records: pd.DataFrame, problems: Sequence[Any] | None,
                      only: str | None = None) -> Verdict:
    """Each ``SFT-<style>`` FLD row (or ``only``) against the base's CoT rows, its forced choice (uncalibrated and
    calibrated, where the records carry them) and the cue rules."""
    fld = records[records["dataset"] == "fld"] if records is not None and not records.empty else pd.DataFrame()
    estimates = accuracy_estimates(fld, " (FLD)")
    base, styles = estimates.get(BASE_SETTING), [s for s in SFT_SETTINGS if s in estimates]
    if only is not None:
        styles = [s for s in styles if s == only]
    if base is None or not styles:
        missing = ", ".join(m for m, gone in (("the base model's CoT rows", base is None),
                                              (f"{only or 'fine-tuned'} rows", not styles)) if gone)
        return claim.verdict(NOT_TESTABLE, f"missing on FLD: {missing}")
    bases = [(base, "the base")]
    for column, what in (("forced_correct", "forced choice"), ("calibrated_correct", "calibrated forced choice")):
        for row in summarize_forced(fld[fld["setting"] == BASE_SETTING], by=("setting",), column=column).itertuples():
            bases.append((Estimate(f"the base, {what} (FLD)", row.accuracy, row.ci_low, row.ci_high, int(row.n)),
                          f"the base's {what}"))
    # The base's forced choice reads log-likelihoods, not generated text, so no cap touches it.
    cut = cut_at_cap(fld)
    compared_bases = bases[1:] if BASE_SETTING in cut else bases
    outcomes = [(compare(estimates[s], b), s, name) for b, name in compared_bases for s in styles if s not in cut]
    cues = [cue_outcome(estimates[s], fld[fld["setting"] == s], problems) for s in styles if s not in cut]
    evidence = [*(b.text() for b, _ in bases), *(estimates[s].text() for s in styles),
                *(_cut_text(s, *cut[s]) for s in (BASE_SETTING, *styles) if s in cut),
                *(_outcome_text(o, s, name) for o, s, name in outcomes), *(text for _, text, _ in cues)]
    effects = [effect(estimates[s], b, name) for b, name in compared_bases for s in styles
               if s not in cut and estimates[s].known and b.known]
    effects += [e for *_, found in cues for e in found]
    return claim.verdict(decide([o for o, _, _ in outcomes] + [o for o, _, _ in cues], ABOVE), evidence, effects)


NL_TRANSFERS_BEST = Claim(
    "SFT-NL transfers best to the datasets no style was trained on (FOLIO, Multi-LogiEval)",
    "Table 2; §5.2.1",
    "\"SFT-NL demonstrates the best overall and most transferable performance\" (§5.2.1); the styles were trained "
    "\"using only problems from FLD and ProntoQA\", and on FOLIO and Multi-LogiEval SFT-NL is the best style "
    "of both models (Table 2).",
    "On FOLIO and Multi-LogiEval together, SFT-NL's accuracy interval lies above every other style's and above "
    "every cue rule on the same items." + CUT_RULE)


def nl_transfers_best(records: pd.DataFrame, problems: Sequence[Any] | None = None) -> Verdict:
    """Table 2, §5.2.1. Rule: :data:`NL_TRANSFERS_BEST`'s, on the unseen datasets' records pooled."""
    claim = NL_TRANSFERS_BEST
    have = records is not None and not records.empty
    present = [d for d in UNSEEN if have and (records["dataset"] == d).any()]
    absent = [name for d, name in UNSEEN.items() if d not in present]
    if not present:
        return claim.verdict(NOT_TESTABLE, f"missing: {' and '.join(absent)} are not in the run (no real data "
                                           "given), so transfer to unseen datasets cannot be measured")
    pooled = records[records["dataset"].isin(present)]
    names = " + ".join(UNSEEN[d] for d in present)
    estimates = accuracy_estimates(pooled, f" ({names})")
    styles = [s for s in SFT_SETTINGS if s in estimates]
    note = f"{' and '.join(absent)} not in the run" if absent else ""
    if NL not in estimates or len(styles) < 2:
        return claim.verdict(NOT_TESTABLE, [f"missing: {'SFT-NL' if NL not in estimates else 'a second style'} "
                                            f"on {names} (styles present: {', '.join(styles) or 'none'})", note])
    cut = cut_at_cap(pooled)
    others = [s for s in styles if s != NL and s not in cut]
    outcomes = [] if NL in cut else [compare(estimates[NL], estimates[s]) for s in others]
    cue, cue_text, cue_effects = (None, "", []) if NL in cut else cue_outcome(
        estimates[NL], pooled[pooled["setting"] == NL], problems)
    evidence = [*(estimates[s].text() for s in styles), *(_cut_text(s, *cut[s]) for s in styles if s in cut),
                *(_outcome_text(o, NL, s) for o, s in zip(outcomes, others)), cue_text, note]
    effects = [effect(estimates[NL], estimates[s]) for s in others] + cue_effects if outcomes else []
    return claim.verdict(decide(outcomes + ([cue] if outcomes else []), ABOVE), evidence, effects)


# ------------------------------------------------------------------------------------------- Table 3


SYMBOLIC_MORE_ATOMIC = Claim(
    "The symbolic styles give more atomic steps than SFT-NL (SFT-Symb-Struct most)",
    "Table 3; §5.2.2",
    "On All Atomic \"SFT-Symb-Struct consistently outperforms other settings, highlighting the advantages of "
    "structured symbolic reasoning\", while \"natural language reasoning often fuses multiple reasoning rules "
    "into a single step\" (§5.2.2, Table 3).",
    "SFT-Symb-Struct's all-atomic interval lies above SFT-NL's.")


def symbolic_more_atomic(steps: pd.DataFrame) -> Verdict:
    """Table 3, §5.2.2, the atomicity half (on validity the paper puts SFT-NL level with SFT-Symb-Struct).
    Rule: :data:`SYMBOLIC_MORE_ATOMIC`'s; the other symbolic styles are shown beside."""
    claim = SYMBOLIC_MORE_ATOMIC
    estimates = soundness_estimates(steps, "all_atomic")
    shown = [s for s in SFT_SETTINGS if s in estimates]
    if STRUCT not in estimates or NL not in estimates:
        missing = [s for s in (STRUCT, NL) if s not in estimates]
        return claim.verdict(NOT_TESTABLE, [f"missing: judged steps of {' and '.join(missing)}",
                                            *(estimates[s].text() for s in shown)])
    outcome = compare(estimates[STRUCT], estimates[NL])
    evidence = [f"all atomic: {estimates[s].text()}" for s in shown] + [_outcome_text(outcome, STRUCT, NL)]
    effects = [effect(estimates[STRUCT], estimates[NL])] if outcome else []
    return claim.verdict(decide([outcome], ABOVE), evidence, effects)


NL_AND_STRUCT_MORE_VALID = Claim(
    "SFT-NL and SFT-Symb-Struct give more all-valid chains than the model without fine-tuning",
    "Table 3; §5.2.2",
    "\"models trained with the SFT-NL and SFT-Symb-Struct settings achieve particularly high All Valid "
    "scores—substantially outperforming even GPT-4o and DeepSeek-R1\" (§5.2.2, Table 3; Llama: 40.9 and 35.0 "
    "against 4.5 for the base model with few-shot prompting).",
    "The all-valid intervals of SFT-NL and SFT-Symb-Struct each lie above the base model's.")


def nl_and_struct_more_valid(steps: pd.DataFrame) -> Verdict:
    """Table 3, §5.2.2. Rule: :data:`NL_AND_STRUCT_MORE_VALID`'s, over the styles present."""
    claim = NL_AND_STRUCT_MORE_VALID
    estimates = soundness_estimates(steps, "all_valid")
    base = estimates.get(BASE_SETTING)
    styles = [s for s in (NL, STRUCT) if s in estimates]
    if base is None or not styles:
        missing = [what for what, gone in (("the base model's judged steps", base is None),
                                           ("judged steps of SFT-NL and SFT-Symb-Struct", not styles)) if gone]
        return claim.verdict(NOT_TESTABLE, "missing: " + "; ".join(missing))
    if not base.known:
        return claim.verdict(NOT_TESTABLE, [
            f"all valid: {base.text()}", *(estimates[s].text() for s in styles),
            "the judge decides none of the base model's steps (its chains are not written in the proof notation "
            "the judge reads), so there is no all-valid share of the base to compare with"])
    outcomes = [compare(estimates[s], base) for s in styles]
    evidence = [f"all valid: {base.text()}", *(estimates[s].text() for s in styles),
                *(_outcome_text(o, s, "the base") for o, s in zip(outcomes, styles))]
    if len(styles) < 2:
        evidence.append(f"{NL if NL not in styles else STRUCT} not in the run")
    return claim.verdict(decide(outcomes, ABOVE), evidence,
                         [effect(estimates[s], base) for s in styles if estimates[s].known])


NL_DIRECT_LEAST_RELEVANT = Claim(
    "SFT-NL and SFT-Symb-Direct give all-relevant chains least often",
    "Table 3; §5.2.2",
    "\"GPT-4o and LogiPT perform exceptionally well on this metric [All Relevant] ... In contrast, SFT-NL and "
    "SFT-Symb-Direct consistently underperform\" (§5.2.2, Table 3).",
    "The all-relevant intervals of SFT-NL and SFT-Symb-Direct each lie below those of the base model, "
    "SFT-Symb-Struct, SFT-Symb-Filter and LogiPT (those present).", direction=BELOW)


def nl_direct_least_relevant(steps: pd.DataFrame) -> Verdict:
    """Table 3, §5.2.2. Rule: :data:`NL_DIRECT_LEAST_RELEVANT`'s, every pair present."""
    claim = NL_DIRECT_LEAST_RELEVANT
    estimates = soundness_estimates(steps, "all_relevant")
    low = [s for s in (NL, DIRECT) if s in estimates]
    others = [s for s in (BASE_SETTING, STRUCT, FILTER, "LogiPT") if s in estimates]
    if not low or not others:
        missing = "judged steps of SFT-NL or SFT-Symb-Direct" if not low else "judged steps of any model to compare with"
        return claim.verdict(NOT_TESTABLE, f"missing: {missing}")
    pairs = [(a, b) for a in low for b in others]
    outcomes = [compare(estimates[a], estimates[b]) for a, b in pairs]
    evidence = [f"all relevant: {estimates[low[0]].text()}", *(estimates[s].text() for s in low[1:] + others),
                *(_outcome_text(o, a, _name(b)) for o, (a, b) in zip(outcomes, pairs))]
    effects = [effect(estimates[a], estimates[b]) for (a, b), o in zip(pairs, outcomes) if o]
    return claim.verdict(decide(outcomes, BELOW), evidence, effects)


# ------------------------------------------------------------------------------------------- Table 5, Figure 3


ACCURACY_FALLS_WITH_DEPTH = Claim(
    "Accuracy falls with depth and is lowest beyond the training depths",
    "Table 5; Figure 3; §5.2.1",
    "\"model accuracy decreases as the required number of reasoning steps increases\"; on 16–19 steps, \"where "
    "no training samples are available\", \"performance drops by approximately 10% relative to the 12–15 step "
    "range\" (§5.2.1, Figure 3, Table 5).",
    "For every SFT style, FLD accuracy beyond the deepest training depth has an interval below the one at the "
    "training depths." + CUT_RULE, direction=BELOW)


def accuracy_falls_beyond_training_depths(records: pd.DataFrame, training_depths: Sequence[int]) -> Verdict:
    """Table 5, Figure 3, §5.2.1. Rule: :data:`ACCURACY_FALLS_WITH_DEPTH`'s, on the FLD PROVED/DISPROVED items
    (Table 5 has no UNKNOWN column) split at the deepest of ``training_depths`` (the supervision run's)."""
    claim = ACCURACY_FALLS_WITH_DEPTH
    depths = sorted(int(d) for d in training_depths)
    if not depths:
        return claim.verdict(NOT_TESTABLE, "missing: the supervision run records no training depths")
    deepest = depths[-1]
    have = records is not None and not records.empty
    fld = records[(records["dataset"] == "fld") & (records["gold"] != "UNKNOWN") & records["depth"].notna()] \
        if have else pd.DataFrame()
    fld = fld[fld["setting"].isin(SFT_SETTINGS)] if not fld.empty else fld
    if fld.empty:
        return claim.verdict(NOT_TESTABLE, "missing: no fine-tuned FLD answers with a depth")
    depth = fld["depth"].astype(int)
    within = accuracy_estimates(fld[depth <= deepest], f" depths {depths[0]}-{deepest}")
    beyond = accuracy_estimates(fld[depth > deepest], f" depths > {deepest}")
    tested = f"training depths {', '.join(map(str, depths))}; test depths {', '.join(map(str, sorted(set(depth))))}"
    if not beyond or not within:
        where = "beyond" if not beyond else "within"
        return claim.verdict(NOT_TESTABLE, f"missing: no FLD items {where} the training depths ({tested})")
    cut = cut_at_cap(fld)
    shown = [s for s in SFT_SETTINGS if s in within and s in beyond]
    styles = [s for s in shown if s not in cut]
    outcomes = [compare(beyond[s], within[s]) for s in styles]
    evidence = [tested, *(f"{within[s].text()}, {beyond[s].text()}" for s in shown),
                *(_cut_text(s, *cut[s]) for s in shown if s in cut),
                *(_outcome_text(o, f"{s} beyond", "within") for o, s in zip(outcomes, styles))]
    return claim.verdict(decide(outcomes, BELOW), evidence, [effect(beyond[s], within[s], f"depths {depths[0]}-{deepest}") for s in styles])


# ------------------------------------------------------------------------------------------- Table 4


CSS_LITTLE_GAIN = Claim(
    "SFT barely moves Correctness Spanning Steps (CSS)",
    "Table 4; §5.2.3",
    "\"Regarding Correctness Spanning Steps (CSS) ... most SFT methods show little improvement. Only "
    "SFT-Symb-Filter on Llama yields a modest gain\" (§5.2.3, Table 4).",
    f"For most SFT styles the 95% interval of the CSS difference from the base model lies within ±{CSS_MODEST_GAIN:.0%} "
    "of the base's CSS (the paper's one modest gain: 9.7 against 8.0 steps, +21%); not reproduced when for most it "
    "lies wholly outside.", direction="within")


def difference(a: Estimate, b: Estimate) -> tuple[float, float, float]:
    """``a - b`` with an approximate 95% interval (independent samples, normal approximation): (difference, low,
    high)."""
    half = math.hypot((a.high - a.low) / 2, (b.high - b.low) / 2)
    d = a.value - b.value
    return d, d - half, d + half


def css_little_gain(summary: pd.DataFrame, base: str | None = None, readout: str | None = None) -> Verdict:
    """Table 4, §5.2.3. Rule: an equivalence test, each style's CSS difference from the base (:func:`difference`)
    inside the margin ±``CSS_MODEST_GAIN`` × the base's CSS, for most styles."""
    claim = CSS_LITTLE_GAIN
    base_estimate, tuned, note = probing_estimates(summary, "css", base=base, readout=readout)
    missing = _probing_missing(base_estimate, tuned, note)
    if missing:
        return claim.verdict(NOT_TESTABLE, f"missing: {missing}")
    margin = CSS_MODEST_GAIN * base_estimate.value
    outcomes, texts, effects = [], [], []
    for estimate in tuned.values():
        if not (estimate.known and base_estimate.known):
            outcomes.append(None)
            texts.append(f"{estimate.text()}: no value")
            continue
        d, low, high = difference(estimate, base_estimate)
        if -margin < low and high < margin:
            outcome, word = BELOW, "barely moves"  # the paper's way: "little improvement"
        elif low > margin or high < -margin:
            outcome, word = ABOVE, "moves"
        else:
            outcome, word = OVERLAP, "unclear"
        outcomes.append(outcome)
        texts.append(f"{estimate.text()}: difference {d:+.2f} steps [{low:+.2f}, {high:+.2f}], {word}")
        effects.append({**effect(estimate, base_estimate, "the base"), "margin": round(margin, 3)})
    evidence = [note, base_estimate.text(), f"margin ±{margin:.2f} steps", *texts]
    return claim.verdict(decide(outcomes, BELOW, most=True), evidence, effects)


def _against_base(claim: Claim, summary: pd.DataFrame, task: str, base: str | None, readout: str | None, *,
                  most: bool) -> Verdict:
    base_estimate, tuned, note = probing_estimates(summary, task, base=base, readout=readout)
    missing = _probing_missing(base_estimate, tuned, note)
    if missing:
        return claim.verdict(NOT_TESTABLE, f"missing: {missing}")
    outcomes = [compare(e, base_estimate) for e in tuned.values()]
    evidence = [note, base_estimate.text(), *(e.text() for e in tuned.values()),
                *(_outcome_text(o, s, "the base") for o, s in zip(outcomes, tuned))]
    effects = [effect(e, base_estimate, "the base") for e in tuned.values() if e.known and base_estimate.known]
    return claim.verdict(decide(outcomes, ABOVE, most=most), evidence, effects)


def _best_style(claim: Claim, summary: pd.DataFrame, task: str, best: str, base: str | None,
                readout: str | None) -> Verdict:
    base_estimate, tuned, note = probing_estimates(summary, task, base=base, readout=readout)
    if not tuned:
        return claim.verdict(NOT_TESTABLE, f"missing: {_probing_missing(base_estimate, tuned, note, need=2)}")
    if best not in tuned or len(tuned) < 2:
        return claim.verdict(NOT_TESTABLE, f"missing: {best if best not in tuned else 'a second style'} among the "
                                           f"probed fine-tuned models ({', '.join(tuned)})")
    others = [s for s in tuned if s != best]
    outcomes = [compare(tuned[best], tuned[s]) for s in others]
    evidence = [note, *(e.text() for e in tuned.values()), *(_outcome_text(o, best, s) for o, s in zip(outcomes, others))]
    effects = [effect(tuned[best], tuned[s]) for s, o in zip(others, outcomes) if o]
    return claim.verdict(decide(outcomes, ABOVE), evidence, effects)


RFI_GAINS = Claim(
    "Most SFT styles raise Redundant Fact Identification (RFI)",
    "Table 4; §5.2.3",
    "\"For the Redundant Fact Identification metric, most SFT settings show noticeable gains\" (§5.2.3, Table 4).",
    "More than half of the SFT styles' RFI intervals lie above the base model's.")


def rfi_gains(summary: pd.DataFrame, base: str | None = None, readout: str | None = None) -> Verdict:
    """Table 4, §5.2.3. Rule: :data:`RFI_GAINS`'s, the linear probe's RFI against the base's, for most styles."""
    return _against_base(RFI_GAINS, summary, "rfi", base, readout, most=True)


RFI_SYMB_DIRECT_BEST = Claim(
    "SFT-Symb-Direct gives the highest RFI",
    "Table 4; §5.2.3",
    "\"Interestingly, SFT-Symb-Direct consistently achieves the highest performance\" on RFI (§5.2.3, Table 4).",
    "SFT-Symb-Direct's RFI interval lies above every other SFT style's.")


def rfi_symb_direct_best(summary: pd.DataFrame, base: str | None = None, readout: str | None = None) -> Verdict:
    """Table 4, §5.2.3. Rule: :data:`RFI_SYMB_DIRECT_BEST`'s, the linear probe's RFI."""
    return _best_style(RFI_SYMB_DIRECT_BEST, summary, "rfi", DIRECT, base, readout)


NSD_GAINS = Claim(
    "SFT raises Next-Step Derivability (NSD) for every style (the paper's Llama; not its Qwen)",
    "Table 4; §5.2.3",
    "\"In the Next-Step Derivability task, SFT consistently benefits Llama ... In contrast, SFT shows minimal "
    "impact on Qwen, possibly because its base model is already proficient in step-tracking\" (§5.2.3, Table 4).",
    "Every SFT style's NSD interval lies above the base model's (the Llama result; Qwen's \"minimal impact\" "
    "would read as inconclusive).")


def nsd_gains(summary: pd.DataFrame, base: str | None = None, readout: str | None = None) -> Verdict:
    """Table 4, §5.2.3. Rule: :data:`NSD_GAINS`'s, the linear probe's NSD against the base's, every style."""
    return _against_base(NSD_GAINS, summary, "nsd", base, readout, most=False)


NSD_NL_BEST = Claim(
    "SFT-NL gives the highest NSD (the paper's Llama)",
    "Table 4; §5.2.3",
    "\"SFT consistently benefits Llama, particularly SFT-NL (likely due to natural language’s accessibility)\" "
    "(§5.2.3, Table 4: Llama SFT-NL 51.5 against 36.1–46.4 for the other styles).",
    "SFT-NL's NSD interval lies above every other SFT style's.")


def nsd_nl_best(summary: pd.DataFrame, base: str | None = None, readout: str | None = None) -> Verdict:
    """Table 4, §5.2.3. Rule: :data:`NSD_NL_BEST`'s, the linear probe's NSD."""
    return _best_style(NSD_NL_BEST, summary, "nsd", NL, base, readout)


# ------------------------------------------------------------------------------------------- all claims


def verdicts(records: pd.DataFrame, steps: pd.DataFrame, summary: pd.DataFrame, training_depths: Sequence[int], *,
             base: str | None = None, readout: str | None = None, expected: Sequence[str] | None = None,
             problems: Sequence[Any] | None = None) -> pd.DataFrame:
    """Every claim's verdict, one row each (:data:`VERDICT_COLUMNS`). ``base``, ``readout``: the probing summary's
    base-model row and read-out; ``problems``: the test items, for the cue rules; ``expected``: the styles the runs
    are meant to hold; a claim about a style expected but absent (a study unit not yet made) is not testable."""
    every = SFT_SETTINGS  # a claim about every, most or the best style speaks of them all
    checked = [  # each verdict, the table it reads and the styles it speaks of
        (fine_tuning_raises_accuracy(records, problems), records, every),
        (sft_nl_raises_fld(records, problems), records, (NL,)),
        (nl_transfers_best(records, problems), records, every),
        (symbolic_more_atomic(steps), steps, (NL, STRUCT)),
        (nl_and_struct_more_valid(steps), steps, (NL, STRUCT)),
        (accuracy_falls_beyond_training_depths(records, training_depths), records, every),
        (nl_direct_least_relevant(steps), steps, (NL, DIRECT, STRUCT, FILTER)),
        (css_little_gain(summary, base, readout), summary, every),
        (rfi_gains(summary, base, readout), summary, every),
        (rfi_symb_direct_best(summary, base, readout), summary, every),
        (nsd_gains(summary, base, readout), summary, every),
        (nsd_nl_best(summary, base, readout), summary, every),
    ]
    rows = []
    for verdict, table, needs in checked:
        present: set[str] = set()
        if table is not None and not table.empty and "setting" in table.columns:
            present = {s for s in table["setting"].astype(str) if s in SFT_SETTINGS}
        elif table is not None and not table.empty:
            column = "model" if "model" in table.columns else table.columns[0]
            present = {s for s in map(fine_tuned_setting, table[column].astype(str)) if s}
        missing = [s for s in needs if expected is not None and s in expected and s not in present]
        if missing and verdict.verdict != NOT_TESTABLE:
            note = (f"missing: {', '.join(missing)} (expected in this run, not in it yet; the verdict on the styles "
                    f"present alone would read '{verdict.verdict}')")
            verdict = replace(verdict, verdict=NOT_TESTABLE, evidence=f"{verdict.evidence}; {note}")
        rows.append(verdict)
    return pd.DataFrame([asdict(v) for v in rows], columns=list(VERDICT_COLUMNS))


#: The claim functions, in the table's order (each takes the upstream tables it names).
CLAIMS: tuple[Callable[..., Verdict], ...] = (
    fine_tuning_raises_accuracy, sft_nl_raises_fld, nl_transfers_best, symbolic_more_atomic, nl_and_struct_more_valid,
    accuracy_falls_beyond_training_depths, nl_direct_least_relevant, css_little_gain, rfi_gains, rfi_symb_direct_best,
    nsd_gains, nsd_nl_best)

