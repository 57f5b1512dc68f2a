"""Scale benchmark: mini-batch RE-GCN and RE-GAT on a generated graph of OGBN-MAG's size, on this machine.

    python scripts/bench/scale_benchmark.py                        # full size (1.94M nodes, 21.1M edges), one epoch each
    python scripts/bench/scale_benchmark.py --scale 0.05           # 5% of every count: a quick check
    python scripts/bench/scale_benchmark.py --max-batches 20       # memory check: 20 training batches per model
    python scripts/bench/scale_benchmark.py --profile              # + seconds per batch of every phase of a step
    python scripts/bench/scale_benchmark.py --sampling-rates --models   # sampling alone: seeds/s per mode and threads

Steps, each timed: (1) write the generated graph in OGB's on-disk layout (regnn.data.ogb_format; kept and
reused under --data-dir), (2) a first load in its own process: ogb's readers parse the raw CSV files, then
regnn builds the features of the feature-less types and the sampling graph, (3) per model, the real command
`python train.py dataset=ogbn_mag trainer=minibatch model=<m> dataset.dir=<data>` in its own process
(load, training with neighbour sampling, sampled evaluation of validation and test papers). Peak memory is each
process's maximum resident set (wait4); a watchdog stops a process that exceeds --memory-limit-gb. Seconds per
epoch are measured when whole epochs ran, else extrapolated from the seeds per second (marked in the output).
--profile times every phase of a training step (trainer.profile) and sets it against an arithmetic estimate: the
dense matrix products of a batch (input projection and layer weights, forward and backward) at the rate this
machine's torch reaches on the projection's shape. --sampling-rates measures the loader alone (no model) for
trainer.sampling=deterministic and parallel at 1 and --threads threads.
Writes <out>.json (data) and <out>.md; default out: results/scale_benchmark_epoch (scale 1) or
results/scale_benchmark_scale<scale>.
"""  # noqa: E501  (usage lines kept whole, to be copied as they are)

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

REPO = Path(__file__).resolve().parents[2]


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
    return {
        "returncode": p.returncode,
        "wall_s": time.perf_counter() - t0,
        "peak_rss_gb": usage.ru_maxrss / 2**20,
        "stopped_at_gb": stopped[0] if stopped else None,
    }


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
    print(
        json.dumps(
            {
                "dataset_s": t1 - t0,
                "sampling_graph_s": t2 - t1,
                "nodes": data.graph.num_nodes(),
                "matmul_gflops": matmul_rate(),
                "edges_with_reverse": data.graph.num_edges(),
                "relation_graph_edges": sg.num_edges,
                "feature_bytes": int(sum(x.numel() * x.element_size() for x in data.features.values())),
                "threads": torch.get_num_threads(),
            }
        )
    )


def matmul_rate() -> float:
    """GFLOP/s of torch's float32 matrix product here: the best of five on the input projection's shape
    (200k x 128 @ 128 x 512) and a layer's (20k x 512 @ 512 x 512), into a reused output (a fresh one would add
    its page faults)."""
    import torch

    best = 0.0
    for n, k in ((200_000, 128), (20_000, 512)):
        a, w = torch.randn(n, k), torch.randn(k, 512)
        out = torch.mm(a, w)
        for _ in range(5):
            t = time.perf_counter()
            torch.mm(a, w, out=out)
            best = max(best, 2 * n * k * 512 / (time.perf_counter() - t) / 1e9)
    return best


def sampling_only(root: str, threads: int, fanouts: list[int], batch_size: int) -> None:
    """Child process of --sampling-rates: prints the loader's seeds/s per mode and thread count as JSON."""
    import regnn  # noqa: F401
    from regnn.data.ogb import load_ogb
    from regnn.training.sampling import SAMPLING_MODES, SampledGraph, sampling_rate

    data = load_ogb("ogbn-mag", root)
    sg = SampledGraph(data)
    seeds = sg.seeds(data.splits["train"])
    rows = [
        sampling_rate(sg, seeds, fanouts, batch_size, mode, t) for t in sorted({1, threads}) for mode in SAMPLING_MODES
    ]
    print(json.dumps(rows))


