"""Display helpers of the LogicMark page (``notebooks/07_logicmark.ipynb``), made from a
:class:`finelogic.runs.logicmark.LogicMarkRun`: captions, the card beside our rows, figures, the worked example."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from finelogic.book import figures
from finelogic.book.provenance import caption
from finelogic.book.tables import Table, present, wide
from finelogic.config import repo_root
from finelogic.data.generators.logicmark import Statement
from finelogic.eval.logicmark import HOPS, derivation, with_ci
from finelogic.eval.stats import one_decimal
from finelogic.paper import LOGICMARK_NEAREST, reported
from finelogic.runs.logicmark import GEMMA

#: The card's hop columns, ``1-hop`` ... ``5-hop``.
HOP_COLUMNS = [f"{h}-hop" for h in HOPS]
#: Card rows drawn beside ours in the figure.
CARD_ROWS_SHOWN = ("SmolLM2-135M", "SmolLM2-1.7B", "Qwen2.5-3B", "pythia-14m")


def note(run: Any, notebook: str, what: str, model: str | None = None) -> str:
    """The provenance caption under every table and figure of the page, then ``what``."""
    p = run.provenance
    return (caption(notebook, p.profile, p.seed, model=model, n=p.n, items=p.data["logicmark"],
                    normalization=p.settings["normalization"]) + " " + what)


#: Why a LogicMark cell shows the missing mark.
LOGICMARK_MISSING = "no item of this kind in this run (or, for the card, no value printed)"


def card_view(card: pd.DataFrame, by_hop: pd.DataFrame, n: int) -> Table:
    """The card's reported rows (``card``) then ours (``ours``: hops and avg) in the book's table style,
    percentages with one decimal (the card prints two)."""
    ours = by_hop[by_hop["metric"].isin([*HOP_COLUMNS, "avg"])].assign(setting="ours")
    table = wide(pd.concat([card.assign(setting="card"), ours[card.columns]]), index=("model", "setting"))
    table = table.reset_index()
    values = [c for c in table.columns if c not in ("model", "setting")]
    counts = by_hop[by_hop["metric"] == "avg"]
    each = ", ".join(f"{r.model} {int(r.n)}" for r in counts.itertuples()) if "n" in counts else f"{n} each"
    return present(table, percent=values, headers={"setting": "Source"}, missing=LOGICMARK_MISSING,
                   note=f"card: reported on the card's own 5,000 items (LogicMark dataset card), rounded to one "
                        f"decimal; ours: this run, items per model: {each}.")


def ci_view(table: pd.DataFrame, columns: str = "metric", value: str = "value") -> Table:
    """A long ``model, <columns>, <value>, ci_low, ci_high`` table as one row per model, each cell
    ``12.3 [8.1, 17.0]`` (Wilson 95%; the card-style ``avg``: stratified normal approximation)."""
    return present(with_ci(table, columns=columns, value=value).rename_axis("model"), missing=LOGICMARK_MISSING)


def hop_figure(by_hop: pd.DataFrame, card: pd.DataFrame):
    """Accuracy by hop: our rows (solid, Wilson 95% bands) and some of the card's (dashed grey, hollow
    marks, ``card: <model> (reported)``); chance dotted."""
    ours, low, high = (wide(by_hop, index=("model",), values=v).loc[:, HOP_COLUMNS]
                       for v in ("value", "ci_low", "ci_high"))
    reference = wide(card, index=("model",)).loc[list(CARD_ROWS_SHOWN), HOP_COLUMNS]
    return figures.accuracy_by_group(ours, reference=reference, reference_name="card", low=low, high=high,
                                     chance=25, xlabel="hops in the equality chain",
                                     title="LogicMark accuracy by hop: ours (solid, 95% bands) and the card's "
                                           "(dashed)")


def style_figure(by_style: pd.DataFrame):
    """Accuracy by the generator's graph style, bars per model; chance dotted."""
    return figures.grouped_bars(wide(by_style, index=("model",), columns="style", values="accuracy"),
                                title="Accuracy by graph style (this run)", xlabel="graph style", chance=25,
                                ylim=(0, 100))


