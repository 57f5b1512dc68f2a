"""The zoo study's report (regnn.experiments.zoo_defaults): the leave-one-family-out choices and the held-out
scores, with the targets checked (RE-GAT within 2 points of RE-GCN, no model's mean below the majority class,
every run ended by its stopping rule)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from regnn.evaluation.importance import interval

GAT_GAP = 2.0  # RE-GAT's held-out mean may trail RE-GCN's by at most this many points


def selection_table(runs: pd.DataFrame, families: list[str], seeds: int) -> pd.DataFrame:
    """Mean validation Micro-F1 per model, setting and family over the selection seeds."""
    sel = runs[runs.graph.isin(families) & (runs.seed < seeds)]
    return sel.groupby(["model", "setting", "graph"]).val.mean().unstack("graph")[families].reset_index()


def scored(runs: pd.DataFrame, graph: str, model: str, setting: str, score_seeds: int) -> pd.DataFrame:
    """The runs of one graph x model x setting over the scoring seeds, each seed once."""
    r = runs[(runs.graph == graph) & (runs.model == model) & (runs.setting == setting)]
    return r[r.seed < score_seeds].drop_duplicates("seed")


def heldout_table(runs: pd.DataFrame, picks: dict, score_seeds: int) -> pd.DataFrame:
    """Per graph and model: the setting chosen without that graph, scored on it over the scoring seeds."""
    rows = []
    for (graph, model), setting in picks.items():
        r = scored(runs, graph, model, setting, score_seeds)
        rows.append({
            "graph": graph, "model": model, "setting": setting, "runs": len(r),
            "test_mean": r.test.mean(), "test_std": r.test.std(ddof=1), "val_mean": r.val.mean(),
            "chance": float(r.chance.iloc[0]) if len(r) and r.chance.notna().all() else np.nan,
            "runs_below_chance": int((r.test < r.chance).sum()), "runs_at_cap": int(r.at_cap.sum()),
            "median_epochs": float(r.epochs.median()),
        })  # fmt: skip
    return pd.DataFrame(rows)


def gat_gap(runs: pd.DataFrame, picks: dict, graph: str, score_seeds: int) -> tuple[float, float, float] | None:
    """RE-GAT's test Micro-F1 minus RE-GCN's, seed by seed, with its 95% interval (mean, low, high)."""
    if (graph, "re_gat") not in picks or (graph, "re_gcn") not in picks:
        return None
    by = {
        m: scored(runs, graph, m, picks[(graph, m)], score_seeds).set_index("seed").test for m in ("re_gat", "re_gcn")
    }
    common = by["re_gat"].index.intersection(by["re_gcn"].index)
    return interval((by["re_gat"][common] - by["re_gcn"][common]).tolist())


def verdicts(held: pd.DataFrame, gaps: dict) -> list[str]:
    """The targets, one line each, with the graphs that miss them."""
    lines = []
    miss_gap = [g for g, v in gaps.items() if v is not None and v[0] < -GAT_GAP]
    lines.append(
        f"- RE-GAT within {GAT_GAP:g} points of RE-GCN (mean test Micro-F1): "
        + ("met on every graph" if not miss_gap else f"missed on {', '.join(miss_gap)}")
    )
    scored = held[held.model != "mlp"]
    below = scored[scored.test_mean < scored.chance]
    lines.append(
        "- No model's mean below the majority class (MLP aside, which has only the target's own features): "
        + ("met" if below.empty else "missed: " + ", ".join(f"{r.model} on {r.graph}" for r in below.itertuples()))
    )
    capped = held[held.runs_at_cap > 0]
    lines.append(
        "- Every run ended by its stopping rule, none by the epoch cap: "
        + ("met" if capped.empty else "missed: " + ", ".join(f"{r.model} on {r.graph} ({r.runs_at_cap} runs)"
                                                            for r in capped.itertuples()))
    )  # fmt: skip
    return lines


def _f(x: float) -> str:
    return "-" if pd.isna(x) else f"{x:.2f}"


def markdown(runs, families, builtin, picks, meta) -> str:
    """meta: select_seeds, score_seeds, about ({family: text}), grid ({model: {setting: overrides}})."""
    sel = selection_table(runs, families, meta["select_seeds"])
    held = heldout_table(runs, picks, meta["score_seeds"])
    gaps = {g: gat_gap(runs, picks, g, meta["score_seeds"]) for g in [*families, *builtin]}
    out = [
        "# `dataset=custom` defaults chosen on a zoo of graphs, scored out of sample",
        "",
        "`make zoo` (regnn.experiments.zoo_defaults). Every graph is trained as a user's: written as npz and "
        "read through `dataset=custom` with nothing but the defaults and the setting named. Each model's "
        f"settings are trained on every family with seeds 0-{meta['select_seeds'] - 1}; for each family the "
        "setting with the best mean validation Micro-F1 over the other families is scored on it with seeds "
        f"0-{meta['score_seeds'] - 1} (test scores never choose; each row says how many of them are trained)."
        + (
            f" {', '.join(builtin)} are read from their files as custom graphs (no per-dataset settings) and scored "
            "with the setting chosen over every family."
            if builtin
            else " No built-in graph is scored in this report."
        ),
        "",
        "## Targets",
        "",
        *verdicts(held, gaps),
        "",
        "## The families",
        "",
        "| family | graph |",
        "|---|---|",
        *[f"| `{f}` | {meta['about'].get(f, '')} |" for f in families],
        "",
        "## Held-out scores (test Micro-F1, the setting chosen without the graph)",
        "",
        "| graph | model | setting | test Micro-F1 | val | majority class | runs below it | runs at the cap | "
        "median epochs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in held.itertuples():
        out.append(
            f"| {r.graph} | {r.model} | {r.setting} | {_f(r.test_mean)} ± {_f(r.test_std)} ({r.runs} runs) | "
            f"{_f(r.val_mean)} | {_f(r.chance)} | {r.runs_below_chance} | {r.runs_at_cap} | {r.median_epochs:.0f} |"
        )
    out += ["", "RE-GAT minus RE-GCN, paired by seed (test Micro-F1, 95% interval):", ""]
    for g, v in gaps.items():
        if v is not None:
            out.append(f"- {g}: {v[0]:+.2f} [{_f(v[1])}, {_f(v[2])}]")
    out += ["", "## Selection (mean validation Micro-F1 over the selection seeds)", ""]
    out += ["| model | setting | overrides | " + " | ".join(families) + " |",
            "|---|---|---|" + "---|" * len(families)]  # fmt: skip
    for r in sel.itertuples(index=False):
        over = " ".join(meta["grid"].get(r.model, {}).get(r.setting, [])) or "-"
        out.append(f"| {r.model} | {r.setting} | `{over}` | " + " | ".join(_f(v) for v in r[2:]) + " |")
    return "\n".join(out) + "\n"
