"""The supervision page's views (paper Section 4: Figure 4, the SFT rows of Tables 2, 3 and 5): the training
views from a :class:`finelogic.runs.supervision.SupervisionRun`, the SFT rows from the accuracy and soundness
runs that evaluated its checkpoints (:func:`sft_rows`: the base model's CoT rows and the fine-tuned models')."""
from __future__ import annotations

from typing import Any

import pandas as pd
import seaborn as sns
from IPython.display import Markdown

from finelogic.book import figures
from finelogic.book.display import model_output, side_by_side
from finelogic.book.tables import Table, paper_table, present, present_paper
from finelogic.data.suites import PAPER_NAMES
from finelogic.eval.accuracy import summarize
from finelogic.eval.claims import BASE_SETTING, fine_tuned_setting
from finelogic.prompts import DIRECT

#: The paper's SFT rows are for these models (Table 2).
PAPER_SFT_MODELS = ("Llama-3.1-8B-Instruct", "Qwen-2.5-7B-Instruct")
#: The row of the model trained on solver traces (:mod:`finelogic.baselines.logipt`).
LOGIPT = "LogiPT"


def sft_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows (records or judged steps) of the fine-tuned models (``SFT-<style>``, ``LogiPT``) and of the
    model they were trained from under their training prompts (CoT; Direct beside LogiPT), from an accuracy or
    soundness run's table of every row; the first model's CoT rows when it has no fine-tuned row."""
    if table.empty:
        return table
    tuned = table["setting"].map(lambda s: fine_tuned_setting(s) is not None or s == LOGIPT)
    base = table.loc[tuned, "model"].iloc[0] if tuned.any() else table["model"].iloc[0]
    prompts = (BASE_SETTING, *([DIRECT.name] if (table["setting"] == LOGIPT).any() else []))
    return table[(table["model"] == base) & (tuned | table["setting"].isin(prompts))].reset_index(drop=True)


def train_params(run) -> dict[str, Any]:
    """The training settings a caption names: method, steps (or epochs), batch, learning rate, LoRA layers."""
    config = run.train_config
    return dict(method=config.method, steps=config.max_steps or f"{config.epochs} epochs",
                batch=config.batch_size, lr=config.learning_rate, lora_layers=config.lora_layers)


def figure4(run) -> list[Any]:
    """Figure 4: the first FLD training problem with a proof (its user turn), then its assistant turn as
    each style writes it, side by side."""
    rows = run.figure4
    first = rows.iloc[0]
    return [Markdown("**Problem** `" + first["id"] + "`, gold **" + first["label"] + "**\n\n```text\n"
                     + first["user"] + "\n```"),
            side_by_side(dict(zip(rows["style"], rows["text"])))]


@figures.themed
def loss_curves(losses: pd.DataFrame, *, whose: str = "this run"):
    """Training loss per optimizer step, one line per trained model (``setting``)."""
    fig, axes = figures.new_figure(height=3.8)
    ax = axes[0, 0]
    sns.lineplot(losses, x="step", y="loss", hue="setting", style="setting", markers=True, dashes=False,
                 ax=ax, palette=figures.PALETTE[:losses["setting"].nunique()], markersize=7, linewidth=2)
    ax.get_legend().remove()
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("training loss (nats / target token)")
    ax.set_title(f"Training loss by supervision style ({whose})")
    figures.legend_below(fig)
    return figures.finish(fig, alt="Line chart of the training loss (nats per target token) against the optimizer "
                                   "step, one line per trained model: "
                                   + "; ".join(f"{name} from {g['loss'].iloc[0]:.2f} to {g['loss'].iloc[-1]:.2f}"
                                               for name, g in losses.groupby("setting", sort=False)) + ".")


def accuracy_figure(run):
    """Accuracy by dataset of our rows (the base model under CoT and each fine-tuned style, Wilson 95%) below
    the paper's CoT and SFT rows of Table 2, one panel per dataset; ``run``: an accuracy run."""
    records = sft_rows(run.records)
    reported = paper_sft_rows()
    if records.empty:
        ours = pd.DataFrame(columns=reported.columns, dtype=float)
        low = high = None
    else:
        summary = summarize(records, by=("setting", "dataset"))
        summary["dataset"] = summary["dataset"].map(PAPER_NAMES)
        ours, low, high = (summary.pivot(index="setting", columns="dataset", values=v)
                           .reindex(index=list(dict.fromkeys(summary["setting"])))
                           for v in ("accuracy", "ci_low", "ci_high"))
        base = str(records["model"].iloc[0])
        ours.index = [f"{base} / {s}" for s in ours.index]
        low.index = high.index = ours.index
    return figures.paper_vs_ours(ours, reported.reindex(columns=list(ours.columns)), low=low, high=high,
                                 xlabels="accuracy (%)",
                                 title="Accuracy by supervision style: the paper's fine-tuned models (Table 2) "
                                       "and ours")