def headline_values(by_hop: pd.DataFrame, card: pd.DataFrame, embedded: str, control: str) -> dict[str, str]:
    """The numbers the page's text quotes: the embedded model's avg, 1-hop and 5-hop, the card's
    SmolLM2-135M avg, and the control's avg (``n/a`` without a control row)."""
    rows = by_hop.set_index(["model", "metric"])["value"]
    card_smollm = card[(card["model"] == "SmolLM2-135M") & (card["metric"] == "avg")]["value"].item()
    return {"embedded_avg": one_decimal(rows[(embedded, 'avg')]), "embedded_hop1": one_decimal(rows[(embedded, '1-hop')]),
            "embedded_hop5": one_decimal(rows[(embedded, '5-hop')]), "card_smollm_avg": f"{card_smollm:.2f}",
            "control_avg": one_decimal(rows[(control, 'avg')]) if (control, "avg") in rows else "n/a"}


def worked_item(problems: Any, depth: int = 3) -> Any:
    """The first item of hop depth ``depth`` (else the first item): the page's worked example."""
    return next((p for p in problems if p.depth == depth), problems[0])


def option_scores(item: Any, record: pd.Series | dict) -> pd.DataFrame:
    """One item's options as scored in ``record`` (a row of the run's ``items``): correct mark, log-likelihood
    sum, tokens, per-token and per-character scores; index A, B, C, D; rounded to 3 decimals."""
    k = range(len(item.options))
    return pd.DataFrame({
        "option": list(item.options),
        "correct": ["yes" if i == item.answer_index else "no" for i in k],
        "log-likelihood (sum, nats)": [record[f"loglik_{i}"] for i in k],
        "tokens": [record[f"tokens_{i}"] for i in k],
        "per token (card)": [record[f"score_token_mean_{i}"] for i in k],
        "per character (acc_norm)": [record[f"score_char_{i}"] for i in k],
    }, index=list("ABCD"[:len(item.options)])).round(3)


def option_view(item: Any, record: pd.Series | dict) -> Table:
    """:func:`option_scores` in the book's table style (scores with 3 decimals)."""
    scores = option_scores(item, record)
    return present(scores, digits={c: 3 for c in scores.columns})


def why_it_follows(item: Any, record: pd.Series | dict) -> str:
    """Markdown: the shortest chain of premises that proves the answer, the flipped distractor, and what
    the model picked (``record``'s prediction)."""
    chain = derivation(item)
    answer = item.options[item.answer_index]
    flip = next(o for o in item.options if Statement.parse(o) == Statement.parse(answer).flipped())
    picked = item.options[record["prediction"]]
    verdict = "right" if record["correct"] else ("wrong: the flipped answer" if picked == flip else "wrong")
    return (f"**Why `{answer}` follows.** Chain the premises " + ", then ".join(f"`{s}`" for s in chain)
            + f": equalities are transitive (`x = y` and `y = z` give `x = z`) and an inequality carries across "
            f"equal variables (`x = y` and `y != z` give `x != z`). That is {len(chain)} premises, so the item's hop "
            f"depth is {item.depth}; no shorter chain exists. The flipped answer `{flip}` is a distractor, as "
            f"in every LogicMark item. The embedded model picked **`{picked}`** ({verdict}) by the card's "
            f"per-token score.")


# --- our rows beside the card's nearest ------------------------------------------------------------------

#: The source column's labels: our rows (this run) and the card's (reported numbers, not runs of ours).
OURS_SOURCE = "ours (this run)"
CARD_SOURCE = "card (reported)"
#: The metrics of the per-hop table, in the card's column order.
TABLE_METRICS = (*HOP_COLUMNS, "avg")


