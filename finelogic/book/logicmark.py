"""Display helpers of the LogicMark page (``notebooks/07_logicmark.ipynb``): captions, the card beside our
rows, figures and the worked example, made from a :class:`finelogic.runs.logicmark.LogicMarkRun`, so the
notebook holds no function definitions, loops or chart code."""
from __future__ import annotations

from typing import Any

import pandas as pd

from finelogic.book.tables import Table, present, wide
from finelogic.eval.logicmark import HOPS, derivation

#: The card's hop columns, ``1-hop`` ... ``5-hop``.
HOP_COLUMNS = [f"{h}-hop" for h in HOPS]
#: Card rows drawn beside ours in the figure.
CARD_ROWS_SHOWN = ("SmolLM2-135M", "SmolLM2-1.7B", "Qwen2.5-3B", "pythia-14m")


def note(run: Any, notebook: str, what: str, model: str | None = None) -> str:
    """The provenance caption under every table and figure of the page, then ``what``."""
    from finelogic.book.provenance import caption

    p = run.provenance
    return (caption(notebook, p.profile, p.seed, model=model, n=p.n, items=p.data["logicmark"],
                    normalization=p.settings["normalization"]) + " " + what)


def card_beside_ours(card: pd.DataFrame, by_hop: pd.DataFrame, n: int) -> pd.DataFrame:
    """The card's reported rows, then ours (hops and avg, setting ``ours, n = <n>``), wide, rounded to 2."""
    ours = by_hop[by_hop["metric"].isin([*HOP_COLUMNS, "avg"])].assign(setting=f"ours, n = {n}")
    return wide(pd.concat([card, ours[card.columns]]), index=("model", "setting")).round(2)


#: Why a LogicMark cell shows the missing mark.
LOGICMARK_MISSING = "no item of this kind in this run (or, for the card, no value printed)"


def card_view(card: pd.DataFrame, by_hop: pd.DataFrame, n: int) -> Table:
    """:func:`card_beside_ours` in the book's table style: the card's rows (``card``) then ours (``ours``),
    percentages with one decimal (the card prints two)."""
    table = card_beside_ours(card, by_hop, n).reset_index()
    table["setting"] = ["ours" if str(s).startswith("ours") else "card" for s in table["setting"]]
    values = [c for c in table.columns if c not in ("model", "setting")]
    return present(table, percent=values, headers={"setting": "Source"}, missing=LOGICMARK_MISSING,
                   note=f"card: reported on the card's own 5,000 items (LogicMark dataset card), rounded to one "
                        f"decimal; ours: this run, n = {n} items per model.")


def ci_view(table: pd.DataFrame, columns: str = "metric", value: str = "value") -> Table:
    """A long ``model, <columns>, <value>, ci_low, ci_high`` table as one row per model, each cell
    ``12.3 [8.1, 17.0]`` (Wilson 95%; the card-style ``avg``: stratified normal approximation)."""
    from finelogic.eval.logicmark import with_ci

    return present(with_ci(table, columns=columns, value=value).rename_axis("model"), missing=LOGICMARK_MISSING)


def hop_figure(by_hop: pd.DataFrame, card: pd.DataFrame):
    """Accuracy by hop: our rows (solid, Wilson 95% bands) and some of the card's (dashed grey, hollow
    marks, ``card: <model> (reported)``); chance dotted."""
    from finelogic.book import figures

    ours = wide(by_hop, index=("model",)).loc[:, HOP_COLUMNS]
    reference = wide(card, index=("model",)).loc[list(CARD_ROWS_SHOWN), HOP_COLUMNS]
    low = wide(by_hop, index=("model",), values="ci_low").loc[:, HOP_COLUMNS]
    high = wide(by_hop, index=("model",), values="ci_high").loc[:, HOP_COLUMNS]
    return figures.accuracy_by_group(ours, reference=reference, reference_name="card", low=low, high=high,
                                     chance=25, xlabel="hops in the equality chain",
                                     title="LogicMark accuracy by hop: ours (solid, 95% bands) and the card's "
                                           "(dashed)")


def style_figure(by_style: pd.DataFrame):
    """Accuracy by the generator's graph style, bars per model; chance dotted."""
    from finelogic.book import figures

    return figures.grouped_bars(wide(by_style, index=("model",), columns="style", values="accuracy"),
                                title="Accuracy by graph style (this run)", xlabel="graph style", chance=25,
                                ylim=(0, 100))


def headline_values(by_hop: pd.DataFrame, card: pd.DataFrame, embedded: str, control: str) -> dict[str, str]:
    """The numbers the page's text quotes: the embedded model's avg, 1-hop and 5-hop, the card's
    SmolLM2-135M avg, and the control's avg (``n/a`` without a control row)."""
    rows = by_hop.set_index(["model", "metric"])["value"]
    card_smollm = card[(card["model"] == "SmolLM2-135M") & (card["metric"] == "avg")]["value"].item()
    return {"embedded_avg": f"{rows[(embedded, 'avg')]:.1f}", "embedded_hop1": f"{rows[(embedded, '1-hop')]:.1f}",
            "embedded_hop5": f"{rows[(embedded, '5-hop')]:.1f}", "card_smollm_avg": f"{card_smollm:.2f}",
            "control_avg": f"{rows[(control, 'avg')]:.1f}" if (control, "avg") in rows else "n/a"}


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
    from finelogic.data.generators.logicmark import Statement

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
