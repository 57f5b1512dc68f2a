"""regnn's R-GCN, HGT and Simple-HGN beside the same models written with PyG, on DBLP, ACM and IMDB with Table 2's
settings.

    python scripts/bench/pyg_side_by_side.py [--models rgcn hgt simple_hgn] [--datasets dblp acm imdb] [--runs 10]
    # -> results/pyg_side_by_side.{csv,md,json}; the cells asked for replace their rows, the others' are kept

The PyG models (scripts/bench/pyg_baselines.py) are built from each seed's regnn model and start from its weights
where the parameterisations correspond: R-GCN (PyG's RGCNConv) and Simple-HGN (PyG's MessagePassing) compute the
same class scores before training, checked here; HGT (PyG's HGTConv) puts GELU and dropout elsewhere and has
biases, so from the same weights it computes another function (its start gap is recorded, not checked). Both
models of a seed are trained by regnn's trainer with the cell's settings (optimizer, dropout, early stopping on
validation loss, the test score at the best validation epoch) on the same splits, from the same random state.
The table says whether the test scores are told apart (a paired t-test over the seeds) and how long an epoch takes
in each. HGT is compared in DGL's form (model.variant=dgl) on every dataset: IMDB's Table 2 cell is HGB's layer,
which PyG does not have.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
# model -> (regnn overrides, the PyG model's class in pyg_baselines, whether the copy computes the same scores)
MODELS = {
    "rgcn": (["model=rgcn"], "PygRGCN", True),
    "hgt": (["model=hgt", "model.variant=dgl"], "PygHGT", False),
    "simple_hgn": (["model=simple_hgn"], "PygSimpleHGN", True),
}
NAMES = {"rgcn": "R-GCN", "hgt": "HGT", "simple_hgn": "Simple-HGN"}


def pyg_baselines():
    """The sibling module with the PyG models (imported here: it needs PyG)."""
    import importlib

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    return importlib.import_module("pyg_baselines")


def same_scores(ours, theirs, g) -> float:
    """The largest difference between the two models' class scores before training (evaluation mode, float64),
    relative to the largest score."""
    a, b = copy.deepcopy(ours).double().eval(), copy.deepcopy(theirs).double().eval()
    feats = {t: x.double() for t, x in g.feats.items()}
    with torch.no_grad():
        x, y = a(g.inputs, feats)[0], b(g.inputs, feats)[0]
    return float((x - y).abs().max() / x.abs().max())


def graph_of(dataset: str, model: str, extra=()):
    """The cell's DeviceGraph (dataset and model with Table 2's settings; extra overrides after them)."""
    from omegaconf import OmegaConf, open_dict

    from regnn.pipeline.api import compose
    from regnn.pipeline.fullbatch import DeviceGraph

    cfg = compose([f"dataset={dataset}", *MODELS[model][0], *extra])
    with open_dict(cfg):
        del cfg["hydra"]
    OmegaConf.resolve(cfg)
    return DeviceGraph(cfg, torch.device("cpu"))


def side_by_side(dataset: str, model: str, runs: int, done=lambda rows: None) -> list[dict]:
    """done(rows): called with the cell's rows after every seed (written out, so a stopped cell keeps its seeds)."""
    from regnn.spec import training_of
    from regnn.training.seed import seed_everything

    g = graph_of(dataset, model)
    cfg, (_, cls, exact) = g.cfg, MODELS[model]
    pyg_model = getattr(pyg_baselines(), cls)
    options, rows = training_of(cfg), []
    for seed in range(runs):
        ours = g.build(seed)
        theirs = pyg_model(ours, g.inputs)
        gap = same_scores(ours, theirs, g)
        if exact and gap > 1e-6:  # float32 rounding inside the sparse products; another function would differ by O(1)
            raise SystemExit(f"{dataset} {model} seed {seed}: the two models differ before training ({gap:.3g})")
        for name, m in (("regnn", ours), ("pyg", theirs)):
            seed_everything(seed, cfg.deterministic)  # the same dropout masks for both where they draw alike
            t = time.perf_counter()
            r = g.trainer()(m, g.inputs, g.feats, g.labels, g.splits, seed=seed, options=options)
            epochs = [h["epoch_time_s"] for h in r.history]
            rows.append(
                {"dataset": dataset, "model": model, "seed": seed, "impl": name, "start_gap": gap}
                | {k: r.metrics[k] for k in ("val_micro_f1", "test_micro_f1", "test_macro_f1")}
                | {"best_epoch": r.best_epoch, "epochs": r.epochs, "s_per_epoch": float(np.median(epochs))}
                | {"wall_s": time.perf_counter() - t, "threads": torch.get_num_threads()}
            )
            print(
                f"{dataset} {model} seed {seed} {name}: test Micro-F1 {r.metrics['test_micro_f1']:.2f}", file=sys.stderr
            )
        done(rows)
    return rows


