"""What predict.py's ensemble scores on the built-in datasets: the mean probabilities of a cell's 10 runs against
the runs one by one and the run predict.py picks by validation.

    .venv/bin/python scripts/checks/ensemble_check.py                 # RE-GCN on DBLP, ACM, IMDB -> results/ensemble.{csv,md}
    .venv/bin/python scripts/checks/ensemble_check.py --models re_gcn re_gat --datasets acm

Each cell is trained through train.py into outputs/ensemble_check/<dataset>_<model>/ (resume=true: a finished
cell is reused; a cell already there is continued, never overwritten), then predict.py scores it twice, as a
user would: the chosen run and ensemble=true. The scores come from predict.py's scores.json. The report is
rewritten from the cells each time.
"""  # noqa: E501  (usage lines kept whole, to be copied as they are)

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[2]


def run(cmd: list[str]) -> None:
    print("ensemble_check:", " ".join(cmd[1:]), flush=True)
    p = subprocess.run(cmd, cwd=REPO)
    if p.returncode != 0:
        raise SystemExit(f"ensemble_check: {' '.join(cmd[1:3])} exited {p.returncode}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["dblp", "acm", "imdb"])
    ap.add_argument("--models", nargs="+", default=["re_gcn"])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--work", default=str(REPO / "outputs" / "ensemble_check"))
    ap.add_argument("--out", default=str(REPO / "results" / "ensemble"))
    ap.add_argument("overrides", nargs="*", help="more train.py overrides (e.g. trainer.max_epochs=3 to try it)")
    a = ap.parse_args(argv)
    work, rows = Path(a.work), []
    for d in a.datasets:
        for m in a.models:
            cell = work / f"{d}_{m}"
            run(
                [
                    sys.executable,
                    "train.py",
                    f"dataset={d}",
                    f"model={m}",
                    f"runs={a.runs}",
                    "resume=true",
                    "logger=none",
                    f"hydra.run.dir={cell}",
                    *a.overrides,
                ]
            )
            scores = {}
            for how in ("chosen", "ensemble"):
                out = cell / "predict" / how
                run(
                    [
                        sys.executable,
                        "predict.py",
                        f"run={cell}",
                        f"ensemble={how == 'ensemble'}",
                        f"hydra.run.dir={out}",
                    ]
                )
                scores[how] = json.loads((out / "scores.json").read_text())
            per_run = [r["test_micro_f1"] for r in json.loads((cell / "results.json").read_text())["per_run"]]
            chosen = next(iter(scores["chosen"]["runs"].values()))
            ens = scores["ensemble"]["ensemble"]
            rows.append(
                {
                    "dataset": d,
                    "model": m,
                    "runs": len(per_run),
                    "runs_test_micro_f1_mean": statistics.fmean(per_run),
                    "runs_test_micro_f1_std": statistics.pstdev(per_run),  # ddof=0, as every table here
                    "chosen_run": next(iter(scores["chosen"]["runs"])),
                    "chosen_test_micro_f1": chosen["test_micro_f1"],
                    "ensemble_test_micro_f1": ens["test_micro_f1"],
                    "ensemble_test_macro_f1": ens["test_macro_f1"],
                    "ensemble_val_micro_f1": ens["val_micro_f1"],
                }
            )
    df = pd.DataFrame(rows)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out.with_suffix(".csv"), index=False, float_format="%.4f")
    lines = [
        "# predict.py's ensemble against single runs (test Micro-F1)",
        "",
        f"`scripts/checks/ensemble_check.py`: each cell's {a.runs} runs (seeds 0-{a.runs - 1}) through train.py, "
        "then predict.py with the run it picks by validation and with ensemble=true (the mean of the runs' "
        "class probabilities).",
        "",
        "| dataset | model | runs: mean ± std | run picked by validation | ensemble | ensemble - runs' mean |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset'].upper()} | {r['model']} | {r['runs_test_micro_f1_mean']:.2f} ± "
            f"{r['runs_test_micro_f1_std']:.2f} | {r['chosen_test_micro_f1']:.2f} ({r['chosen_run']}) | "
            f"{r['ensemble_test_micro_f1']:.2f} | "
            f"{r['ensemble_test_micro_f1'] - r['runs_test_micro_f1_mean']:+.2f} |"
        )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"ensemble_check: wrote {out}.csv, {out}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
