"""The committed Table 2 cells trained on another stack, re-measured on the installed one on the CPU: seeds 0-2.

    python scripts/checks/stack_check.py --dataset acm                  # every ACM cell not trained on this torch on the CPU
    python scripts/checks/stack_check.py --dataset dblp --models mlp,gcn_e trainer.max_epochs=3 --out /tmp/x

Each model trains through `train.py` (the cell's settings, seeds 0..runs-1, device=cpu, `threads` threads, under
`nice -n 10`) into the stable folder <work>/<dataset>/<model>/ (default outputs/stack_check/) with resume=true,
so a finished model is not retrained and a stopped one continues: the same command again picks up where it stopped. The
verdict follows the cell's own spread: the mean test Micro-F1 over the seeds here against the cell's mean over the
same seeds (its per_run), within when |difference| <= max(the cell's 10-run std, --floor).

The report, <out>.json and <out>.md (default results/stack_check_<dataset>_cpu), is rebuilt after every model
from the finished run folders, so rewriting it for the same dataset loses nothing. A model of an earlier report
at that path whose run folder is not here keeps its measured mean, re-judged against its cell under this rule.
"""  # noqa: E501  (usage lines kept whole, to be copied as they are)

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from regnn.paths import repo_relative

REPO = Path(__file__).resolve().parents[2]
CELLS = REPO / "results" / "cells"


def cell_of(dataset: str, model: str) -> dict | None:
    f = CELLS / f"{dataset}_{model}.json"
    return json.loads(f.read_text())["results"] if f.is_file() else None


def other_stack_models(dataset: str, torch_version: str) -> list[str]:
    """The dataset's cells whose environment is not this torch on the CPU, in file order."""
    out = []
    for f in sorted(CELLS.glob(f"{dataset}_*.json")):
        env = json.loads(f.read_text())["results"]["environment"]
        if env.get("torch") != torch_version or env.get("device") != "cpu":
            out.append(f.stem[len(dataset) + 1 :])
    return out