def ours_and_nearest(by_hop: pd.DataFrame, card: pd.DataFrame, nearest: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Our rows (value and 95% interval per hop and the card-style avg, in run order) above the card's
    ``nearest`` rows (default :data:`finelogic.paper.LOGICMARK_NEAREST`), which are reported points.

    Returns:
        ``model, source, items`` and per metric of :data:`TABLE_METRICS` the columns ``<metric>``,
        ``<metric> low``, ``<metric> high`` (NaN bounds on the card's rows: it prints no interval);
        ``source`` is :data:`OURS_SOURCE` or :data:`CARD_SOURCE`; ``items``: our items per model (the
        ``item_mean`` row's n), missing on the card's rows. A card row not in ``card`` is left out.
    """
    rows = []
    for model, group in by_hop.groupby("model", sort=False):
        cells = group.set_index("metric")
        row: dict[str, Any] = {"model": model, "source": OURS_SOURCE,
                               "items": int(cells.loc["item_mean", "n"]) if "item_mean" in cells.index else None}
        shown = cells.reindex(TABLE_METRICS)  # NaN for a metric this run has no item of
        for metric in TABLE_METRICS:
            row[metric], row[f"{metric} low"], row[f"{metric} high"] = shown.loc[metric, ["value", "ci_low", "ci_high"]]
        rows.append(row)
    printed = card.set_index(["model", "metric"])["value"]
    for model in LOGICMARK_NEAREST if nearest is None else nearest:
        if model in printed.index.get_level_values("model"):
            rows.append({"model": model, "source": CARD_SOURCE, "items": None,
                         **{metric: printed.get((model, metric), float("nan")) for metric in TABLE_METRICS}})
    columns = ["model", "source", "items"] + [f"{m}{s}" for m in TABLE_METRICS for s in ("", " low", " high")]
    return pd.DataFrame(rows, columns=columns).astype({"items": "Int64"})


def ours_and_nearest_view(by_hop: pd.DataFrame, card: pd.DataFrame, nearest: tuple[str, ...] | None = None) -> Table:
    """:func:`ours_and_nearest` in the book's table style: our cells ``31.9 [29.1, 34.9]``, the card's the
    reported value alone."""
    table = ours_and_nearest(by_hop, card, nearest)
    return present(table, intervals={m: (f"{m} low", f"{m} high") for m in TABLE_METRICS},
                   headers={"source": "Source", "items": "items (ours)", **{m: m for m in TABLE_METRICS}},
                   missing="no item of this kind in this run; for the card's rows: items are its own, none of ours",
                   note="ours: this run's accuracy in % with its 95% interval (per hop: Wilson; avg: the card's "
                        "hop-share-weighted mean, stratified normal approximation); card (reported): the LogicMark "
                        "card's printed numbers on its own items, not runs of ours; it prints no interval.")


def gemma_status(run: Any) -> str:
    """Markdown: whether this run has the Gemma 3 270M base row, on how many items, or why not."""
    provenance = run.provenance
    if GEMMA in provenance.models:
        n = int((run.items["model"] == GEMMA).sum())
        return f"This run scored **{GEMMA}** on its first {n} of {provenance.n} items (llama.cpp, in process)."
    why = provenance.data.get("gemma")
    if why:
        return f"This run has no Gemma 3 270M base row: {why}."
    return (f"This run has no Gemma 3 270M base row: the `{provenance.profile}` profile does not score it "
            "(the `tiny` profile does, when the `gguf` extra is installed).")


# --- the gap to the card ---------------------------------------------------------------------------------


def gap_dir() -> Path:
    """Where ``benchmarks/logicmark_gap.py`` writes the gap tables the page includes."""
    return repo_root() / "book" / "generated-static" / "logicmark_gap"


def hop_profile(table: pd.DataFrame) -> pd.DataFrame:
    """Per (model, setting) of a :func:`variant_table`: ``one_hop_highest`` (as in 15 of the card's 19 rows),
    ``falls_with_hops`` (5-hop below 2-hop, as in all 19) and ``card_profile`` (both)."""
    rows = []
    for (model, setting), group in table.groupby(["model", "setting"], sort=False):
        value = dict(zip(group["metric"], group["value"]))
        hops = [value.get(f"{h}-hop", math.nan) for h in HOPS]
        complete = not any(math.isnan(v) for v in hops)
        highest, falls = complete and hops[0] == max(hops), complete and hops[4] < hops[1]
        rows.append({"model": model, "setting": setting, "one_hop_highest": highest, "falls_with_hops": falls,
                     "card_profile": highest and falls})
    return pd.DataFrame(rows)


def gap_profiles(variants: pd.DataFrame) -> pd.DataFrame:
    """Each (model, variant) of the gap benchmark's ``variants.csv`` with whether it has the card's hop
    profile (:func:`hop_profile`: 1-hop the highest bucket, 5-hop below 2-hop),
    its change in words, its smallest hop bucket's n and its widest per-hop interval (points)."""
    profile = hop_profile(variants)
    hops = variants[variants["metric"].isin(HOP_COLUMNS)]
    meta = hops.assign(width=hops["ci_high"] - hops["ci_low"]).groupby(["model", "setting"], sort=False).agg(
        change=("change" if "change" in hops else "setting", "first"), smallest_bucket=("n", "min"),
        widest_interval=("width", "max"))
    return profile.merge(meta.reset_index(), on=["model", "setting"], how="left")


def gap_sentence(profiles: pd.DataFrame) -> str:
    """Markdown: per model, which variants reproduce the card's hop profile and which do not (from
    :func:`gap_profiles`), how many of the card's rows have each half of it, and how many items the smallest
    hop bucket held."""
    printed = hop_profile(reported("logicmark"))
    highest, falls, rows = int(printed["one_hop_highest"].sum()), int(printed["falls_with_hops"].sum()), len(printed)
    parts = []
    for model, group in profiles.groupby("model", sort=False):
        yes = [f"`{s}`" for s in group.loc[group["card_profile"], "setting"]]
        no = [f"`{s}`" for s in group.loc[~group["card_profile"].astype(bool), "setting"]]
        said = (", ".join(yes) + (" reproduces it" if len(yes) == 1 else " reproduce it")) if yes \
            else "no variant reproduces it"
        if no:
            said += "; " + ", ".join(no) + (" does not" if len(no) == 1 else " do not")
        parts.append(f"**{model}**: {said}")
    smallest = int(profiles["smallest_bucket"].min()) if len(profiles) else 0
    widest = float(profiles["widest_interval"].max()) if len(profiles) else float("nan")
    return (f"Which choices give the card's hop profile (1-hop the highest bucket, as in {highest} of the card's "
            f"{rows} rows, and 5-hop below 2-hop, as in {falls} of them; card, \"Benchmark Results\"), read from "
            "the point estimates of the variants table: " + "; ".join(parts)
            + f". The smallest hop bucket there holds {smallest} items and the widest "
            f"per-hop 95% interval spans {widest:.0f} points, so a profile is a direction read from point "
            "estimates, not a difference beyond the intervals.")


def property_summary(properties: pd.DataFrame) -> str:
    """Markdown: how many of the card's stated properties our generator meets, and which differ (from the
    gap benchmark's ``properties.csv``)."""
    verdicts = properties["verdict"].value_counts()
    differ = properties.loc[properties["verdict"] == "differs", "property"].tolist()
    other = properties.loc[~properties["verdict"].isin(["holds", "differs"])]
    text = (f"Of {len(properties)} checks of our generator against what the card states (card, \"Hop Depth\"; card, "
            f"\"Design Decisions\"; card, \"Generator\"), {int(verdicts.get('holds', 0))} "
            f"hold and {int(verdicts.get('differs', 0))} differ" + (": " + ", ".join(f"`{p}`" for p in differ)
                                                                    if differ else ""))
    if len(other):
        text += "; " + ", ".join(f"`{r.property}` is {r.verdict}" for r in other.itertuples())
    return text + "."


def gap_by_hop(variants: pd.DataFrame) -> pd.DataFrame:
    """The gap benchmark's default-scoring rows (``variants.csv``, setting ``ours``) in the run's ``by_hop``
    layout: ``model, metric, value, ci_low, ci_high, n``, the model names without the backend in brackets."""
    rows = variants[variants["setting"] == "ours"].copy()
    rows["model"] = rows["model"].str.replace(r" \((transformers|llama\.cpp)\)$", "", regex=True)
    return rows[["model", "metric", "value", "ci_low", "ci_high", "n"]].reset_index(drop=True)


def gap_items(by_hop: pd.DataFrame) -> int:
    """How many items each model of :func:`gap_by_hop` scored (the hop buckets' n summed)."""
    hops = by_hop[by_hop["metric"].isin(HOP_COLUMNS)]
    return int(hops.groupby("model")["n"].sum().max())


def gap_lead(by_hop: pd.DataFrame, card: pd.DataFrame) -> str:
    """The page's first sentence: each model's card-style average with its 95% interval on the gap benchmark's
    items, against chance and the card's SmolLM2-135M row."""
    avg = by_hop[by_hop["metric"] == "avg"]
    card_smollm = card[(card["model"] == "SmolLM2-135M") & (card["metric"] == "avg")]["value"].item()
    models = "; ".join(f"{r.model} {one_decimal(r.value)}% [{one_decimal(r.ci_low)}, {one_decimal(r.ci_high)}], "
                       + ("above" if r.ci_low > 25 else "not above") + " chance (25%)" for r in avg.itertuples())
    where = "above every one of our intervals" if (avg["ci_high"] < card_smollm).all() else "within our intervals"
    return (f"On the same {gap_items(by_hop)} items of our generator, the card-style average accuracy is: "
            f"{models}. The card reports {card_smollm:.2f}% for its row named SmolLM2-135M on its own items (card, "
            f"\"Benchmark Results\"), {where}.")


def gap_view(by_hop: pd.DataFrame, card: pd.DataFrame, nearest: tuple[str, ...] | None = None) -> Table:
    """Ours (the gap benchmark's rows) and the card's nearest rows, per hop as values and ``avg`` with its
    interval, so the table fits the page; the per-hop intervals are in the figure above."""
    nearest = LOGICMARK_NEAREST if nearest is None else nearest
    ours = wide(by_hop, index=("model",), values="value").loc[:, [*HOP_COLUMNS, "avg"]]
    low = wide(by_hop, index=("model",), values="ci_low")["avg"]
    high = wide(by_hop, index=("model",), values="ci_high")["avg"]
    hops = by_hop[by_hop["metric"].isin(HOP_COLUMNS)]
    items = hops.groupby("model", sort=False)["n"].sum() if "n" in hops else None
    ours = ours.assign(avg_low=low, avg_high=high, source="ours",
                       items=items.reindex(ours.index).to_numpy() if items is not None else pd.NA)
    theirs = wide(card, index=("model",)).loc[[m for m in nearest], [*HOP_COLUMNS, "avg"]]
    theirs = theirs.assign(source="card (reported)")
    table = pd.concat([ours, theirs]).rename_axis("model").reset_index()
    table = table[["model", "source", *HOP_COLUMNS, "avg", "avg_low", "avg_high", "items"]]
    table["items"] = table["items"].astype("Int64")
    return present(table, percent=HOP_COLUMNS, intervals={"avg": ("avg_low", "avg_high")},
                   headers={"source": "Source", "avg": "avg [95% CI]", "items": "n", **{h: h for h in HOP_COLUMNS}},
                   missing="the card's rows are on its own items, none of ours",
                   note="Accuracy in %. Ours: n items per model; avg weights the hops by the card's shares (10/40/25/15/10 %, card, \"Hop "
                        "Depth\"), its interval a stratified normal approximation. Card: printed numbers on its own "
                        "items (card, \"Benchmark Results\"), no interval.")


def variants_view(variants: pd.DataFrame) -> Table:
    """The gap benchmark's variants per model: per hop as values, ``avg`` with its interval, and whether each
    has the card's hop profile (1-hop highest, 5-hop below 2-hop)."""
    rows = variants.copy()
    rows["model"] = rows["model"].str.replace(r" \((transformers|llama\.cpp)\)$", "", regex=True)
    table = wide(rows, index=("model", "setting"), values="value").loc[:, [*HOP_COLUMNS, "avg"]]
    table["avg_low"] = wide(rows, index=("model", "setting"), values="ci_low")["avg"]
    table["avg_high"] = wide(rows, index=("model", "setting"), values="ci_high")["avg"]
    profile = hop_profile(rows).set_index(["model", "setting"])
    table["card's profile"] = profile.loc[table.index, "card_profile"].to_numpy()
    table = table.rename_axis(["model", "variant"]).reset_index()
    return present(table, percent=HOP_COLUMNS, intervals={"avg": ("avg_low", "avg_high")},
                   headers={"avg": "avg [95% CI]", **{h: h for h in HOP_COLUMNS}},
                   note="Accuracy in %. Card's profile: 1-hop the highest bucket and 5-hop below 2-hop, as in the "
                        "card's rows.")


def properties_view(properties: pd.DataFrame) -> Table:
    """The gap benchmark's checks of our generator against the card's stated properties (``properties.csv``):
    the property, what the card says, what was checked, the count of items that have it and the verdict."""
    table = properties.assign(items=[f"{int(c):,} of {int(o):,}" for c, o in zip(properties["count"], properties["of"])])
    return present(table[["property", "card", "checked", "items", "verdict"]],
                   headers={"card": "The card says", "checked": "Checked", "items": "Items"})
