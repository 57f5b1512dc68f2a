"""compare.until_separated=N: seeds added until the comparison separates its models, or N runs.

Once every cell of the comparison has trained, the models whose validation Micro-F1 minus the best model's, paired
by seed, has a 95% interval spanning 0 are not separated from it. They and the best model are trained on more
seeds (their cells extended, the finished runs kept: twice the runs, at most N), and the check is made again,
until every model is separated from the best or the unseparated ones have N runs. Models that predict the same on
every seed (a tie) are never extended: no seed separates them. The Table 2 cells of the shared pool (DBLP, ACM and
IMDB untuned) keep their 10 runs: their tables are the paper's protocol.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from regnn.reporting.compare_honest import paired_interval
from regnn.reporting.compare_notes import per_seed

log = logging.getLogger("regnn")


def unseparated(cells: dict[str, dict]) -> list[str]:
    """The best model (highest mean validation Micro-F1) first, then every model its runs do not separate from it
    (paired interval spanning 0, or fewer than 2 shared seeds); [] when every model is separated."""
    val = {m: v for m, v in ((m, per_seed(c)) for m, c in cells.items()) if v}
    if len(val) < 2:
        return []
    means = {m: float(np.mean(list(v.values()))) for m, v in val.items()}
    best = max(sorted(means), key=means.get)
    close = []
    for m in sorted(means, key=means.get, reverse=True):
        d, gap = paired_interval(val[m], val[best])
        if m == best or (d and not any(d)):  # the same score on every seed: a tie, reported as one
            continue
        if gap is None or not (np.isfinite(gap[1]) and (gap[2] < 0 or gap[1] > 0)):
            close.append(m)
    return [best, *close] if close else []


def trained_cells(sweep: Path, dataset: str, models: list[str]) -> dict[str, dict]:
    out = {}
    for m in models:
        f = Path(sweep) / f"{dataset}_{m}" / "results.json"
        if f.exists():
            out[m] = json.loads(f.read_text())
    return out


def extend(sweep: Path, dataset: str, models: list[str], limit: int, train_more) -> dict:
    """Extends the unseparated models' cells until separated or `limit` runs; train_more(model, runs) trains one
    cell to that many runs (its finished runs kept). Returns {"rounds", "runs", "unseparated"} for the table."""
    rounds = 0
    while True:
        cells = trained_cells(sweep, dataset, models)
        group = unseparated(cells)
        have = min((cells[m]["runs"] for m in group), default=0)
        if not group or have >= limit:
            break
        runs = min(limit, 2 * have)
        rounds += 1
        log.info(
            "compare: %s not separated from %s by %d runs: %d runs each (compare.until_separated=%d)",
            ", ".join(group[1:]),
            group[0],
            have,
            runs,
            limit,
        )
        for m in group:
            train_more(m, runs)
    if group:
        log.info("compare: %s still not separated from %s after %d runs", ", ".join(group[1:]), group[0], have)
    return {"rounds": rounds, "runs": {m: c["runs"] for m, c in cells.items()}, "unseparated": group[1:]}
