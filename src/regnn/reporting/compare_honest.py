"""What experiment=compare's table says so that it is not read for more than it is: the chance level (always the
largest class) and the models and runs below it, a tie on validation named as a tie (test shown beside it, never
used to break it), and each model's estimated time beside the time its cell took."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from regnn.evaluation.metrics import AT_CHANCE, runs_at_chance

LEARNT = 4 * AT_CHANCE  # a run this far above the chance level learned: beside a run at chance, a collapse
TIE = 1e-9  # validation means this close are equal: the same predictions on the same nodes


def tied_best(scored: pd.DataFrame) -> list[str]:
    """The models whose mean validation Micro-F1 is the best (one model, or several tied), in the table's order."""
    if scored.empty:
        return []
    best = scored.val_micro_f1_mean.max()
    return list(scored.model[(best - scored.val_micro_f1_mean).abs() <= TIE])


def tie_note(df: pd.DataFrame) -> str:
    t = df[df.tied]
    tests = ", ".join(f"{r.label} {r.test_micro_f1_mean:.2f}" for _, r in t.iterrows())
    return (
        f"Tie on validation: {', '.join(t.label)} share the best mean validation Micro-F1 "
        f"({t.val_micro_f1_mean.iloc[0]:.2f}), so validation picks no winner; their test Micro-F1 (shown, not "
        f"used to pick): {tests}. More runs, or a larger validation set, would separate them."
    )


def chance_level(df: pd.DataFrame) -> float | None:
    """The graph's chance level, which every cell that records one must agree on (None where none does, or where
    cells disagree: then they did not score the same test nodes, and chance_notes says so)."""
    known = {round(float(c), 9) for c in df.chance.dropna()}
    return known.pop() if len(known) == 1 else None


def chance_notes(df: pd.DataFrame) -> list[str]:
    """The chance line, and the models whose mean is below it or some of whose runs are."""
    chance = chance_level(df)
    if chance is None:
        differ = df[df.chance.notna()]
        if differ.chance.nunique() > 1:
            levels = ", ".join(f"{r.label} {r.chance:.2f}" for _, r in differ.iterrows())
            return [f"Chance differs between the cells ({levels}): they did not score the same test nodes."]
        return []
    out = [
        f"Chance: always predicting the largest class scores {chance:.2f} test Micro-F1 on this graph (the dashed "
        "line in the figure); a model must beat it to have learned anything."
    ]
    below = df[df.test_micro_f1_mean < chance]
    if len(below):
        out.append(f"Below chance on average: {', '.join(below.label)}: on this graph they learned nothing usable.")
    some = df[(df.runs_below_chance.fillna(0) > 0) & ~(df.test_micro_f1_mean < chance)]
    for _, r in some.iterrows():
        out.append(
            f"Runs below chance: {r.label}: {int(r.runs_below_chance)} of {int(r.runs)} (marked in the runs column)."
        )
    return out


def _clock(seconds) -> str:
    from regnn.training.progress import clock

    return "?" if seconds is None or not math.isfinite(seconds) else clock(seconds)


def cost_notes(df: pd.DataFrame) -> list[str]:
    """Each trained model's estimate (expected, at most) beside what its cell took, where both are known."""
    rows = df[df.wall_time_s.notna() & (df.expected_s.notna() | df.estimate_s.notna())]
    if rows.empty:
        return []
    parts = [
        f"{r.label} expected ~{_clock(r.expected_s)} (at most {_clock(r.estimate_s)}), took {_clock(r.wall_time_s)}"
        for _, r in rows.iterrows()
    ]
    return ["Time, estimated before training beside measured: " + "; ".join(parts) + "."]


def collapse(cell: dict) -> dict:
    """The runs of a cell that scored at chance, where its summary records the chance level."""
    chance = cell.get("chance_test_micro_f1")
    k = runs_at_chance(cell.get("per_run", []), chance)
    learnt = [
        r["test_micro_f1"]
        for r in cell.get("per_run", [])
        if "failed" not in r and k and r["test_micro_f1"] > chance + LEARNT
    ]
    # collapsed: some runs at chance while others clearly learned; a model whose runs all sit near chance (some a
    # few points above it by the luck of a small test set) learns nothing here, which its mean already says
    below = (
        None
        if chance is None
        else sum(  # below chance, not within AT_CHANCE of it (those are "at chance")
            1
            for r in cell.get("per_run", [])
            if "failed" not in r and r.get("test_micro_f1") is not None and r["test_micro_f1"] < chance - AT_CHANCE
        )
    )
    return {
        "runs_at_chance": k,
        "runs_below_chance": below,
        "chance": chance,
        "collapsed": bool(k and learnt),
        "learnt_test_micro_f1": float(np.mean(learnt)) if learnt else None,
    }


def paired_interval(mine: dict, best: dict) -> tuple[list[float], tuple[float, float, float] | None]:
    """mine minus best over the seeds both trained ({seed: score} each), and its (mean, low, high) 95% t-interval
    (None where no seed is shared): whether the runs separate the two."""
    from regnn.evaluation.importance import interval

    d = [mine[s] - best[s] for s in mine if s in best]
    return d, (interval(d) if d else None)


def paired_to_best(df: pd.DataFrame, cells: dict[str, dict]) -> list[str]:
    """Per model: its validation Micro-F1 minus the best model's, paired by seed, mean and 95% t-interval over the
    seeds both trained ("" for the best itself, or where no seed is shared): whether the runs separate the two."""
    from regnn.reporting.compare_notes import per_seed

    scored = df[df.val_micro_f1_mean.notna()]
    if scored.empty:
        return [""] * len(df)
    top = scored.model.loc[scored.val_micro_f1_mean.idxmax()]
    best = per_seed(cells.get(top, {}))
    out = []
    for m, mean in zip(df.model, df.val_micro_f1_mean):
        _, gap = paired_interval(per_seed(cells.get(m, {})), best)
        if m == top or pd.isna(mean) or gap is None:
            out.append("")
            continue
        mid, lo, hi = gap
        out.append(f"{mid:+.2f}" + ("" if np.isnan(lo) else f" [{lo:+.2f}, {hi:+.2f}]"))
    return out


PAIRED_NOTE = (
    "val vs best, paired: each model's validation Micro-F1 minus the best model's, seed by seed, mean [95% "
    "t-interval over the seeds both trained]; an interval that spans 0 means these runs do not separate the two "
    "(compare.until_separated=30 adds seeds to such models until they are, or 30 runs)."
)
