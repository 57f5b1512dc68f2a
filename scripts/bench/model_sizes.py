"""The size on disk of the models `make table-classification` keeps: runs/run_XX/model.pt of every cell (GCN, GAT,
RE-GCN, RE-GAT on DBLP, ACM, IMDB), written as a run writes it (regnn.runs.checkpoint.save), for one run and for the
cell's 10. The weights' values do not change the size, so the models are built, not trained.

    .venv/bin/python scripts/bench/model_sizes.py        # -> results/model_sizes.{csv,md}
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd
from hydra import compose, initialize_config_dir

import regnn.config  # noqa: F401  (the resolvers and model names, as train.py)
from regnn.paths import REPO_ROOT
from regnn.pipeline.fullbatch import DeviceGraph
from regnn.runs import checkpoint


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["dblp", "acm", "imdb"])
    ap.add_argument("--models", nargs="+", default=["gcn", "gat", "re_gcn", "re_gat"])
    ap.add_argument("--out", default=str(REPO_ROOT / "results" / "model_sizes"))
    a = ap.parse_args(argv)
    rows = []
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        for d in a.datasets:
            job = None
            for m in a.models:
                cfg = compose("train", overrides=[f"dataset={d}", f"model={m}"])
                job = DeviceGraph(cfg, "cpu", data=job.data if job is not None else None)
                model = job.build(0)
                with tempfile.TemporaryDirectory() as tmp:
                    checkpoint.save(Path(tmp), model, {"schema": checkpoint.graph_schema(job.data)})
                    size = (Path(tmp) / checkpoint.MODEL_FILE).stat().st_size
                rows.append(
                    {
                        "dataset": d,
                        "model": m,
                        "parameters": sum(p.numel() for p in model.parameters()),
                        "model_pt_mb": size / 2**20,
                        "cell_10_runs_mb": 10 * size / 2**20,
                    }
                )
                print(f"{d} {m}: {size / 2**20:.2f} MB", flush=True)
    df = pd.DataFrame(rows)
    out = Path(a.out)
    df.to_csv(out.with_suffix(".csv"), index=False)
    total = df.cell_10_runs_mb.sum()
    md = [
        "# Saved models of `make table-classification` (runs/run_XX/model.pt)",
        "",
        "| dataset | model | parameters | model.pt (MB) | cell, 10 runs (MB) |",
        "|---|---|---|---|---|",
    ]
    md += [
        f"| {r.dataset} | {r.model} | {r.parameters:,} | {r.model_pt_mb:.2f} | {r.cell_10_runs_mb:.1f} |"
        for r in df.itertuples()
    ]
    md += ["", f"All {len(df)} cells, 10 runs each: {total:.0f} MB."]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print(f"wrote {out.with_suffix('.csv')} and {out.with_suffix('.md')}: {total:.0f} MB in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
