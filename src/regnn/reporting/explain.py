"""explain.py's files: explain.csv (one row per relation group: its weight and each ablation's drops, mean and 95%
interval over the runs), weights.csv (per layer and relation), agreement.csv (rho between the rankings),
explain.md (the tables and what they say) and explain.png (weights per layer beside the ablation drops)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from regnn.description import relation_label
from regnn.evaluation.importance import agreement_verdict, interval, runs_to_tell, verdict
from regnn.reporting.relation_signals import _on_cell, column_label, masked_sizes, means, study_lines, tracked
from regnn.runs import io_safe

KINDS = {"masked": "masked at inference", "retrain": "retrained without it"}
FREE_POINTS = 1.0  # a removal whose validation Micro-F1 cost is at most this, at the top of its interval, is free
RECOMMENDED_RUNS = 10  # docs/explain.md: fewer runs give intervals too wide to tell most groups apart


def group_table(e, groups: dict[str, tuple[str, ...]]) -> pd.DataFrame:
    """One row per relation group (name -> its relations): the weight (its relations' mean over the layers, per
    run, then over the runs) and the drops of each ablation and score. e: regnn.pipeline.explain.Explained."""
    w = e.per_run["weights"]
    rows = []
    for name, members in groups.items():
        per_run = w[w.relation.isin(members)].groupby("run").weight.mean()
        mean, low, high = interval(per_run.to_numpy())
        row = {"group": name, "weight": mean, "weight_low": low, "weight_high": high}
        for _, a in e.ablation[e.ablation.group == name].iterrows():
            k = f"{a.kind}_{a.score.replace('_micro_f1', '')}_drop"
            row |= {k: a["mean"], f"{k}_low": a.low, f"{k}_high": a.high}
        rows.append(row)
    table = pd.DataFrame(rows)
    found = means(e)
    for q in found.columns:  # every weight-derived quantity's mean over the runs (regnn.pipeline.relation_signals)
        if q != "mean_weight":
            table[q] = table.group.map(found[q])
    return table


def free_groups(table: pd.DataFrame, kind: str) -> list[str]:
    """The groups whose removal costs nothing within the interval: the upper bound of the validation drop's 95%
    interval at most FREE_POINTS (a group with a single run has no interval and is never called free)."""
    col = f"{kind}_val_drop_high"
    if col not in table:
        return []
    return [r.group for _, r in table.iterrows() if not math.isnan(r[col]) and r[col] <= FREE_POINTS]


def _fmt(m, lo, hi, digits=2) -> str:
    if m is None or (isinstance(m, float) and math.isnan(m)):
        return "–"
    if lo is None or math.isnan(lo):
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def markdown(e, table: pd.DataFrame, title: str, epoch_times: dict) -> str:
    kinds = [k for k in KINDS if f"{k}_val_drop" in table]
    q = tracked(e)
    shown = q if q in table and q != "mean_weight" else None
    head = [
        "relation (with its reverse)",
        *([column_label(shown)] if shown else []),
        "mean weight (layers, directions)",
        *(f"{KINDS[k]}: val / test drop" for k in kinds),
    ]
    lines = [f"# {title}", "", *headline(e, table, kinds), ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in table.iterrows():
        cells = [r.group, *([f"{r[shown]:.3f}"] if shown else []), _fmt(r.weight, r.weight_low, r.weight_high, 3)]
        for k in kinds:
            val = _fmt(r[f"{k}_val_drop"], r[f"{k}_val_drop_low"], r[f"{k}_val_drop_high"])
            test = _fmt(r[f"{k}_test_drop"], r[f"{k}_test_drop_low"], r[f"{k}_test_drop_high"])
            cells.append(f"{val} / {test}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *notes(e, table, kinds, epoch_times)]
    return "\n".join(lines) + "\n"


def headline(e, table: pd.DataFrame, kinds: list[str]) -> list[str]:
    """The report's first lines: what was measured to be true. The retrained ablation where it exists (else the
    masked one, said not to be the cost), each group's three-way verdict, whether any group is free, and what
    the weights are worth beside it."""
    runs = e.per_run["weights"].run.nunique()
    kind = "retrain" if "retrain" in kinds else "masked"
    out = []
    if runs < RECOMMENDED_RUNS:
        out.append(
            f"**{runs} runs**, fewer than the {RECOMMENDED_RUNS} the docs recommend: the intervals are wide, and "
            "a verdict that cannot be told from these runs says so.\n"
        )
    out.append(
        "**Which relations matter**, retrained without each group on the same seeds (paired by seed): measured, "
        "the answer to trust. A group matters where its whole 95% interval of validation Micro-F1 lost is above "
        f"{FREE_POINTS:g} point, is free where the whole interval is at most {FREE_POINTS:g} point:"
        if kind == "retrain"
        else "**Which relations matter, masked only**: each group cut out of the trained models at inference. That "
        "is not what a group costs: a model trained without it learns to do without it, or to read the rest "
        f"otherwise{masked_sizes()}; `ablation=retrain` measures the cost. A group matters where its whole 95% "
        f"interval of validation Micro-F1 lost is above {FREE_POINTS:g} point, may be free where it is at most "
        f"{FREE_POINTS:g} point:"
    )
    drops = e.per_run[kind]
    verdicts = {}
    for _, r in table.iterrows():
        lo, hi = r[f"{kind}_val_drop_low"], r[f"{kind}_val_drop_high"]
        verdicts[r.group] = v = verdict(lo, hi, FREE_POINTS)
        words = {"matters": "matters", "free": "free" if kind == "retrain" else "may be free (retrain to confirm)"}
        say = words.get(v, "cannot tell from these runs")
        if v == "cannot tell":
            vals = drops[(drops.group == r.group) & (drops.score == "val_micro_f1")]["drop"].to_numpy()
            need = runs_to_tell(vals, FREE_POINTS)
            say += f" (about {need} runs would tell)" if need else ""
        drop = _fmt(r[f"{kind}_val_drop"], lo, hi)
        test = (r[f"{kind}_test_drop"], r[f"{kind}_test_drop_low"], r[f"{kind}_test_drop_high"])
        warn = ""
        if v == "free" and test[1] > FREE_POINTS:  # validation decides; a test that disagrees is said, not used
            warn = f" (but test loses {_fmt(*test)}: validation decides, and here test disagrees)"
        out.append(f"- {r.group}: **{say}**: {drop} points of validation Micro-F1 lost{warn}")
    if "free" not in verdicts.values():
        out.append("- No group is free: none costs at most 1 point at the top of its interval.")
    return out + ["", *study_lines(e, kind), "", weights_line(e, table, kind)]


def weights_line(e, table: pd.DataFrame, kind: str) -> str:
    """What the mean learned weights say beside the ablation: whether their ranking of the groups agrees with it,
    by the interval of Spearman's rho, and which group each puts first."""
    a = _on_cell(e, "mean_weight", kind)
    by_weight = table.sort_values("weight", ascending=False).group.iloc[0] if len(table) else None
    by_drop = table.sort_values(f"{kind}_val_drop", ascending=False).group.iloc[0] if len(table) else None
    tops = (
        f" The weights put {by_weight} first, the ablation {by_drop}."
        if by_weight != by_drop
        else f" Both put {by_drop} first."
    )
    if a is None:
        return (
            "**The mean weights** cannot be ranked against the ablation (fewer than 3 relation groups, or a "
            f"constant ranking); a weight is a learned scale, not a cost.{tops}"
        )
    rho = _fmt(a.rho, a.low, a.high)
    v = agreement_verdict(a.low, a.high)
    if v == "disagree":
        return (
            f"**The mean weights disagree with this ablation** (Spearman's rho {rho}): read the ablation, not "
            f"the weights.{tops}"
        )
    if v == "agree":
        return f"**The mean weights rank the groups as this ablation does** (Spearman's rho {rho}).{tops}"
    return (
        f"**Whether the mean weights rank the groups as this ablation does cannot be told from these runs** "
        f"(Spearman's rho {rho}, an interval that spans 0): read the ablation, not the weights.{tops}"
    )