def loss_fell(training: pd.DataFrame) -> str:
    """``"<k> of <n>"`` trained models whose loss fell from the first to the last steps."""
    return f"{int((training.loss_last < training.loss_first).sum())} of {len(training)}"


def loss_change(training: pd.DataFrame) -> str:
    """``"NL 2.31 → 1.80, ..."``: first and last losses per trained model."""
    return ", ".join(f"{r.style} {r.loss_first:.2f} → {r.loss_last:.2f}" for r in training.itertuples())


def one_response(run) -> list[Any]:
    """One FLD response of a fine-tuned model of an accuracy run (else its first record) with its gold label
    and answer."""
    records = sft_rows(run.records)
    if records.empty:
        return []
    tuned = records[(records.setting != BASE_SETTING) & (records.dataset == "fld")]
    shown = tuned.iloc[0] if not tuned.empty else records.iloc[0]
    answer = shown["prediction"] if isinstance(shown["prediction"], str) else "no answer"
    return [Markdown(f"{shown['setting']} on item `{shown['id']}`, gold **{shown['gold']}**, read as **{answer}**."),
            model_output(shown["response"])]


def checks_view(run) -> Table:
    """Lines judged per style (the run's ``checks``) in the book's table style."""
    return present(run.checks, headers={"failing": "Failing lines"})


def training_view(run) -> Table:
    """One row per trained model (the run's ``training``) in the book's table style."""
    training = run.training
    shown = [c for c in training.columns if c not in ("style", "method", "checkpoint")]
    notes = []
    if "method" in training and training["method"].nunique() == 1:
        notes.append(f"Method: {training['method'].iloc[0]}.")
    else:
        shown.append("method")
    if "checkpoint" in training:
        notes.append("Checkpoints: " + ", ".join(map(str, training["checkpoint"])) + ".")
    table = present(training[shown], digits={"seconds": 1, "tokens_per_s": 1, "loss_first": 2, "loss_last": 2},
                    headers={"setting": "Model", "target_tokens": "Target tokens", "seconds": "Time (s)",
                             "tokens_per_s": "Tokens / s", "loss_first": "Loss first", "loss_last": "Loss last"})
    return Table(table.frame, (*table.notes, *notes), table.numeric)


def paper_sft_view() -> Table:
    """:func:`paper_sft_rows` in the book's table style."""
    return present_paper("table2", rows=paper_sft_rows().index)


def paper_sft_soundness_view() -> Table:
    """The paper's Table 3 rows for the two models it fine-tuned (Few-shot, LogiPT and the four SFT styles)."""
    return present_paper("table3", rows=[i for i in paper_table("table3").index if i[0] in PAPER_SFT_MODELS])


def paper_sft_rows() -> pd.DataFrame:
    """The paper's CoT and SFT rows of Table 2 for the two models it fine-tuned."""
    table2 = paper_table("table2")
    rows = [i for i in table2.index if (i[1].startswith("SFT") or i[1] == "CoT") and i[0] in PAPER_SFT_MODELS]
    return table2.loc[rows]
