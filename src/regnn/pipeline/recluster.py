"""Re-score a trained cell's clustering from the representations it saved, without retraining.

    python -m regnn.pipeline.recluster CELL_DIR [CELL_DIR ...] [--n-init 10]

Every run of the cell (and of each meta-path sub-cell under metapaths/) must have kept runs/run_XX/embeddings.npz
(cells trained with save_embeddings=true); a cell without them is refused and must be retrained. The runs' NMI and
ARI are recomputed with the cell's own repeats and seed and the new number of K-Means starts; each run's
results.json, the cell's summary and config.yaml (clustering.n_init) are rewritten whole, so the cell reads as if
trained with that setting, and a resume under it accepts the cell. Classification scores are untouched.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from omegaconf import OmegaConf

from regnn.runs import embeddings, io_safe
from regnn.paths import REPO_ROOT
from regnn.evaluation.clustering import cluster_scores
from regnn.evaluation.metrics import mean_std
from regnn.pipeline.from_config import load_data
from regnn.training.divergence import finished

log = logging.getLogger("regnn")
SCORES = ("nmi", "ari")


def _runs_to_rescore(cell: Path) -> list[Path]:
    """The run folders whose records hold clustering scores; every one must have its representations."""
    runs = [r for r in sorted((cell / "runs").glob("run_*")) if "nmi" in (io_safe.read_json(r / "results.json") or {})]
    lacking = [r.name for r in runs if not (r / "embeddings.npz").is_file()]
    if lacking:
        raise SystemExit(
            f"{cell}: {', '.join(lacking)} kept no embeddings.npz; retrain the cell instead "
            "(its clustering cannot be recomputed)"
        )
    return runs


def _rescore_cell(cell: Path, n_init: int, num_classes: int) -> dict:
    """Rewrites the runs, summary and config of one (sub-)cell; returns the new summary."""
    cfg = OmegaConf.load(cell / "config.yaml")
    by_run = {}
    for run_dir in _runs_to_rescore(cell):
        emb, labels = embeddings.read_test(run_dir / "embeddings.npz")
        rec = io_safe.read_json(run_dir / "results.json")
        rec |= cluster_scores(
            emb, labels, num_classes, repeats=int(cfg.clustering.repeats), n_init=n_init, seed=int(cfg.clustering.seed)
        )
        io_safe.write_json(run_dir / "results.json", rec)
        by_run[rec["run"]] = {k: v for k, v in rec.items() if k != "relation_weights"}
    summary = io_safe.read_json(cell / "results.json", io_safe.is_cell_summary)
    if summary is None:
        raise SystemExit(f"{cell} has no finished results.json: finish training it first")
    summary["per_run"] = [by_run.get(r["run"], r) for r in summary["per_run"]]
    ok = finished(summary["per_run"])
    summary["metrics"] |= {k: mean_std([r[k] for r in ok]) for k in SCORES if ok and k in ok[0]}
    io_safe.write_json(cell / "results.json", summary)
    cfg.clustering.n_init = n_init
    io_safe.write_text(cell / "config.yaml", OmegaConf.to_yaml(cfg))
    log.info(
        "%s: %d runs re-clustered with %d K-Means starts: NMI %.2f, ARI %.2f",
        cell,
        len(by_run),
        n_init,
        summary["metrics"]["nmi"]["mean"],
        summary["metrics"]["ari"]["mean"],
    )
    return summary


def recluster(cell: Path, n_init: int) -> dict:
    """Re-scores the cell (a meta-path cell: every sub-cell, then its summary from the chosen one's)."""
    cfg = OmegaConf.load(cell / "config.yaml")
    if not cfg.get("clustering", {}).get("enabled"):
        raise SystemExit(f"{cell} was trained with clustering.enabled=false: there are no scores to redo")
    num_classes = load_data(cfg.dataset).num_classes
    subs = sorted(p for p in (cell / "metapaths").glob("*") if (p / "config.yaml").is_file())
    if not subs:
        return _rescore_cell(cell, n_init, num_classes)
    per_path = {p.name: _rescore_cell(p, n_init, num_classes) for p in subs}
    top = io_safe.read_json(cell / "results.json", io_safe.is_cell_summary)
    chosen = per_path[top["metapath"]]
    top |= {"per_run": chosen["per_run"], "metrics": chosen["metrics"]}
    io_safe.write_json(cell / "results.json", top)
    cfg.clustering.n_init = n_init
    io_safe.write_text(cell / "config.yaml", OmegaConf.to_yaml(cfg))
    return top


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cells", nargs="+", type=Path)
    p.add_argument(
        "--n-init",
        type=int,
        default=None,
        help="K-Means starts per repeat (default: clustering.n_init of conf/train.yaml)",
    )
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    n_init = a.n_init or int(OmegaConf.load(REPO_ROOT / "conf" / "train.yaml").clustering.n_init)
    if n_init < 1:
        p.error("--n-init must be >= 1")
    for cell in a.cells:
        if not (cell / "config.yaml").is_file():
            raise SystemExit(f"{cell} is not a trained cell (it has no config.yaml)")
        recluster(cell, n_init)
    return 0


if __name__ == "__main__":
    sys.exit(main())