def notes(e, table: pd.DataFrame, kinds: list[str], epoch_times: dict) -> list[str]:
    runs = e.per_run["weights"].run.nunique()
    out = [
        f"- Means over the cell's {runs} runs (seeds), with 95% t-intervals. A group's mean weight is the mean of "
        "its relations' learned weights over the layers and both directions (per layer: weights.csv, "
        "explain.png): a learned scale of the messages, not a cost. A drop is the Micro-F1 (points) lost when the "
        "relations are removed: masked at inference in the trained runs (not the cost), or retrained without "
        "them on the same seeds (paired by seed). explain.csv holds every weight-derived quantity per group, "
        "agreement.csv each one's rho with each ablation (docs/explain.md).",
    ]
    kind = "retrain" if "retrain" in kinds else "masked"
    free = free_groups(table, kind)
    if free:
        saved = [
            f"{g} {epoch_times[g][1]:.4f} s (the cell: {epoch_times[g][0]:.4f} s)" for g in free if g in epoch_times
        ]
        out.append(
            f"- To train without a free group: 'dataset.drop_relations=[\"{free[0].split(' + ')[0]}\"]' (its "
            "reverse goes with it)"
            + (f"; seconds per epoch without it: {', '.join(saved)}." if saved else ".")
            + ("" if kind == "retrain" else " Masking only: ablation=retrain checks it by training without them.")
        )
    return out


