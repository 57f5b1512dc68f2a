"""The hardware-floor measurements on one GPU, in one call of a few minutes (docs/performance.md).

    python scripts/bench/gpu_floor.py --out $OUT                      # on a machine with a GPU
    python scripts/bench/gpu_floor.py --device cpu --scale 0.01 --runs 2 --out /tmp/floor   # the script itself, tried

Steps, most important first; each runs the real commands (train.py, scripts/bench/scale_benchmark.py) in its own
process with a timeout, and the report is rewritten after every step, so a call cut short keeps what finished:
  1. full size: one mini-batch epoch of RE-GCN on a generated graph of OGBN-MAG's size (fanouts [25, 20], batch
     1024), the sampler on the CPU in parallel threads (trainer.sampling=parallel, --sampler-threads);
  2. Table 2 cells on DBLP: RE-GCN and GCN, `--runs` seeds each, their seconds per cell and per epoch (the ratio
     RE-GCN / GCN), and RE-GAT;
  3. every other model of Table 2 on DBLP trains there: one run each, at most `--check-epochs` epochs, in
     parallel (pass or the error's last line);
  4. full size: one epoch of RE-GAT, as step 1;
  5. the RE-GCN and RE-GAT cells of ACM and IMDB;
  6. DBLP GAT-M (its dense meta-path graphs make it hours on 2 CPU cores), its summary kept beside the report.
A step that would start after --budget-s seconds is skipped and marked so. Writes <out>/gpu_floor.json and .md
with the device's name; run folders and logs under --work (<out>/work).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from regnn.catalog import TABLE2_MODELS

REPO = Path(__file__).resolve().parents[2]
TABLE2 = list(TABLE2_MODELS)


def device_name(device: str) -> str:
    import torch

    if device == "cuda" and torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return f"{device} ({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs)"


def run(cmd: list[str], log: Path, timeout: float) -> dict:
    """Runs cmd from the repository root, its output in log: {"ok", "seconds", "error"}."""
    log.parent.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    with open(log, "w") as f:
        try:
            p = subprocess.run(
                cmd,
                cwd=REPO,
                stdout=f,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                env={**os.environ, "HYDRA_FULL_ERROR": "1"},
            )
            code = p.returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    out = {"ok": code == 0, "seconds": round(time.perf_counter() - t, 1)}
    if code != 0:
        lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
        out["error"] = (
            f"timed out after {timeout:.0f} s"
            if code == "timeout"
            else (lines[-1][-300:] if lines else f"exit code {code}")
        )
    return out


def cell(a, work: Path, dataset: str, model: str, runs: int, extra=(), timeout: float = 300) -> dict:
    """A cell through train.py on the device: seconds, test Micro-F1, median seconds per epoch."""
    d = work / "cells" / f"{dataset}_{model}"
    r = run(
        [
            sys.executable,
            "train.py",
            f"dataset={dataset}",
            f"model={model}",
            f"runs={runs}",
            f"device={a.device}",
            "workers=1",
            f"hydra.run.dir={d}",
            *extra,
        ],
        work / "logs" / f"{dataset}_{model}.log",
        timeout,
    )
    if r["ok"]:
        res = json.loads((d / "results.json").read_text())
        m = res["metrics"]
        r |= {
            "test_micro_f1": m["test_micro_f1"]["mean"],
            "test_micro_f1_std": m["test_micro_f1"]["std"],
            "epoch_time_s": m.get("epoch_time_s", {}).get("mean"),
            "runs": res["finished_runs"],
            "device": res["environment"].get("device"),
            "wall_time_s": res.get("wall_time_s"),
        }
    return {"dataset": dataset, "model": model, **r}


def full_size(a, work: Path, model: str) -> dict:
    """One epoch of `model` on the generated full-size graph (scripts/bench/scale_benchmark.py)."""
    out = work / f"scale_{model}"
    cmd = [
        sys.executable,
        "scripts/bench/scale_benchmark.py",
        "--scale",
        str(a.scale),
        "--models",
        model,
        "--data-dir",
        str(work / "scale_data"),
        "--out",
        str(out),
        "--memory-limit-gb",
        str(a.memory_limit_gb),
        "--threads",
        str(a.threads),
        "--sampling",
        "parallel",
        "--override",
        f"device={a.device}",
        f"trainer.num_workers={a.sampler_threads}",
    ]
    r = run(cmd, work / "logs" / f"scale_{model}.log", a.step_timeout_s)
    if Path(f"{out}.json").is_file():
        rep = json.loads(Path(f"{out}.json").read_text())
        row = rep["models"][0] if rep["models"] else {}
        r |= {
            k: row.get(k)
            for k in (
                "train_s_per_epoch",
                "eval_s",
                "seeds_per_s",
                "peak_rss_gb",
                "test_acc",
                "full_epoch",
                "batches",
                "error",
            )
            if row.get(k) is not None
        }
        r |= {
            "generate_s": rep.get("generate_s"),
            "first_load_s": rep["first_load"].get("wall_s"),
            "graph_edges": rep["graph"]["num_edges"],
        }
    return {"model": model, "scale": a.scale, **r}


def kept_cell(a, work: Path, out: Path, dataset: str, model: str) -> dict:
    """A whole cell (`--runs` seeds) whose summary comes back beside the report (<out>/cell_<dataset>_<model>.json),
    to be committed as a cell trained on this device."""
    row = cell(a, work, dataset, model, a.runs, timeout=a.step_timeout_s)
    res = work / "cells" / f"{dataset}_{model}" / "results.json"
    if row["ok"] and res.is_file():
        (out / f"cell_{dataset}_{model}.json").write_text(res.read_text())
    return row


def other_models(a, work: Path) -> list[dict]:
    """Every Table 2 model on DBLP but the timed ones: one short run each, a few at a time."""
    models = [m for m in TABLE2 if m not in ("gcn", "re_gcn", "re_gat")]
    extra = [f"trainer.max_epochs={a.check_epochs}", f"trainer.patience={a.check_epochs}"]
    with concurrent.futures.ThreadPoolExecutor(a.parallel) as pool:
        return list(pool.map(lambda m: cell(a, work, "dblp", m, 1, extra, timeout=a.step_timeout_s), models))


def markdown(rep: dict) -> str:
    lines = [
        f"# The hardware floor on {rep['device']}",
        "",
        f"`{rep['command']}`, {rep['when']}; torch {rep['torch']}. Steps cut by the time budget are marked skipped.",
        "",
    ]
    for name, step in rep["steps"].items():
        lines.append(f"## {name}")
        lines.append("")
        rows = step if isinstance(step, list) else [step]
        keys = list(dict.fromkeys(k for r in rows for k in r))
        lines += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        lines += ["| " + " | ".join(_fmt(r.get(k)) for k in keys) + " |" for r in rows]
        lines.append("")
    if (ratio := rep.get("re_gcn_over_gcn_per_epoch")) is not None:
        lines.append(f"RE-GCN / GCN, seconds per epoch on DBLP: {ratio:.2f}")
    return "\n".join(lines) + "\n"


def _fmt(v) -> str:
    return "" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v).replace("|", "/")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder of the report (on the device tool: $OUT)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--scale", type=float, default=1.0, help="of OGBN-MAG's counts, for the full-size steps")
    ap.add_argument("--runs", type=int, default=10, help="seeds of the timed Table 2 cells")
    ap.add_argument("--check-epochs", type=int, default=20, help="epochs of the other models' check runs")
    ap.add_argument("--parallel", type=int, default=4, help="check runs at a time")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads of the full-size runs")
    ap.add_argument("--sampler-threads", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--memory-limit-gb", type=float, default=100.0)
    ap.add_argument("--step-timeout-s", type=float, default=300.0)
    ap.add_argument("--budget-s", type=float, default=480.0, help="no step starts after this many seconds")
    ap.add_argument("--work", default=None, help="run folders and logs (default <out>/work)")
    a = ap.parse_args(argv)
    import torch

    out = Path(a.out)
    work = Path(a.work) if a.work else out / "work"
    rep = {
        "device": device_name(a.device),
        "torch": torch.__version__,
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{os.cpu_count()} CPUs ({platform.machine()})",
        "command": "python scripts/bench/gpu_floor.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "steps": {},
    }
    t0 = time.perf_counter()
    steps = [
        ("full-size epoch, RE-GCN", lambda: full_size(a, work, "re_gcn")),
        ("DBLP cells, timed", lambda: [cell(a, work, "dblp", m, a.runs) for m in ("re_gcn", "gcn", "re_gat")]),
        ("every other Table 2 model trains on DBLP", lambda: other_models(a, work)),
        ("full-size epoch, RE-GAT", lambda: full_size(a, work, "re_gat")),
        (
            "ACM and IMDB cells",
            lambda: [cell(a, work, d, m, a.runs) for d in ("acm", "imdb") for m in ("re_gcn", "re_gat")],
        ),
        ("DBLP GAT-M, the Table 2 cell too slow for 2 CPU cores", lambda: kept_cell(a, work, out, "dblp", "gat_m")),
    ]
    out.mkdir(parents=True, exist_ok=True)
    for name, step in steps:
        if time.perf_counter() - t0 > a.budget_s:
            rep["steps"][name] = {"skipped": f"the time budget ({a.budget_s:.0f} s) was spent"}
        else:
            print(f"gpu_floor: {name} ...", file=sys.stderr, flush=True)
            rep["steps"][name] = step()
        timed = {r["model"]: r for r in rep["steps"].get("DBLP cells, timed", []) if isinstance(r, dict)}
        if timed.get("re_gcn", {}).get("epoch_time_s") and timed.get("gcn", {}).get("epoch_time_s"):
            rep["re_gcn_over_gcn_per_epoch"] = timed["re_gcn"]["epoch_time_s"] / timed["gcn"]["epoch_time_s"]
        rep["elapsed_s"] = round(time.perf_counter() - t0, 1)
        (out / "gpu_floor.json").write_text(json.dumps(rep, indent=2, default=str) + "\n")
        (out / "gpu_floor.md").write_text(markdown(rep))
    print(f"gpu_floor: wrote {out / 'gpu_floor.json'} and .md in {rep['elapsed_s']:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