def markdown(df) -> str:
    from regnn.evaluation.paired import beyond_noise, paired_gain, required_t

    lines = [
        "# R-GCN, HGT and Simple-HGN: regnn's layers beside PyG's (same model, same trainer)",
        "",
        "| model | dataset | seeds | same start? | regnn test Micro-F1 | PyG test Micro-F1 | paired difference "
        "(regnn - PyG), 95% interval | told apart? | s/epoch regnn / PyG (threads) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (model, ds), d in df.groupby(["model", "dataset"], sort=False):
        a, b = d[d.impl == "regnn"].set_index("seed"), d[d.impl == "pyg"].set_index("seed")
        gain = paired_gain(a.test_micro_f1.to_dict(), b.test_micro_f1.to_dict())
        mean, se, n = gain
        half = required_t(n, alpha=0.025) * se  # the two-sided 95% interval's half width
        apart = beyond_noise(gain) or beyond_noise((-mean, se, n))
        start = "same scores" if MODELS[model][2] else f"copied, gap {a.start_gap.max():.2f}"
        lines.append(
            f"| {NAMES[model]} | {ds.upper()} | {n} | {start} | {a.test_micro_f1.mean():.2f} ± "
            f"{a.test_micro_f1.std(ddof=0):.2f} | {b.test_micro_f1.mean():.2f} ± {b.test_micro_f1.std(ddof=0):.2f} | "
            f"{mean:+.2f} [{mean - half:+.2f}, {mean + half:+.2f}] | {'yes' if apart else 'no'} | "
            f"{a.s_per_epoch.median():.3f} / {b.s_per_epoch.median():.3f} ({int(d.threads.max())}) |"
        )
    return "\n".join(lines + NOTES) + "\n"


NOTES = [
    "",
    "- Each seed's PyG model is built from the regnn model of that seed (scripts/bench/pyg_baselines.py). 'Same "
    "scores': it computes the regnn model's class scores before training (R-GCN: PyG's `RGCNConv(aggr=\"mean\")`; "
    "Simple-HGN: its layer on PyG's `MessagePassing` and `softmax`, the edges in regnn's order, so dropout draws "
    "the same masks). HGT: PyG's `HGTConv` with regnn's (DGL's HGTConv) weights copied where they correspond; PyG "
    "applies GELU to the aggregated messages before the output map (regnn: after the layer), has biases (started "
    "at 0) and no dropout inside the layer (here: after it), so from the same weights it is another function; the "
    "gap is the largest difference of the class scores before training, relative to the largest score.",
    "- Both trained by regnn's trainer with Table 2's settings for the cell (conf/model/<m>.yaml, "
    "conf/tuned/<dataset>_<m>.yaml; HGT in DGL's form, `model.variant=dgl`, on every dataset), the same random "
    "state per seed; test Micro-F1 (mean ± std over the seeds) at the best validation-loss epoch. Paired "
    "difference: mean over the seeds with a 95% t interval; 'told apart': a one-sided paired t-test at 0.05 either "
    "way (regnn.evaluation.paired). s/epoch: the median training epoch (step and validation pass) of all runs.",
    f"- torch {torch.__version__}, PyG {__import__('torch_geometric').__version__}, {platform.machine()}. Made by "
    "`make pyg-side-by-side` (scripts/bench/pyg_side_by_side.py).",
]


def write(out: Path, df) -> str:
    """results/pyg_side_by_side.{csv,md,json} from every cell's rows; returns the markdown."""
    order = {m: i for i, m in enumerate(MODELS)}
    df = df.sort_values("model", key=lambda c: c.map(order), kind="stable")  # datasets as they ran
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".csv").write_text(df.to_csv(index=False, float_format="%.4f"))
    text = markdown(df)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(df.to_dict("records"), indent=1))
    return text


def main(argv=None) -> int:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--datasets", nargs="+", default=["dblp", "acm", "imdb"])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (s/epoch compares within a row)")
    ap.add_argument("--out", default=str(REPO / "results" / "pyg_side_by_side"))
    a = ap.parse_args(argv)
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        print("error: PyG is not installed: pip install torch-geometric (the pyg extra)", file=sys.stderr)
        return 2
    torch.set_num_threads(a.threads)
    out = Path(a.out)
    old = pd.read_csv(out.with_suffix(".csv")) if out.with_suffix(".csv").exists() else None
    if old is not None:  # the other cells' rows stay
        old = old[~(old.model.isin(a.models) & old.dataset.isin(a.datasets))]
    rows = []
    for m in a.models:
        for ds in a.datasets:
            cell = side_by_side(ds, m, a.runs, lambda r: write(out, pd.concat([old, pd.DataFrame(rows + r)])))
            rows += cell
    text = write(out, pd.concat([old, pd.DataFrame(rows)]))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