def epoch_savings(e) -> dict[str, tuple[float, float]]:
    """Per retrained group (by the relations its cell dropped): (the cell's seconds per epoch, the retrained
    cell's)."""
    from omegaconf import OmegaConf

    base, out = _epoch_time(e.cell), {}
    for d in e.retrain_cells:
        t = _epoch_time(d)
        if base is not None and t is not None:
            out[" + ".join(OmegaConf.load(d / "config.yaml").dataset.drop_relations)] = (base, t)
    return out


def _epoch_time(cell: Path) -> float | None:
    s = io_safe.read_json(cell / "results.json", set_aside=False) or {}
    return ((s.get("metrics") or {}).get("epoch_time_s") or {}).get("mean")


def write(e, out: Path, title: str, groups: dict[str, tuple[str, ...]]) -> list[Path]:
    """Every file of the report into out; e: regnn.pipeline.explain.Explained, groups: name -> its relations."""
    table = group_table(e, groups)
    epoch_times = epoch_savings(e) if e.retrain_cells else {}
    table["epoch_s_without"] = [epoch_times.get(g, (np.nan, np.nan))[1] for g in table.group]
    w = e.weights.copy()
    w.insert(2, "label", [relation_label(r, [s, d]) for r, s, d in zip(w.relation, w.source, w.destination)])
    files = {
        "explain.csv": table.to_csv(index=False, float_format="%.4f"),
        "weights.csv": w.to_csv(index=False, float_format="%.4f"),
        "agreement.csv": e.agreement.to_csv(index=False, float_format="%.4f"),
        "explain.md": markdown(e, table, title, epoch_times),
    }
    for name, text in files.items():
        io_safe.write_text(out / name, text)
    draw(e, table, out / "explain.png", title)
    return [out / n for n in files] + [out / "explain.png"]


def draw(e, table: pd.DataFrame, path: Path, title: str) -> None:
    """Left: each relation's weight per layer (mean, 95% interval); right: each group's validation drop per
    ablation (mean, 95% interval)."""
    from regnn.reporting.figures import save, subplots

    w = e.weights
    rels = list(dict.fromkeys(w.relation))
    layers = sorted(w.layer.unique())
    fig, (left, right) = subplots(1, 2, figsize=(12, 0.35 * max(len(rels), len(table)) + 2.2))
    y = np.arange(len(rels))[::-1]
    step = 0.8 / max(len(layers), 1)
    for k, layer in enumerate(layers):
        d = w[w.layer == layer].set_index("relation").reindex(rels)
        err = _err(d["mean"], d.low, d.high)
        left.errorbar(d["mean"], y + 0.4 - step * (k + 0.5), xerr=err, fmt="o", ms=3, capsize=2, label=f"layer {layer}")
    ends = w.drop_duplicates("relation").set_index("relation")
    left.set_yticks(y, [relation_label(r, [ends.source[r], ends.destination[r]]) for r in rels], fontsize=8)
    left.axvline(1.0, color="0.7", lw=0.8, ls="--")  # every weight starts at 1
    left.set_xlabel("learned weight (mean, 95% interval over the runs)")
    left.legend(fontsize=7, loc="best")
    yg = np.arange(len(table))[::-1]
    kinds = [k for k in KINDS if f"{k}_val_drop" in table]
    for k, kind in enumerate(kinds):
        m = table[f"{kind}_val_drop"]
        err = _err(m, table[f"{kind}_val_drop_low"], table[f"{kind}_val_drop_high"])
        right.errorbar(m, yg + 0.15 - 0.3 * k, xerr=err, fmt="s", ms=4, capsize=3, label=KINDS[kind])
    right.set_yticks(yg, list(table.group), fontsize=8)
    right.set_ylim(-0.7, len(table) - 0.3)
    right.axvline(0.0, color="0.7", lw=0.8, ls="--")
    right.set_xlabel("validation Micro-F1 lost without it (points)")
    right.legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=10)
    save(fig, path)


def _err(mean, low, high):
    """Error bar lengths (0 where there is no interval: a single run)."""
    lo = np.nan_to_num(np.asarray(mean, float) - np.asarray(low, float))
    hi = np.nan_to_num(np.asarray(high, float) - np.asarray(mean, float))
    return np.vstack([lo, hi])