def matmul_gflop(cfg, p: dict, num_classes: int, in_dim: int = 128, num_types: int = 4) -> float:
    """GFLOP of a batch's dense matrix products, forward and backward (the input projection has no input
    gradient), from the batch's mean sizes p (history's batch_* columns); sparse aggregations are not counted.
    With trainer.input_dropout=features a GCN projects after the first hop: (A Z) W on layer 0's destinations,
    Z with a block of in_dim + 1 columns per node type (OGBN-MAG's 4), whose gradient the embeddings need."""
    n0, v0, seeds = p["batch_sources"], p["batch_dst_0"], p["batch_seeds"]
    m = cfg.model
    if m.backbone == "gcn":
        h = m.hidden
        after_hop = cfg.trainer.get("input_dropout", "projected") == "features"
        project = 6 * v0 * num_types * (in_dim + 1) * h if after_hop else 4 * n0 * in_dim * h
        flop = project + 6 * (v0 + seeds) * h * h + 6 * seeds * h * num_classes
    else:  # the stack layout's GAT: W after the aggregation on layer 0 (in = D), W on the sources of layer 1
        d, k = m.hidden, m.heads
        flop = 4 * n0 * in_dim * d + 6 * v0 * k * d * d + 6 * v0 * (k * d) ** 2 + 6 * seeds * k * d * num_classes
    return flop / 1e9


PHASES = [
    ("sample", "sampling (waiting for the loader)"),
    ("blocks", "adjacencies to the device"),
    ("gather", "feature gather"),
    ("project", "input projection"),
    ("forward_layer_0", "forward layer 0"),
    ("forward_layer_1", "forward layer 1"),
    ("forward_output_layer", "forward output layer"),
    ("forward_rest", "forward, rest (dropout, loss)"),
    ("backward", "backward"),
    ("optimizer_step", "optimizer step"),
]


def profile_lines(report: dict) -> list[str]:
    rows = [r for r in report["models"] if r.get("profile")]
    if not rows:
        return []
    lines = [
        "",
        "## Profile of a training step (seconds per batch, mean over the epoch's batches)",
        "",
        "| phase | " + " | ".join(r["model"] for r in rows) + " |",
        "|---|" + "---|" * len(rows),
    ]
    for key, name in PHASES:
        lines.append(f"| {name} | " + " | ".join(f"{r['profile'].get(key, 0.0):.3f}" for r in rows) + " |")
    lines.append("| **step** | " + " | ".join(f"**{r['profile']['step']:.3f}**" for r in rows) + " |")
    lines.append("| dense products, GFLOP | " + " | ".join(f"{r['matmul_gflop']:.0f}" for r in rows) + " |")
    lines.append("| arithmetic estimate | " + " | ".join(f"{r['matmul_s']:.3f}" for r in rows) + " |")
    lines.append(
        "| step / estimate | " + " | ".join(f"{r['profile']['step'] / r['matmul_s']:.1f}x" for r in rows) + " |"
    )
    lines.append(
        "| peak memory GB at batch "
        + ", ".join(k.rsplit("_", 1)[1] for k in rows[0]["memory"])
        + " | "
        + " | ".join(", ".join(f"{v:.2f}" for v in r["memory"].values()) for r in rows)
        + " |"
    )
    lines += [
        "",
        f"Arithmetic estimate: the dense products at {report['first_load']['matmul_gflops']:.0f} GFLOP/s, "
        "the best rate of torch's float32 product here on the projection's and a layer's shapes (a lower bound "
        "of the step's time); sparse aggregations, gathers and elementwise passes are memory-bound and not in "
        "it. The step is timed as its phases; the profile adds no synchronisation on the CPU.",
    ]
    return lines


