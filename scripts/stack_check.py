"""The committed Table 2 cells, re-measured on the installed stack: a few seeds of each model on one dataset.

    python scripts/stack_check.py                        # DBLP, 3 seeds: RE-GAT and every baseline ported off DGL
    python scripts/stack_check.py --models re_gcn,rgcn --runs 2 --out results/stack_check_small

The cells of results/cells/ were trained on an earlier stack. This trains each model through `train.py` (seeds
0..runs-1, the cell's settings) on the installed one, and writes beside each cell's numbers (its 10-run mean and its
mean over the same seeds) the difference, to <out>.json and <out>.md. The runs stay under
outputs/stack_check/<time>/<model>/. It refuses to overwrite an earlier report.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# RE-GAT, and the baselines whose DGL modules regnn now implements on arrays (their Table 2 cells on DBLP)
MODELS = "re_gat,rgcn,hgt,rhgnn,han,magnn,magnn_ac,gcn_m,metapath2vec"


def mean_std(xs: list[float]) -> tuple[float, float]:
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="dblp")
    ap.add_argument("--models", default=MODELS, help="comma-separated model configs (default: %(default)s)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tolerance", type=float, default=1.0, help="allowed |difference| of Micro-F1 to the cell")
    ap.add_argument("--out", default=None, help="report path without .json/.md (default results/stack_check_<dataset>)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("overrides", nargs="*", help="more train.py overrides (e.g. trainer.max_epochs=3 to try it)")
    a = ap.parse_args(argv)
    out = Path(a.out or REPO / "results" / f"stack_check_{a.dataset}")
    if out.with_suffix(".json").exists() or out.with_suffix(".md").exists():
        print(f"stack_check: {out}.json or {out}.md exists; move it away first (nothing is overwritten)", file=sys.stderr)
        return 2
    work = REPO / "outputs" / "stack_check" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    models = [m for m in a.models.split(",") if m]
    rows: list[dict] = []
    env: dict = {}

    def write_report() -> None:  # after every model, so a run stopped midway keeps what it measured
        report = {"dataset": a.dataset, "runs": a.runs, "tolerance": a.tolerance, "overrides": a.overrides,
                  "environment": env, "models": rows}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
        lines = [f"# Table 2 cells re-measured on the installed stack ({a.dataset.upper()})", "",
                 f"`scripts/stack_check.py` on {env.get('device_note')}: torch {env.get('torch')}, Python {env.get('python')}, DGL "
                 f"{env.get('dgl') or 'not installed'}; seeds 0-{a.runs - 1} through `train.py` with each cell's settings"
                 f"{' and ' + ' '.join(a.overrides) if a.overrides else ''}. The cells were trained on torch "
                 f"{rows[0].get('cell_stack', {}).get('torch') if rows else '?'} with DGL.", "",
                 "| model | test Micro-F1 here | cell, same seeds | cell (10 runs) | difference to the cell | "
                 f"within {a.tolerance:g} |", "|---|---|---|---|---|---|"]
        for r in rows:
            if "error" in r:
                lines.append(f"| {r['model']} | failed: {r['error']} | | | | no |")
                continue
            same = f"{r['cell_same_seeds_mean']:.2f}" if r["cell_same_seeds_mean"] is not None else "n/a"
            lines.append(f"| {r['model']} | {r['micro_f1_mean']:.2f} ± {r['micro_f1_std']:.2f} | {same} | "
                         f"{r['cell_micro_f1_mean']:.2f} ± {r['cell_micro_f1_std']:.2f} | {r['diff_to_cell']:+.2f} | "
                         f"{'yes' if r['within_tolerance'] else 'no'} |")
        out.with_suffix(".md").write_text("\n".join(lines) + "\n")

    for i, model in enumerate(models, 1):
        cell_file = REPO / "results" / "cells" / f"{a.dataset}_{model}.json"
        if not cell_file.is_file():
            print(f"stack_check: no committed cell {cell_file.relative_to(REPO)}; skipping {model}", file=sys.stderr)
            continue
        cell = json.loads(cell_file.read_text())["results"]
        run_dir = work / model
        print(f"stack_check: [{i}/{len(models)}] {model} on {a.dataset}, {a.runs} runs -> {run_dir}", flush=True)
        cmd = [a.python, "train.py", f"dataset={a.dataset}", f"model={model}", f"runs={a.runs}", "logger=none",
               f"hydra.run.dir={run_dir}", *a.overrides]
        t0 = time.monotonic()
        rc = subprocess.run(cmd, cwd=REPO).returncode
        res = run_dir / "results.json"
        if rc != 0 or not res.is_file():
            rows.append({"model": model, "error": f"train.py exited {rc}; its log is in {run_dir}"})
            write_report()
            continue
        s = json.loads(res.read_text())
        env.update({k: s["environment"].get(k) for k in ("torch", "python", "dgl", "threads", "device_note")})
        got = [r["test_micro_f1"] for r in s["per_run"]]
        same = [r["test_micro_f1"] for r in cell["per_run"] if r["seed"] in {x["seed"] for x in s["per_run"]}]
        m, sd = mean_std(got)
        cm = cell["metrics"]["test_micro_f1"]
        rows.append({"model": model, "runs": len(got), "seeds": [r["seed"] for r in s["per_run"]],
                     "micro_f1_mean": m, "micro_f1_std": sd,
                     "cell_micro_f1_mean": cm["mean"], "cell_micro_f1_std": cm["std"], "cell_runs": cell["runs"],
                     "cell_same_seeds_mean": statistics.fmean(same) if same else None,
                     "diff_to_cell": m - cm["mean"], "within_tolerance": abs(m - cm["mean"]) <= a.tolerance,
                     "cell_stack": {k: cell["environment"].get(k) for k in ("torch", "python", "dgl")},
                     "wall_time_s": time.monotonic() - t0, "run_dir": str(run_dir.relative_to(REPO))})
        write_report()
    print(f"stack_check: {out}.json, {out}.md")
    return 0 if all(r.get("within_tolerance") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
