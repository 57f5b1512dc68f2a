"""What the drivers that train an authors' own model on our data (scripts/reference/reference_*.py) share: the arguments
naming the checkout, the data, the seeds and the output, their checks, and the summary they print and write."""

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def parser(upstream: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("--repo", required=True, help=f"a checkout of {upstream}")
    p.add_argument("--dataset", default="imdb")
    p.add_argument("--data-dir", default="data/IMDB")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None, help="a JSON file for the runs and their mean ± std (never overwritten)")
    return p


def check(a: argparse.Namespace, upstream: str, marker: str) -> None:
    """Exit with the fix where --repo is not the checkout (it lacks `marker`) or --out exists already."""
    if not (Path(a.repo) / marker).is_file():
        sys.exit(f"{a.repo} is not a checkout of {upstream} (no {marker}); clone it, see --help")
    if a.out and Path(a.out).exists():
        sys.exit(f"{a.out} exists; choose another --out (results are never overwritten)")


def summarise(a: argparse.Namespace, rows: list[dict]) -> dict:
    """Mean and std of the runs' test Micro- and Macro-F1, printed, and written to --out with the runs."""
    mi = np.array([r["test_micro"] for r in rows])
    ma = np.array([r["test_macro"] for r in rows])
    summary = {"args": vars(a), "runs": rows, "test_micro": [mi.mean(), mi.std()], "test_macro": [ma.mean(), ma.std()]}
    print(f"test Micro-F1 {mi.mean():.2f} ± {mi.std():.2f}  Macro-F1 {ma.mean():.2f} ± {ma.std():.2f}", flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(summary, indent=1) + "\n")
    return summary