def profile_of(h: dict, run_dir: Path, gflops: float) -> dict:
    """The profile columns of an epoch's history row, with the arithmetic estimate of its batches."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
    prof = {k[len("profile_") : -2]: float(v) for k, v in h.items() if k.startswith("profile_") and k.endswith("_s")}
    layers = sum(v for k, v in prof.items() if k.startswith("forward_") and k != "forward_rest")
    prof["forward_rest"] = prof.pop("forward", 0.0) - layers - prof.get("gather", 0.0) - prof.get("project", 0.0)
    prof["step"] = sum(prof.values())
    num_classes = json.loads((run_dir / "results.json").read_text()).get("num_classes", 349)
    gflop = matmul_gflop(cfg, h, num_classes)
    return {
        "profile": prof,
        "matmul_gflop": gflop,
        "matmul_s": gflop / gflops,
        "memory": {k: float(v) for k, v in h.items() if k.startswith("peak_rss_gb_batch_")},
        "batch_sizes": {k: float(v) for k, v in h.items() if k.startswith("batch_")},
    }


def sampling_lines(report: dict) -> list[str]:
    rows = report.get("sampling_rates")
    if not rows:
        return []
    lines = [
        "",
        "## Sampling alone (the loader: blocks and their adjacencies, no model; trainer.sampling)",
        "",
        "| sampling | threads | threads sampling ahead | seeds/s | batches/s | s per batch | vs deterministic |",
        "|---|---|---|---|---|---|---|",
    ]
    base = {r["threads"]: r["seeds_per_s"] for r in rows if r["sampling"] == "deterministic"}
    for r in rows:
        lines.append(
            f"| {r['sampling']} | {r['threads']} | {r.get('num_workers', 0) or '-'} | "
            f"{r['seeds_per_s']:.0f} | {r.get('batches_per_s', 1 / r['s_per_batch']):.1f} | "
            f"{r['s_per_batch']:.3f} | {r['seeds_per_s'] / base[r['threads']]:.2f}x |"
        )
    return lines


def markdown(report: dict) -> str:
    g, rows = report["graph"], report["models"]
    lines = [
        "# Scale benchmark",
        "",
        f"Generated graph with OGBN-MAG's schema at scale {report['scale']}: {g['num_nodes']:,} nodes, "
        f"{g['num_edges']:,} edges (each also reversed), 128-d paper features. {report['machine']}, "
        f"{report['threads']} torch threads, {report['when']}. `{report['command']}`.",
        "",
        f"- generate (write OGB CSV files): {report['generate_s']:.0f} s"
        if report.get("generate_s") is not None
        else "- generate: reused the files written earlier",
        "- first load in its own process (raw CSV files, features, sampling graph): "
        f"{report['first_load']['wall_s']:.0f} s, peak memory "
        f"{report['first_load']['peak_rss_gb']:.2f} GB",
        "",
        "| model | parameters | load s | seeds/s | train s/epoch | eval s | batches | peak memory GB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['model']} | failed: {r['error']} | | | | | | {r['peak_rss_gb']:.2f} |")
            continue
        ep = (
            f"{r['train_s_per_epoch']:.0f}"
            + ("" if r["full_epoch"] else " (extrapolated)")
            + (f", {r['ratio_to_previous']:.2f}x the previous figure" if r.get("ratio_to_previous") else "")
        )
        lines.append(
            f"| {r['model']} | {r['num_parameters']:,} | {r['load_time_s']:.0f} | {r['seeds_per_s']:.0f} | "
            f"{ep} | {r['eval_s']:.0f} | {r['batches']} of {r['batches_per_epoch']} | "
            f"{r['peak_rss_gb']:.2f} |"
        )
    lines += [
        "",
        f"Memory limit {report['memory_limit_gb']} GB (a watchdog stops a process above it). Batch size "
        f"{report['batch_size']}, fanouts {report['fanouts']}. The labels are generated (planted in the paper "
        "features), so accuracies here are no result.",
    ]
    lines += profile_lines(report) + sampling_lines(report)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of OGBN-MAG's node and edge counts")
    ap.add_argument(
        "--models", nargs="*", default=["re_gcn", "re_gat"], help="none: no training (see --sampling-rates)"
    )
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
    ap.add_argument("--profile", action="store_true", help="time every phase of a step (trainer.profile=true)")
    ap.add_argument(
        "--sampling",
        choices=["deterministic", "parallel"],
        default="deterministic",
        help="trainer.sampling of the training runs",
    )
    ap.add_argument("--sampling-rates", action="store_true", help="measure the loader alone per mode and threads")
    ap.add_argument("--load-only", help=argparse.SUPPRESS)
    ap.add_argument("--sampling-only", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    import pandas as pd
    import psutil

    if a.load_only:
        import torch

        torch.set_num_threads(a.threads)
        load_only(a.load_only)
        return 0
    if a.sampling_only:
        sampling_only(a.sampling_only, a.threads, a.fanouts, a.batch_size)
        return 0
    tag = "" if a.scale == 1 else f"_scale{a.scale:g}"
    data_dir = Path(a.data_dir or REPO / "outputs" / "scale_benchmark" / f"data{tag or '_full'}")
    out = Path(a.out or REPO / "results" / f"scale_benchmark{tag or '_epoch'}")
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
    first = run_child(
        [sys.executable, __file__, "--load-only", str(data_dir)], logs / "load.log", a.memory_limit_gb, env
    )
    if first["returncode"] != 0:
        print((logs / "load.log").read_text()[-3000:], file=sys.stderr)
        return 1
    first |= json.loads((logs / "load.log").read_text().strip().splitlines()[-1])
    print(f"first load: {first['wall_s']:.0f} s, peak {first['peak_rss_gb']:.2f} GB", file=sys.stderr)
    rates = None
    if a.sampling_rates:
        print(f"sampling alone ({logs / 'sampling.log'}) ...", file=sys.stderr)
        args = [
            "--sampling-only",
            str(data_dir),
            "--threads",
            str(a.threads),
            "--batch-size",
            str(a.batch_size),
            "--fanouts",
            *map(str, a.fanouts),
        ]
        r = run_child([sys.executable, __file__, *args], logs / "sampling.log", a.memory_limit_gb, env)
        if r["returncode"] != 0:
            print((logs / "sampling.log").read_text()[-3000:], file=sys.stderr)
            return 1
        rates = json.loads((logs / "sampling.log").read_text().strip().splitlines()[-1])
        print(f"sampling: {json.dumps(rates)}", file=sys.stderr)
    rows = []
    for m in a.models:
        run_dir = REPO / "outputs" / "scale_benchmark" / f"{m}{tag}_{time.strftime('%Y%m%d-%H%M%S')}"
        cmd = [
            sys.executable,
            str(REPO / "train.py"),
            "dataset=ogbn_mag",
            "trainer=minibatch",
            f"model={m}",
            f"dataset.dir={data_dir}",
            "runs=1",
            f"threads={a.threads}",
            f"trainer.max_epochs={a.epochs}",
            f"trainer.patience={a.epochs}",
            f"trainer.batch_size={a.batch_size}",
            f"trainer.fanouts=[{','.join(map(str, a.fanouts))}]",
            f"hydra.run.dir={run_dir}",
            f"trainer.sampling={a.sampling}",
            *(["trainer.profile=true"] if a.profile else []),
            *a.override,
        ]
        if a.max_batches:
            cmd.append(f"trainer.max_batches={a.max_batches}")
        print(f"{m}: training ({logs / (m + '.log')}) ...", file=sys.stderr)
        r = run_child(cmd, logs / f"{m}.log", a.memory_limit_gb, env)
        row = {"model": m, "command": " ".join(cmd[1:]), "peak_rss_gb": r["peak_rss_gb"], "wall_s": r["wall_s"]}
        if r["returncode"] != 0:
            row["error"] = (
                f"stopped above {r['stopped_at_gb']:.1f} GB"
                if r["stopped_at_gb"]
                else f"exit code {r['returncode']}, see {logs / (m + '.log')}"
            )
        else:
            res = json.loads((run_dir / "results.json").read_text())
            hist = pd.read_csv(run_dir / "runs" / "run_00" / "history.csv").to_dict("records")
            per_epoch = -(-info["split"]["train"] // a.batch_size)
            full = not a.max_batches or a.max_batches >= per_epoch
            sps = float(res["metrics"]["seeds_per_s"]["mean"])
            row |= {
                "num_parameters": res["num_parameters"],
                "load_time_s": res["load_time_s"],
                "seeds_per_s": sps,
                "full_epoch": full,
                "batches": int(hist[0]["batches"]),
                "batches_per_epoch": per_epoch,
                "train_s_per_epoch": (hist[0]["train_time_s"] if full else info["split"]["train"] / sps),
                "eval_s": float(hist[0]["epoch_time_s"] - hist[0]["train_time_s"]),
                "test_acc": res["metrics"]["test_acc"]["mean"],
                "run_dir": str(run_dir.relative_to(REPO)),
            }
            if a.profile:
                row |= profile_of(hist[0], run_dir, first["matmul_gflops"])
        rows.append(row)
        print(f"{m}: {json.dumps({k: v for k, v in row.items() if k != 'command'})}", file=sys.stderr)
    report = {
        "scale": a.scale,
        "graph": info,
        "generate_s": generate_s,
        "first_load": first,
        "models": rows,
        "sampling_rates": rates,
        "sampling": a.sampling,
        "batch_size": a.batch_size,
        "fanouts": a.fanouts,
        "epochs": a.epochs,
        "max_batches": a.max_batches,
        "threads": a.threads,
        "memory_limit_gb": a.memory_limit_gb,
        "machine": f"{os.cpu_count()} CPUs ({platform.machine()}), {psutil.virtual_memory().total / 2**30:.0f} GB RAM",
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "command": "python scripts/bench/scale_benchmark.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = previous_epochs(Path(f"{out}.json"))
    for row in rows:  # a slower change shows itself where it is run
        was, now = previous.get(row["model"]), row.get("train_s_per_epoch")
        if was and now:
            row["ratio_to_previous"] = now / was
        print(
            f"{row['model']}: "
            + (f"{now:.1f} s per epoch" if now else "no epoch time")
            + (f", {now / was:.2f}x the previous figure ({was:.1f} s)" if was and now else ", no previous figure"),
            file=sys.stderr,
        )
    Path(f"{out}.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    Path(f"{out}.md").write_text(markdown(report))
    print(f"wrote {out}.json and .md", file=sys.stderr)
    return 0 if all("error" not in r for r in rows) else 1


def previous_epochs(path: Path) -> dict[str, float]:
    """{model: training seconds per epoch} of the report at `path` before it is rewritten (none where absent)."""
    try:
        models = json.loads(path.read_text())["models"]
    except (OSError, ValueError, KeyError):
        return {}
    return {m["model"]: float(m["train_s_per_epoch"]) for m in models if m.get("train_s_per_epoch")}


if __name__ == "__main__":
    raise SystemExit(main())
