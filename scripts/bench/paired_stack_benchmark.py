"""Mini-batch training speed of two checkouts of regnn on one graph, run in turn, with the ratio round by round.

The machine's speed drifts by tens of percent between hours, so two stacks timed an hour apart compare
the hours as much as the code. Here the two commands alternate (A B, then B A, ...), each the real
`train.py dataset=ogbn_mag trainer=minibatch model=<m>` of the scale benchmark cut at --batches training batches,
and each round gives the ratio of their training seconds per batch. The median ratio over the rounds is the figure
to quote; the first batches are part of every run alike.

    python scripts/bench/paired_stack_benchmark.py \
        --other-checkout /tmp/old --other-python /opt/dglenv/bin/python --other-data /tmp/oldfull \
        --data outputs/scale_benchmark/data_full --rounds 3 --batches 60

The other checkout is any earlier commit of this repository (e.g. `git worktree add /tmp/old <commit>`) with its
own Python environment; both read a generated graph written by scripts/bench/scale_benchmark.py (each may keep its own
copy, since an earlier commit may cache it in another layout). Writes <out>.json (every run) and <out>.md;
--collect summarises the run folders already under --work without training.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODELS = ("re_gcn", "re_gat")


def command(python: str, data: str, model: str, batches: int, threads: int, run_dir: Path) -> list[str]:
    return [
        python,
        "train.py",
        "dataset=ogbn_mag",
        "trainer=minibatch",
        f"model={model}",
        f"dataset.dir={data}",
        "runs=1",
        f"threads={threads}",
        "trainer.max_epochs=1",
        "trainer.patience=1",
        "trainer.batch_size=1024",
        "trainer.fanouts=[25,20]",
        "trainer.sampling=deterministic",
        "trainer.profile=true",
        f"trainer.max_batches={batches}",
        "trainer.log_every=20",
        f"hydra.run.dir={run_dir}",
    ]


def read_run(run_dir: Path) -> dict | None:
    """Training seconds per batch and seconds waiting for the sampler per batch of one finished run (history.csv)."""
    h = run_dir / "runs" / "run_00" / "history.csv"
    if not h.exists():
        return None
    r = next(csv.DictReader(h.open()))
    batches = float(r["batches"])
    return {
        "batches": int(batches),
        "train_s": float(r["train_time_s"]),
        "s_per_batch": float(r["train_time_s"]) / batches,
        "sample_s_per_batch": float(r["profile_sample_s"]) if r.get("profile_sample_s") else None,
    }


def summarise(runs: dict, rounds: int) -> list[dict]:
    rows = []
    for m in MODELS:
        pairs = [
            (runs[f"this_{m}_{i}"]["s_per_batch"], runs[f"other_{m}_{i}"]["s_per_batch"])
            for i in range(1, rounds + 1)
            if runs.get(f"this_{m}_{i}") and runs.get(f"other_{m}_{i}")
        ]
        if pairs:
            ratios = [t / o for t, o in pairs]
            rows.append(
                {
                    "model": m,
                    "rounds": len(pairs),
                    "ratios": ratios,
                    "median_ratio": statistics.median(ratios),
                    "this_s_per_batch": [t for t, _ in pairs],
                    "other_s_per_batch": [o for _, o in pairs],
                }
            )
    return rows


def markdown(report: dict) -> str:
    a = report["args"]
    lines = [
        "# Mini-batch training speed: this checkout against another, in turn",
        "",
        "`python scripts/bench/paired_stack_benchmark.py "
        f"--other-checkout <checkout of {report['other']['commit']}> "
        f"--other-python <its environment's python> --other-data <the graph> --rounds {a['rounds']} "
        f"--batches {a['batches']} --threads {a['threads']}` on {report['machine']}. "
        f"This checkout: {report['this']['commit']} "
        f"({report['this']['stack']}); the other: {report['other']['commit']} ({report['other']['stack']}). "
        "Same generated graph (OGBN-MAG's schema, full size), batch 1024, fanouts [25, 20], "
        "deterministic sampling; the two commands alternate (A B, B A, ...).",
        "",
        "| model | round | this s/batch | other s/batch | this / other |",
        "|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        for i, (t, o, q) in enumerate(zip(r["this_s_per_batch"], r["other_s_per_batch"], r["ratios"]), 1):
            lines.append(f"| {r['model']} | {i} | {t:.3f} | {o:.3f} | {q:.3f} |")
        lines.append(f"| **{r['model']}** | median | | | **{r['median_ratio']:.3f}** |")
    lines += [
        "",
        "Below 1: this checkout trains faster than the other. Seconds per batch include waiting for the "
        "sampler, the step and the progress lines, as the scale benchmark's seconds per epoch do.",
    ]
    return "\n".join(lines) + "\n"


def describe(checkout: Path, python: str) -> dict:
    """The checkout's commit and its environment's torch (and DGL, where it has one)."""
    git = subprocess.run(
        ["git", "-C", str(checkout), "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    probe = (
        "import importlib.util, torch; dgl = importlib.util.find_spec('dgl'); "
        "print('torch', torch.__version__ + (', dgl ' + __import__('dgl').__version__ if dgl else ''))"
    )
    try:
        out = subprocess.run([python, "-c", probe], capture_output=True, text=True, cwd=checkout).stdout.strip()
    except OSError as e:
        raise SystemExit(f"cannot run {python}: {e.strerror}; give the Python of that checkout's environment")
    return {"commit": git.stdout.strip() or "?", "stack": out.splitlines()[-1] if out else "?", "python": python}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--other-checkout", required=True, help="the other checkout's folder (it holds train.py)")
    ap.add_argument("--other-python", required=True, help="the Python of the other checkout's environment")
    ap.add_argument("--other-data", required=True, help="the generated graph as the other checkout reads it")
    ap.add_argument("--data", default=str(REPO / "outputs" / "scale_benchmark" / "data_full"))
    ap.add_argument("--python", default=sys.executable, help="this checkout's Python")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", type=int, default=60, help="training batches per run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=str(REPO / "outputs" / "paired_stack_benchmark"))
    ap.add_argument("--out", default=str(REPO / "results" / "scale_benchmark_paired"))
    ap.add_argument("--collect", action="store_true", help="train nothing: summarise the runs under --work")
    a = ap.parse_args(argv)
    out, work = Path(a.out), Path(a.work)
    for f in (out.with_suffix(".json"), out.with_suffix(".md")):
        if f.exists():
            raise SystemExit(f"{f} exists; move it away or pass another --out (results are never overwritten)")
    other = Path(a.other_checkout).resolve()
    if not (other / "train.py").exists():
        raise SystemExit(f"--other-checkout {other} holds no train.py; give a checkout of this repository")
    sides = {"this": (REPO, a.python, a.data), "other": (other, a.other_python, a.other_data)}
    runs: dict[str, dict] = {}
    for i in range(1, a.rounds + 1):
        for m in MODELS:
            order = ("other", "this") if i % 2 else ("this", "other")
            for side in order:
                key, (cwd, py, data) = f"{side}_{m}_{i}", sides[side]
                run_dir = work / key
                if not a.collect and read_run(run_dir) is None:
                    t0 = time.perf_counter()
                    work.mkdir(parents=True, exist_ok=True)
                    with open(work / f"{key}.log", "w") as log:
                        p = subprocess.run(
                            command(py, data, m, a.batches, a.threads, run_dir),
                            cwd=cwd,
                            stdout=log,
                            stderr=subprocess.STDOUT,
                        )
                    if p.returncode:
                        raise SystemExit(f"{key}: train.py exited {p.returncode}; see {work / (key + '.log')}")
                    print(f"{key}: {time.perf_counter() - t0:.0f} s", flush=True)
                run = read_run(run_dir)
                if run:
                    runs[key] = run
    report = {
        "args": vars(a),
        "machine": f"{platform.machine()}, {a.threads} torch threads",
        "this": describe(REPO, a.python),
        "other": describe(other, a.other_python),
        "runs": runs,
        "rows": summarise(runs, a.rounds),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
