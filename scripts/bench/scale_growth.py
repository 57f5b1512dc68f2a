"""How the cost of a mini-batch epoch grows with the graph: RE-GCN and RE-GAT at 5%, 10%, 25%, 50% and 100% of
OGBN-MAG's size, on generated graphs of its schema (scripts/bench/scale_benchmark.py at each scale).

    python scripts/bench/scale_growth.py                 # every scale; full size read from --full
    python scripts/bench/scale_growth.py --scales 0.05 0.1 --full none --out /tmp/growth

Each scale below 1 runs `scale_benchmark.py --scale <s> --profile` (one whole training epoch per model, in its own
process) into <work>/scale_<s>.json, kept: the same command again measures only the scales it lacks. Full size
comes from --full (default results/scale_benchmark_epoch.json, which `make scale-benchmark` writes), so it is
measured once. Per model and scale: seconds per epoch, peak memory, and the edges the epoch sampled (batches x
the edges of every sampled hop); seconds per million sampled edges shows whether the cost is linear in them.
Writes <out>.json, <out>.md and <fig>.png (default results/scale_growth, results/fig_scale_growth.png); an
existing report is never written over.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from regnn.paths import repo_relative

REPO = Path(__file__).resolve().parents[2]
SCALES = [0.05, 0.1, 0.25, 0.5, 1.0]


def measure(scale: float, work: Path, models: list[str], threads: int) -> Path:
    """<work>/scale_<s>.json, measured unless it exists."""
    out = work / f"scale_{scale:g}"
    done = Path(f"{out}.json")  # not with_suffix: "scale_0.05" would lose its ".05"
    if not done.is_file():
        cmd = [sys.executable, str(REPO / "scripts/bench/scale_benchmark.py"), "--scale", str(scale), "--profile"]
        cmd += ["--models", *models, "--threads", str(threads), "--out", str(out)]
        cmd += ["--data-dir", str(REPO / "outputs" / "scale_benchmark" / f"data_scale{scale:g}")]
        print(f"scale_growth: {scale:g} of OGBN-MAG's size ...", flush=True)
        subprocess.run(cmd, check=True, cwd=REPO)
    return done


def rows_of(report: dict) -> list[dict]:
    rows = []
    for m in report["models"]:
        if "train_s_per_epoch" not in m:
            continue
        b = m.get("batch_sizes") or {}
        edges = m["batches_per_epoch"] * (b.get("batch_edges_0", 0) + b.get("batch_edges_last", 0))
        rows.append(
            {
                "model": m["model"],
                "scale": report["scale"],
                "graph_edges": report["graph"]["num_edges"],
                "batches": m["batches_per_epoch"],
                "sampled_edges_m": edges / 1e6,
                "s_per_epoch": m["train_s_per_epoch"],
                "full_epoch": m["full_epoch"],
                "peak_rss_gb": m["peak_rss_gb"],
                "s_per_m_sampled_edges": m["train_s_per_epoch"] / (edges / 1e6) if edges else None,
            }
        )
    return rows


def markdown(rows: list[dict], reports: list[dict]) -> str:
    lines = [
        "# How a mini-batch epoch's cost grows with the graph",
        "",
        f"`python scripts/bench/scale_growth.py` on {reports[-1]['machine']}, {reports[-1]['threads']} threads: "
        f"generated graphs of OGBN-MAG's schema at each scale, fanouts {reports[-1]['fanouts']}, batch "
        f"{reports[-1]['batch_size']}, one training epoch per model in its own process (full size: "
        "results/scale_benchmark_epoch.json). Sampled edges: batches x the edges of every sampled hop.",
        "",
        "| model | scale | graph edges | batches | sampled edges (M) | s / epoch | s / M sampled edges "
        "| peak memory (GB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        per = f"{r['s_per_m_sampled_edges']:.3f}" if r["s_per_m_sampled_edges"] else ""
        lines.append(
            f"| {r['model']} | {r['scale']:g} | {r['graph_edges']:,} | {r['batches']} | {r['sampled_edges_m']:.1f} | "
            f"{r['s_per_epoch']:.1f}{'' if r['full_epoch'] else ' (extrapolated)'} | {per} | {r['peak_rss_gb']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for model in dict.fromkeys(r["model"] for r in rows):
        rs = sorted((r for r in rows if r["model"] == model), key=lambda r: r["scale"])
        a.plot([r["sampled_edges_m"] for r in rs], [r["s_per_epoch"] for r in rs], "o-", label=model)
        b.plot([100 * r["scale"] for r in rs], [r["peak_rss_gb"] for r in rs], "o-", label=model)
        for r in rs:
            a.annotate(f"{100 * r['scale']:g}%", (r["sampled_edges_m"], r["s_per_epoch"]), fontsize=7)
    a.set(xlabel="edges sampled in the epoch (millions)", ylabel="seconds per training epoch", xlim=(0, None))
    a.set_ylim(0, None)
    b.set(xlabel="% of OGBN-MAG's size", ylabel="peak memory (GB)", xlim=(0, None), ylim=(0, None))
    for ax in (a, b):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Mini-batch epoch on generated OGBN-MAG-shaped graphs (CPU)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", type=float, nargs="+", default=SCALES)
    ap.add_argument("--models", nargs="+", default=["re_gcn", "re_gat"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--full", default=str(REPO / "results" / "scale_benchmark_epoch.json"), help="or none")
    ap.add_argument("--work", default=str(REPO / "outputs" / "scale_growth"))
    ap.add_argument("--out", default=str(REPO / "results" / "scale_growth"))
    ap.add_argument("--fig", default=str(REPO / "results" / "fig_scale_growth.png"))
    a = ap.parse_args(argv)
    out_json, out_md, fig = Path(f"{a.out}.json"), Path(f"{a.out}.md"), Path(a.fig)
    for p in (out_json, out_md, fig):
        if p.exists():
            sys.exit(f"scale_growth: {p} exists; move it away or give --out/--fig (an earlier report is never lost)")
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    paths = [
        Path(a.full) if s == 1.0 and a.full != "none" else measure(s, work, a.models, a.threads)
        for s in sorted(a.scales)
    ]
    reports = [json.loads(p.read_text()) for p in paths]
    rows = [r for rep in reports for r in rows_of(rep) if r["model"] in a.models]
    rows.sort(key=lambda r: (a.models.index(r["model"]), r["scale"]))
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps({"rows": rows, "sources": [repo_relative(p) for p in paths]}, indent=2) + "\n")
    out_md.write_text(markdown(rows, reports))
    plot(rows, fig)
    print(markdown(rows, reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