def judge(model: str, here: dict, cell: dict, floor: float) -> dict:
    """here: micro_f1_mean, micro_f1_std, seeds (and what else to keep); the cell's numbers and the verdict added."""
    same = [r["test_micro_f1"] for r in cell["per_run"] if r["seed"] in set(here["seeds"])]
    cm = cell["metrics"]["test_micro_f1"]
    row = {
        "model": model,
        **here,
        "cell_micro_f1_mean": cm["mean"],
        "cell_micro_f1_std": cm["std"],
        "cell_runs": cell["runs"],
        "cell_stack": {k: cell["environment"].get(k) for k in ("torch", "device", "dgl")},
    }
    if len(same) != len(here["seeds"]):
        return {**row, "error": "the cell lacks some of these seeds"}
    diff, tol = here["micro_f1_mean"] - statistics.fmean(same), max(cm["std"], floor)
    return {
        **row,
        "cell_same_seeds_mean": statistics.fmean(same),
        "diff_same_seeds": diff,
        "tolerance": tol,
        "within": abs(diff) <= tol,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="dblp")
    ap.add_argument(
        "--models",
        default=None,
        help="comma-separated model configs (default: the dataset's cells "
        "not trained on the installed torch on the CPU)",
    )
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--floor", type=float, default=0.5, help="least tolerance, for cells of small spread")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--out", default=None, help="report path without .json/.md (default results/stack_check_<dataset>_cpu)"
    )
    ap.add_argument(
        "--work", default=str(REPO / "outputs" / "stack_check"), help="run folders: <work>/<dataset>/<model>"
    )
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument(
        "--report-only", action="store_true", help="rebuild the report from the run folders there are, training nothing"
    )
    ap.add_argument("overrides", nargs="*", help="more train.py overrides (e.g. trainer.max_epochs=3 to try it)")
    a = ap.parse_args(argv)
    out = Path(a.out or REPO / "results" / f"stack_check_{a.dataset}_cpu")
    work = Path(a.work) / a.dataset
    torch_version = subprocess.run(
        [a.python, "-c", "import torch; print(torch.__version__)"], check=True, capture_output=True, text=True
    ).stdout.strip()
    models = a.models.split(",") if a.models else other_stack_models(a.dataset, torch_version)
    for m in [m for m in models if cell_of(a.dataset, m) is None]:
        print(f"stack_check: no committed cell {a.dataset}_{m}; skipping {m}", file=sys.stderr)
    models = [m for m in models if m and cell_of(a.dataset, m) is not None]
    previous = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").is_file() else {}
    earlier = {r["model"]: r for r in previous.get("models", []) if "micro_f1_mean" in r}
    env: dict = dict(previous.get("environment", {}))

    def row(model: str) -> dict | None:
        cell = cell_of(a.dataset, model)
        res = work / model / "results.json"
        if cell is None:
            return None
        if res.is_file():
            s = json.loads(res.read_text())
            env.update({k: s["environment"].get(k) for k in ("torch", "python", "dgl", "threads", "device_note")})
            got = [r["test_micro_f1"] for r in s["per_run"] if "test_micro_f1" in r]
            if not got:
                return {"model": model, "error": f"no run finished; see {repo_relative(res.parent)}"}
            here = {
                "seeds": [r["seed"] for r in s["per_run"] if "test_micro_f1" in r],
                "micro_f1_mean": statistics.fmean(got),
                "micro_f1_std": statistics.pstdev(got),
                "wall_time_s": s.get("wall_time_s"),
                "run_dir": repo_relative(res.parent),
            }
            return judge(model, here, cell, a.floor)
        if model in earlier:
            keep = ("seeds", "micro_f1_mean", "micro_f1_std", "wall_time_s", "run_dir")
            return judge(model, {**{k: earlier[model].get(k) for k in keep}, "earlier_report": True}, cell, a.floor)
        return None

    def write_report() -> None:
        names = models + [m for m in earlier if m not in models]
        rows = [r for r in map(row, names) if r is not None]
        pending = [m for m in models if not any(r["model"] == m for r in rows)]
        report = {
            "dataset": a.dataset,
            "runs": a.runs,
            "floor": a.floor,
            "overrides": a.overrides,
            "environment": env,
            "models": rows,
            "not_finished": pending,
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
        lines = [
            f"# Table 2 cells re-measured on the installed stack ({a.dataset.upper()}, CPU)",
            "",
            f"`scripts/checks/stack_check.py` on {env.get('device_note')}: torch {env.get('torch')}, Python "
            f"{env.get('python')}, DGL {env.get('dgl') or 'not installed'}, {env.get('threads')} thread(s); "
            f"seeds 0-{a.runs - 1} through `train.py` with each cell's settings"
            f"{' and ' + ' '.join(a.overrides) if a.overrides else ''}; mean ± population std (ddof=0, as the "
            f"cells). Within: |mean here - the cell's mean "
            f"over the same seeds| <= max(the cell's 10-run std, {a.floor:g}).",
            "",
            "| model | cell's stack | test Micro-F1 here | cell, same seeds | cell (10 runs) | difference, same "
            "seeds | tolerance | within |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            st = r.get("cell_stack", {})
            stack = f"torch {st.get('torch')} {st.get('device')}" if st else ""
            if "error" in r:
                lines.append(f"| {r['model']} | {stack} | failed: {r['error']} | | | | | no |")
                continue
            name = r["model"] + (" *" if r.get("earlier_report") else "")
            lines.append(
                f"| {name} | {stack} | {r['micro_f1_mean']:.2f} ± {r['micro_f1_std']:.2f} | "
                f"{r['cell_same_seeds_mean']:.2f} | {r['cell_micro_f1_mean']:.2f} ± "
                f"{r['cell_micro_f1_std']:.2f} | {r['diff_same_seeds']:+.2f} | {r['tolerance']:.2f} | "
                f"{'yes' if r['within'] else 'no'} |"
            )
        if any(r.get("earlier_report") for r in rows):
            lines += [
                "",
                "\\* measured in an earlier sitting whose run folder is not here: its mean and std as that "
                "report gave them, judged against the cell now.",
            ]
        if pending:
            lines += ["", f"Not finished yet (the same command continues them): {', '.join(pending)}."]
        out.with_suffix(".md").write_text("\n".join(lines) + "\n")

    for i, model in enumerate([] if a.report_only else models, 1):
        run_dir = work / model
        print(f"stack_check: [{i}/{len(models)}] {model} on {a.dataset}, {a.runs} runs -> {run_dir}", flush=True)
        cmd = [
            "nice",
            "-n",
            "10",
            a.python,
            "train.py",
            f"dataset={a.dataset}",
            f"model={model}",
            f"runs={a.runs}",
            "device=cpu",
            f"threads={a.threads}",
            "logger=none",
            "resume=true",
            f"hydra.run.dir={run_dir}",
            *a.overrides,
        ]
        rc = subprocess.run(cmd, cwd=REPO).returncode
        if rc != 0:
            print(f"stack_check: train.py exited {rc} for {model}; its log is in {run_dir}", file=sys.stderr)
        write_report()
    write_report()
    print(f"stack_check: {out}.json, {out}.md")
    rows = json.loads(out.with_suffix(".json").read_text())["models"]
    return 0 if all(r.get("within") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
