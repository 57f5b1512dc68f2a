"""Relation importance as numbers with their spread: a mean over a cell's runs (the runs are seeds) with its 95%
t-interval, and how well two rankings of the relations agree (Spearman's rho, with a bootstrap interval over the
runs). Arrays in, tables out; no model, no graph."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

LEVEL = 0.95


def interval(values) -> tuple[float, float, float]:
    """(mean, low, high): the 95% t-interval of the mean over the runs (NaN bounds for a single run)."""
    a = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if a.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(a.mean())
    if a.size < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + LEVEL / 2, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))
    return mean, mean - half, mean + half


def summarise(per_run: pd.DataFrame, by: list[str], value: str) -> pd.DataFrame:
    """One row per `by` group: mean, low, high of `value` over the runs, and how many runs."""
    rows = []
    for key, g in per_run.groupby(by, sort=False):
        mean, low, high = interval(g[value].to_numpy())
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key)), "mean": mean, "low": low, "high": high, "runs": int(g[value].notna().sum())})
    return pd.DataFrame(rows, columns=[*by, "mean", "low", "high", "runs"])


def verdict(low: float, high: float, threshold: float) -> str:
    """Three-way, by the 95% interval of a drop: "matters" (its low end above the threshold), "free" (its high end
    at most the threshold) or "cannot tell" (it spans the threshold, or there is no interval: one run)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "cannot tell"
    if low > threshold:
        return "matters"
    return "free" if high <= threshold else "cannot tell"


def runs_to_tell(values, threshold: float) -> int | None:
    """About how many runs would put the 95% interval of the mean of `values` on one side of the threshold (the
    runs' spread as measured, the mean as measured); None where the mean sits on the threshold or there is no
    spread to scale."""
    a = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if a.size < 2 or a.std(ddof=1) == 0 or a.mean() == threshold:
        return None
    n = int(np.ceil((1.96 * a.std(ddof=1) / abs(a.mean() - threshold)) ** 2)) + 1
    return max(n, a.size + 1)


def agreement_verdict(low: float, high: float) -> str:
    """Whether two rankings agree, by the interval of Spearman's rho: "agree" (above 0), "disagree" (below 0) or
    "cannot tell" (it spans 0, or there is none)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "cannot tell"
    return "agree" if low > 0 else "disagree" if high < 0 else "cannot tell"


def rank_agreement(a: pd.DataFrame, b: pd.DataFrame, n_boot: int = 2000, seed: int = 0, min_items: int = 3) -> dict:
    """Spearman's rho between two per-run scores of the same items (columns: the items, rows: the runs, each
    frame indexed by run), on their means over the runs, with a percentile bootstrap interval that resamples the
    runs both share. Fewer than min_items items: no rho (NaN); with 2, rho is +1 or -1 (the two in the same order
    or not) and its interval says how often a resample keeps that order."""
    runs = a.index.intersection(b.index)
    items = [c for c in a.columns if c in b.columns]
    out = {"items": len(items), "runs": len(runs), "rho": float("nan"), "low": float("nan"), "high": float("nan")}
    if len(items) < max(min_items, 2) or len(runs) == 0:
        return out
    x, y = a.loc[runs, items].to_numpy(float), b.loc[runs, items].to_numpy(float)
    out["rho"] = _rho(x.mean(0), y.mean(0))
    if len(runs) < 2:
        return out
    rng = np.random.default_rng(seed)
    draws = [_rho(x[i].mean(0), y[i].mean(0)) for i in rng.integers(0, len(runs), size=(n_boot, len(runs)))]
    draws = np.asarray([d for d in draws if np.isfinite(d)])
    if draws.size:
        out["low"], out["high"] = (float(q) for q in np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2]))
    return out


def _rho(u: np.ndarray, v: np.ndarray) -> float:
    if np.ptp(u) == 0 or np.ptp(v) == 0:  # a constant ranking has no order to agree with
        return float("nan")
    return float(stats.spearmanr(u, v).statistic)


def top_k_hit(scores: pd.Series, planted: set[str]) -> bool:
    """Whether the len(planted) highest-scoring items are exactly the planted ones."""
    top = scores.sort_values(ascending=False, kind="stable").index[: len(planted)]
    return set(top) == set(planted)


def auroc(scores: pd.Series, planted: set[str]) -> float:
    """How well the scores separate the planted items from the others (1: every planted item above every other)."""
    pos = [s for k, s in scores.items() if k in planted]
    neg = [s for k, s in scores.items() if k not in planted]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return float(wins / (len(pos) * len(neg)))
