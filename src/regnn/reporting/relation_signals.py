"""What explain's report says about the quantities read off the weights (regnn.pipeline.relation_signals): which
one tracked the retrained ablation best on the committed study (regnn.experiments.weight_study, summarised in
resources/relation_signals.json), how well it agrees with the ablation on the user's cell, and what the mean
weight (the number users look at first) is worth there."""

from __future__ import annotations

import functools
import json
import math
from importlib import resources

import pandas as pd

from regnn.evaluation.importance import agreement_verdict

NAMES = {
    "mean_weight": "the mean learned weight",
    "last_into_target": "the last layer's weights into the target type",
    "last_share": "the relations' share of the targets' last-layer messages",
    "flow_share": "the relations' share of the messages that flow into the targets, over every layer",
    "taylor": "the validation loss's first-order change without the relation (-w dL/dw)",
    "gradient": "the validation loss's sensitivity to the relation's weights (|dL/dw|)",
}


@functools.cache
def study() -> dict | None:
    """The committed study's summary, or None where it is not installed (read once: a report asks it often)."""
    f = resources.files("regnn").joinpath("resources/relation_signals.json")
    return json.loads(f.read_text()) if f.is_file() else None


def _rho(a) -> str:
    return f"{a.rho:.2f} [{a.low:.2f}, {a.high:.2f}]" if math.isfinite(a.low) else f"{a.rho:.2f}"


def _on_cell(e, quantity: str, kind: str):
    rows = e.agreement
    row = rows[(rows.quantity == quantity) & (rows.kind == kind) & (rows.score == "val_micro_f1")]
    return None if row.empty or math.isnan(row.rho.iloc[0]) else row.iloc[0]


def _available(e) -> set[str]:
    signals = e.per_run.get("signals")
    return {"mean_weight"} | (set(signals.quantity) if signals is not None and len(signals) else set())


def tracked(e) -> str | None:
    """The quantity this report shows beside the ablation: the study's best that this cell's model has."""
    s = study()
    if s is None:
        return None
    for q in [r["quantity"] for r in s.get("ranking", [])] or [s["best"]]:
        if q in _available(e):
            return q
    return None


def column_label(q: str) -> str:
    """The report table's header of the quantity `tracked` chose, saying what the study found of it."""
    s = study() or {}
    ranked = {r["quantity"]: r for r in s.get("ranking", [])}
    if q == s.get("best") and s.get("tracks"):
        return f"{q} (tracks the retrained ablation best)"
    if ranked.get(q, {}).get("tracks"):
        return f"{q} (tracked the retrained ablation in the study)"
    return f"{q} (the study's closest this model has; it did not track on every graph)"


def study_lines(e, kind: str) -> list[str]:
    """The study's verdict on the weight-derived quantities and the chosen one's agreement on this cell."""
    s = study()
    if s is None:
        return ["- No study of the weight-derived quantities is installed (`make weight-study` makes it)."]
    graphs = ", ".join(f"{g} {v[0]:.2f}" for g, v in s["per_graph"].items())
    if not s["tracks"]:
        return [
            "**No quantity read off the weights tracked the retrained ablation on every graph studied** "
            f"(results/weight_study/study.md; the closest, {s['best']}, rho {graphs}): read the ablation, not the "
            "weights."
        ]
    q = tracked(e)
    out = [
        f"**The quantity read off the weights that tracked the retrained ablation best** on the graphs studied "
        f"(results/weight_study/study.md, every group retrained, Spearman's rho: {graphs}) is {s['best']}, "
        f"{NAMES.get(s['best'], s['best'])}."
    ]
    if q is None:
        return out + ["This model has none of the quantities studied: read the ablation."]
    if q != s["best"]:
        ranked = {r["quantity"]: r for r in s.get("ranking", [])}
        out.append(
            f"This model's layers do not give it (RE-GCN's REGCNConv layers only); the next best it has is {q}"
            + ("." if ranked.get(q, {}).get("tracks", True) else ", which did not track it on every graph studied.")
        )
    a = _on_cell(e, q, kind)
    if a is None:
        return out + [
            "On this cell it cannot be ranked against the ablation (fewer than 3 relation groups, or a constant "
            f"ranking){_tops(e, q, kind)}."
        ]
    v = agreement_verdict(a.low, a.high)
    say = {
        "agree": "ranks the groups as this ablation does",
        "disagree": "ranks the groups against this ablation: read the ablation",
        "cannot tell": "cannot be told to rank the groups as this ablation does or not (its interval spans 0)",
    }[v]
    return out + [f"On this cell {q} {say} (Spearman's rho {_rho(a)})."]


def _tops(e, q: str, kind: str) -> str:
    """'; it puts X first, as the ablation does' (or 'the ablation Y'), where both are known."""
    found = means(e)
    drops = e.ablation[(e.ablation.kind == kind) & (e.ablation.score == "val_micro_f1")].set_index("group")["mean"]
    if q not in found or drops.empty:
        return ""
    mine, truth = found[q].idxmax(), drops.idxmax()
    return f"; it puts {mine} first, " + ("as the ablation does" if mine == truth else f"the ablation {truth}")


def masked_sizes() -> str:
    """What the study measured of the masked drops' sizes against the retrained ones (empty without the study)."""
    m = (study() or {}).get("masked")
    if not m or not m.get("groups"):
        return ""
    lo, hi = m["ratio"]
    return (
        f" (on the graphs studied, results/weight_study/study.md, the masked drops of the groups that matter were "
        f"{lo:.1f} to {hi:.1f} times the retrained ones, though they ranked the groups alike: rho {m['mean_rho']:.2f} "
        "on average)"
    )


def means(e) -> pd.DataFrame:
    """Per group, every quantity's mean over the runs (columns: the quantities)."""
    signals = e.per_run.get("signals")
    if signals is None or signals.empty:
        return pd.DataFrame()
    return signals.pivot_table(index="group", columns="quantity", values="value", aggfunc="mean")
