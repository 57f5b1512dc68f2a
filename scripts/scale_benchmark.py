"""Scale benchmark: mini-batch RE-GCN and RE-GAT on a generated graph of OGBN-MAG's size, on this machine.

    python scripts/scale_benchmark.py                        # full size (1.94M nodes, 21.1M edges), one epoch each
    python scripts/scale_benchmark.py --scale 0.05           # 5% of every count: a quick check
    python scripts/scale_benchmark.py --max-batches 20       # memory check: 20 training batches per model

Steps, each timed: (1) write the generated graph in OGB's on-disk layout (regnn.data.ogb_format; kept and
reused under --data-dir), (2) a first load in its own process: ogb converts the raw CSV files to its DGL cache,
then regnn builds the features of the feature-less types and the sampling graph, (3) per model, the real command
`python train.py dataset=ogbn_mag trainer=minibatch model=<m> dataset.dir=<data>` in its own process (cached
load, training with neighbour sampling, sampled evaluation of validation and test papers). Peak memory is each
process's maximum resident set (wait4); a watchdog stops a process that exceeds --memory-limit-gb. Seconds per
epoch are measured when whole epochs ran, else extrapolated from the seeds per second (marked in the output).
Writes <out>.json (data) and <out>.md; default out: results/scale_benchmark (scale 1) or
results/scale_benchmark_scale<scale>.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def run_child(cmd: list[str], log_path: Path, limit_gb: float, env: dict) -> dict:
    """Runs cmd with output to log_path; returns exit code, wall time, peak RSS (GB) and whether it was stopped."""
    import psutil
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        p = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
        stopped, seen = [], [0.0]

        def watch():
            proc = psutil.Process(p.pid)
            while p.poll() is None:
                try:
                    rss = sum(q.memory_info().rss for q in [proc, *proc.children(recursive=True)]) / 2**30
                except psutil.Error:
                    break
                seen[0] = max(seen[0], rss)
                if rss > limit_gb:
                    stopped.append(rss)
                    p.kill()
                    break
                time.sleep(0.5)
        threading.Thread(target=watch, daemon=True).start()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    return {"returncode": p.returncode, "wall_s": time.perf_counter() - t0, "peak_rss_gb": usage.ru_maxrss / 2**20,
            "stopped_at_gb": stopped[0] if stopped else None}


def load_only(root: str) -> None:
    """Child process of step (2): prints the timings of a load as JSON."""
    import torch

    import regnn  # noqa: F401
    from regnn.data.ogb import load_ogb
    from regnn.training.sampling import SampledGraph
    t0 = time.perf_counter()
    data = load_ogb("ogbn-mag", root)
    t1 = time.perf_counter()
    sg = SampledGraph(data)
    t2 = time.perf_counter()
    print(json.dumps({"dataset_s": t1 - t0, "sampling_graph_s": t2 - t1, "nodes": data.graph.num_nodes(),
                      "edges_with_reverse": data.graph.num_edges(), "relation_graph_edges": sg.graph.num_edges(),
                      "feature_bytes": int(sum(x.numel() * x.element_size() for x in data.features.values())),
                      "threads": torch.get_num_threads()}))


def markdown(report: dict) -> str:
    g, rows = report["graph"], report["models"]
    lines = ["# Scale benchmark", "",
             f"Generated graph with OGBN-MAG's schema at scale {report['scale']}: {g['num_nodes']:,} nodes, "
             f"{g['num_edges']:,} edges (each also reversed), 128-d paper features. {report['machine']}, "
             f"{report['threads']} torch threads, {report['when']}. `{report['command']}`.", "",
             f"- generate (write OGB CSV files): {report['generate_s']:.0f} s" if report.get("generate_s") is not None
             else "- generate: reused the files written earlier",
             f"- first load in its own process ({'ogb raw CSV -> DGL cache, ' if report['first_load']['raw'] else ''}"
             f"features, sampling graph): {report['first_load']['wall_s']:.0f} s, peak memory "
             f"{report['first_load']['peak_rss_gb']:.2f} GB", "",
             "| model | parameters | load (cached) s | seeds/s | train s/epoch | eval s | batches | peak memory GB |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['model']} | failed: {r['error']} | | | | | | {r['peak_rss_gb']:.2f} |")
            continue
        ep = f"{r['train_s_per_epoch']:.0f}" + ("" if r["full_epoch"] else " (extrapolated)")
        lines.append(f"| {r['model']} | {r['num_parameters']:,} | {r['load_time_s']:.0f} | {r['seeds_per_s']:.0f} | "
                     f"{ep} | {r['eval_s']:.0f} | {r['batches']} of {r['batches_per_epoch']} | "
                     f"{r['peak_rss_gb']:.2f} |")
    lines += ["", f"Memory limit {report['memory_limit_gb']} GB (a watchdog stops a process above it). Batch size "
              f"{report['batch_size']}, fanouts {report['fanouts']}. The labels are generated (planted in the paper "
              "features), so accuracies here are no result."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of OGBN-MAG's node and edge counts")
    ap.add_argument("--models", nargs="+", default=["re_gcn", "re_gat"])
    ap.add_argument("--epochs", type=int, default=1, help="training epochs per model")
    ap.add_argument("--max-batches", type=int, default=None, help="training batches per epoch (default: all)")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--fanouts", type=int, nargs="+", default=[25, 20])
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads per process")
    ap.add_argument("--memory-limit-gb", type=float, default=16.0)
    ap.add_argument("--data-dir", default=None, help="where the generated graph is written and reused")
    ap.add_argument("--out", default=None, help="output path without suffix")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--override", nargs="*", default=[], help="extra train.py overrides, e.g. trainer.eval=layerwise")
    ap.add_argument("--load-only", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    import pandas as pd
    import psutil
    if a.load_only:
        load_only(a.load_only)
        return 0
    tag = "" if a.scale == 1 else f"_scale{a.scale:g}"
    data_dir = Path(a.data_dir or REPO / "outputs" / "scale_benchmark" / f"data{tag or '_full'}")
    out = Path(a.out or REPO / "results" / f"scale_benchmark{tag}")
    env = {**os.environ, "OMP_NUM_THREADS": str(a.threads), "HYDRA_FULL_ERROR": "1"}
    marker = data_dir / "generated.json"
    info = json.loads(marker.read_text()) if marker.exists() else None
    generate_s = None
    if not info or info.get("scale") != a.scale or info.get("seed") != a.seed:
        from regnn.data.ogb_format import write_ogb_mag_like
        print(f"generating scale {a.scale} under {data_dir} ...", file=sys.stderr)
        t = time.perf_counter()
        info = write_ogb_mag_like(data_dir, scale=a.scale, seed=a.seed) | {"scale": a.scale, "seed": a.seed}
        generate_s = time.perf_counter() - t
        marker.write_text(json.dumps(info, indent=2))
    print(f"graph: {info['num_nodes']:,} nodes, {info['num_edges']:,} edges", file=sys.stderr)
    logs = REPO / "outputs" / "scale_benchmark" / f"logs{tag}"
    raw = not (data_dir / "ogbn_mag" / "processed" / "dgl_data_processed").exists()
    first = run_child([sys.executable, __file__, "--load-only", str(data_dir)], logs / "load.log",
                      a.memory_limit_gb, env)
    if first["returncode"] != 0:
        print((logs / "load.log").read_text()[-3000:], file=sys.stderr)
        return 1
    first |= json.loads((logs / "load.log").read_text().strip().splitlines()[-1]) | {"raw": raw}
    print(f"first load: {first['wall_s']:.0f} s, peak {first['peak_rss_gb']:.2f} GB", file=sys.stderr)
    rows = []
    for m in a.models:
        run_dir = REPO / "outputs" / "scale_benchmark" / f"{m}{tag}_{time.strftime('%Y%m%d-%H%M%S')}"
        cmd = [sys.executable, str(REPO / "train.py"), "dataset=ogbn_mag", "trainer=minibatch", f"model={m}",
               f"dataset.dir={data_dir}", "runs=1", f"threads={a.threads}", f"trainer.max_epochs={a.epochs}",
               f"trainer.patience={a.epochs}", f"trainer.batch_size={a.batch_size}",
               f"trainer.fanouts=[{','.join(map(str, a.fanouts))}]", f"hydra.run.dir={run_dir}", *a.override]
        if a.max_batches:
            cmd.append(f"trainer.max_batches={a.max_batches}")
        print(f"{m}: training ({logs / (m + '.log')}) ...", file=sys.stderr)
        r = run_child(cmd, logs / f"{m}.log", a.memory_limit_gb, env)
        row = {"model": m, "command": " ".join(cmd[1:]), "peak_rss_gb": r["peak_rss_gb"], "wall_s": r["wall_s"]}
        if r["returncode"] != 0:
            row["error"] = (f"stopped above {r['stopped_at_gb']:.1f} GB" if r["stopped_at_gb"]
                            else f"exit code {r['returncode']}, see {logs / (m + '.log')}")
        else:
            res = json.loads((run_dir / "results.json").read_text())
            hist = pd.read_csv(run_dir / "runs" / "run_00" / "history.csv").to_dict("records")
            per_epoch = -(-info["split"]["train"] // a.batch_size)
            full = not a.max_batches or a.max_batches >= per_epoch
            sps = float(res["metrics"]["seeds_per_s"]["mean"])
            row |= {"num_parameters": res["num_parameters"], "load_time_s": res["load_time_s"], "seeds_per_s": sps,
                    "full_epoch": full, "batches": int(hist[0]["batches"]), "batches_per_epoch": per_epoch,
                    "train_s_per_epoch": (hist[0]["train_time_s"] if full else info["split"]["train"] / sps),
                    "eval_s": float(hist[0]["epoch_time_s"] - hist[0]["train_time_s"]),
                    "test_acc": res["metrics"]["test_acc"]["mean"], "run_dir": str(run_dir.relative_to(REPO))}
        rows.append(row)
        print(f"{m}: {json.dumps({k: v for k, v in row.items() if k != 'command'})}", file=sys.stderr)
    report = {"scale": a.scale, "graph": info, "generate_s": generate_s, "first_load": first, "models": rows,
              "batch_size": a.batch_size, "fanouts": a.fanouts, "epochs": a.epochs, "max_batches": a.max_batches,
              "threads": a.threads, "memory_limit_gb": a.memory_limit_gb,
              "machine": f"{os.cpu_count()} CPUs ({platform.machine()}), {psutil.virtual_memory().total / 2**30:.0f} GB RAM",
              "when": time.strftime("%Y-%m-%d %H:%M"),
              "command": "python scripts/scale_benchmark.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    Path(f"{out}.md").write_text(markdown(report))
    print(f"wrote {out}.json and .md", file=sys.stderr)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
