"""Read the log of the RE-GNN authors' run_regnn.py run through results/reference_logs/authors_trace_run.py.txt (one
TRACE line per epoch, their own "Run: k" block with the test scores per run) and set it beside one of regnn's cells
on the same dataset, run by run:

    python scripts/reference/authors_trace.py results/reference_logs/authors_regatv2_dblp.log \\
        --ours results/cells/dblp_re_gatv2.json --out results/reference_authors_regatv2_dblp_runs

Writes <out>.json (every run's epochs and scores, and the mean ± std of the finished runs) and <out>.md (the runs of
both side by side: test Micro-F1, the epoch of the best validation loss, the epochs trained, the best (lowest)
validation loss); refuses to overwrite them. A run the log does not finish (no test line) is listed as unfinished
and left out of the mean.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

TRACE = re.compile(
    r"TRACE run=(\d+) epoch=(\d+) train_loss=(\S+) val_loss=(\S+) val_micro=(\S+) val_macro=(\S+) best=(\*?) t=(\S+)"
)
SCORES = re.compile(r"^(\d\.\d+) (\d\.\d+) (\d\.\d+)$")  # test accuracy, Micro-F1, Macro-F1 (fractions)


def parse(text: str) -> list[dict]:
    """The runs of one log, in order: per-epoch rows, and where the run finished its test scores."""
    runs: dict[int, dict] = {}
    current = None
    for line in text.splitlines():
        if m := TRACE.match(line):
            run, epoch = int(m[1]), int(m[2])
            r = runs.setdefault(run, {"run": run, "per_epoch": []})
            r["per_epoch"].append(
                {
                    "epoch": epoch,
                    "train_loss": float(m[3]),
                    "val_loss": float(m[4]),
                    "val_micro_f1": round(100 * float(m[5]), 2),
                    "val_macro_f1": round(100 * float(m[6]), 2),
                    "new_best": m[7] == "*",
                    "seconds": float(m[8]),
                }
            )
        elif line.startswith("Run: "):
            current = int(line.split()[1])
        elif current is not None and (m := SCORES.match(line.strip())):
            runs[current]["test_micro_f1"] = round(100 * float(m[2]), 2)
            runs[current]["test_macro_f1"] = round(100 * float(m[3]), 2)
            current = None
    for r in runs.values():
        epochs = r["per_epoch"]
        best = [e["epoch"] for e in epochs if e["new_best"]]
        r["epochs"] = len(epochs)
        r["best_epoch"] = best[-1] if best else None
        r["best_val_loss"] = min(e["val_loss"] for e in epochs)
        r["max_val_micro_f1"] = max(e["val_micro_f1"] for e in epochs)
        r["finished"] = "test_micro_f1" in r
        r["seconds_per_epoch"] = round(epochs[-1]["seconds"] / len(epochs), 2)
    return [runs[k] for k in sorted(runs)]


def mean_std(values: list[float]) -> list[float] | None:
    return [float(np.mean(values)), float(np.std(values))] if values else None


def table(theirs: list[dict], ours: list[dict]) -> list[str]:
    rows = [
        "| run | theirs: test Micro-F1 | best epoch | epochs | best val loss "
        "| ours: test Micro-F1 | best epoch | epochs | best val loss |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i in range(max(len(theirs), len(ours))):
        t = theirs[i] if i < len(theirs) else None
        o = ours[i] if i < len(ours) else None
        left = (
            [f"{t['test_micro_f1']:.2f}" if t["finished"] else "unfinished", t["best_epoch"], t["epochs"],
             f"{t['best_val_loss']:.4f}"]
            if t else ["", "", "", ""]
        )  # fmt: skip
        right = [f"{o['test_micro_f1']:.2f}", o["best_epoch"], o["epochs"], f"{o['val_loss']:.4f}"] if o else [""] * 4
        rows.append("| " + " | ".join(str(v) for v in [i, *left, *right]) + " |")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("--ours", help="a cell summary of regnn's (results/cells/<cell>.json) to set beside")
    ap.add_argument("--out", required=True, help="writes OUT.json and OUT.md (never over an existing file)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if out.with_suffix(".json").exists() or out.with_suffix(".md").exists():
        sys.exit(f"{out}.json or .md exists; choose another --out (results are never overwritten)")
    theirs = parse(Path(a.log).read_text())
    if not theirs:
        sys.exit(f"{a.log} holds no TRACE line: is it a log of authors_trace_run.py?")
    done = [r for r in theirs if r["finished"]]
    ours = json.loads(Path(a.ours).read_text())["results"]["per_run"] if a.ours else []
    summary = {
        "log": a.log,
        "finished_runs": len(done),
        "test_micro_f1": mean_std([r["test_micro_f1"] for r in done]),
        "test_macro_f1": mean_std([r["test_macro_f1"] for r in done]),
        "ours": a.ours,
        "ours_test_micro_f1": mean_std([r["test_micro_f1"] for r in ours]),
        "runs": theirs,
    }
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    mi = summary["test_micro_f1"]
    lines = [
        f"# The authors' code beside regnn's: {Path(a.log).name}",
        "",
        f"`python scripts/reference/authors_trace.py {a.log}" + (f" --ours {a.ours}" if a.ours else "") + "`. "
        "Theirs: run_regnn.py unchanged (their seed 123, one RNG stream over the repeats); best epoch: the last "
        "epoch whose eval-mode validation loss improved (their checkpoint). Ours: the cell's runs (seeds 0-9).",
        "",
        f"Theirs: {len(done)} finished runs" + (f", test Micro-F1 {mi[0]:.2f} ± {mi[1]:.2f}." if mi else "."),
    ]
    if ours:
        o = summary["ours_test_micro_f1"]
        lines[-1] += f" Ours: {len(ours)} runs, {o[0]:.2f} ± {o[1]:.2f}."
    out.with_suffix(".md").write_text("\n".join([*lines, "", *table(theirs, ours)]) + "\n")
    print("\n".join(lines[-1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
