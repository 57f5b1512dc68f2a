"""regnn's R-GCN beside the same model written with PyG's RGCNConv, on DBLP, ACM and IMDB with Table 2's settings.

    python scripts/bench/pyg_side_by_side.py [--runs 10] [--datasets dblp acm imdb]   # -> results/pyg_side_by_side.*

Both models are one: the same per-type input projection, dropout and ReLU, two relational layers (PyG's
`RGCNConv(aggr="mean")`, one weight per relation, a root weight and a bias: R-GCN's sum over relations of the mean
over each relation's neighbours, which regnn's RelGraphConv computes too). Each seed's PyG model starts from the
regnn model's weights (copied), is checked to compute the same class scores before training, and both are trained
by regnn's trainer with the cell's settings (optimizer, dropout, early stopping on validation loss, the test score
at the best validation epoch), on the same splits. What differs is the layer's code only: the scores should be
equal within the runs' spread, and the table says whether they are (a paired t-test over the seeds), and how long
an epoch takes in each.
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
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[2]


class PygRGCN(torch.nn.Module):
    """regnn's R-GCN (regnn.models.baselines.rgcn.RGCN) with PyG's RGCNConv layers, from a built RGCN's weights."""

    def __init__(self, ours):
        from torch_geometric.nn import RGCNConv

        super().__init__()
        self.proj, self.dropout = copy.deepcopy(ours.proj), copy.deepcopy(ours.dropout)
        self.convs = torch.nn.ModuleList()
        for conv in ours.convs:
            w = conv.linear_r.weight().detach()  # (relations, in, out)
            pyg = RGCNConv(w.shape[1], w.shape[2], w.shape[0], aggr="mean", root_weight=True, bias=True)
            with torch.no_grad():
                pyg.weight.copy_(w)
                pyg.root.copy_(conv.loop_weight)
                pyg.bias.copy_(conv.h_bias)
            self.convs.append(pyg)

    def forward(self, inputs, feats, embed: bool = False):
        h = self.proj(feats, inputs.ntypes)
        edge_index, edge_type = torch.stack([inputs.src, inputs.dst]), inputs.etype
        last = len(self.convs) - 1
        for i, conv in enumerate(self.convs):
            h = conv(self.dropout(h), edge_index, edge_type)
            if i < last:
                h = F.relu(h)
        out = h[inputs.target_nodes]
        return out, (out if embed else None)


def same_scores(ours, theirs, g) -> float:
    """The largest difference between the two models' class scores before training (evaluation mode, float64),
    relative to the largest score."""
    a, b = copy.deepcopy(ours).double().eval(), copy.deepcopy(theirs).double().eval()
    feats = {t: x.double() for t, x in g.feats.items()}
    with torch.no_grad():
        x, y = a(g.inputs, feats)[0], b(g.inputs, feats)[0]
    return float((x - y).abs().max() / x.abs().max())


def side_by_side(dataset: str, runs: int) -> list[dict]:
    from omegaconf import OmegaConf, open_dict

    from regnn.pipeline.api import compose
    from regnn.pipeline.fullbatch import DeviceGraph
    from regnn.spec import training_of
    from regnn.training.seed import seed_everything

    cfg = compose([f"dataset={dataset}", "model=rgcn"])
    with open_dict(cfg):
        del cfg["hydra"]
    OmegaConf.resolve(cfg)
    g = DeviceGraph(cfg, torch.device("cpu"))
    options, rows = training_of(cfg), []
    for seed in range(runs):
        ours = g.build(seed)
        theirs = PygRGCN(ours)
        gap = same_scores(ours, theirs, g)
        if gap > 1e-6:  # float32 rounding inside the sparse products; another function would differ by O(1)
            raise SystemExit(f"{dataset} seed {seed}: the two models differ before training ({gap:.3g})")
        for name, model in (("regnn", ours), ("pyg", theirs)):
            seed_everything(seed, cfg.deterministic)  # the same dropout masks for both
            t = time.perf_counter()
            r = g.trainer()(model, g.inputs, g.feats, g.labels, g.splits, seed=seed, options=options)
            epochs = [h["epoch_time_s"] for h in r.history]
            rows.append(
                {"dataset": dataset, "seed": seed, "impl": name, "start_gap": gap}
                | {k: r.metrics[k] for k in ("val_micro_f1", "test_micro_f1", "test_macro_f1")}
                | {"best_epoch": r.best_epoch, "epochs": r.epochs, "s_per_epoch": float(np.median(epochs))}
                | {"wall_s": time.perf_counter() - t}
            )
            print(f"{dataset} seed {seed} {name}: test Micro-F1 {r.metrics['test_micro_f1']:.2f}", file=sys.stderr)
    return rows


def markdown(df, runs: int) -> str:
    from regnn.evaluation.paired import beyond_noise, paired_gain

    lines = [
        "# R-GCN: regnn's layers beside PyG's RGCNConv (same model, same start, same trainer)",
        "",
        "| dataset | regnn test Micro-F1 | PyG test Micro-F1 | paired difference (regnn - PyG) | told apart? | "
        "s/epoch regnn / PyG |",
        "|---|---|---|---|---|---|",
    ]
    for ds, d in df.groupby("dataset", sort=False):
        a, b = d[d.impl == "regnn"].set_index("seed"), d[d.impl == "pyg"].set_index("seed")
        gain = paired_gain(a.test_micro_f1.to_dict(), b.test_micro_f1.to_dict())
        mean, se, n = gain
        apart = beyond_noise(gain) or beyond_noise((-mean, se, n))
        lines.append(
            f"| {ds.upper()} | {a.test_micro_f1.mean():.2f} ± {a.test_micro_f1.std(ddof=0):.2f} | "
            f"{b.test_micro_f1.mean():.2f} ± {b.test_micro_f1.std(ddof=0):.2f} | {mean:+.2f} (se {se:.2f}, "
            f"{n} seeds) | {'yes' if apart else 'no'} | {a.s_per_epoch.median():.3f} / "
            f"{b.s_per_epoch.median():.3f} |"
        )
    lines += [
        "",
        f"- {runs} seeds per dataset; each seed's PyG model starts from the regnn model's weights and computes the "
        "same class scores before training (largest difference, relative to the largest score: "
        f"{df.start_gap.max():.1e}); both are trained by regnn's trainer with Table 2's R-GCN settings "
        "(conf/model/rgcn.yaml, conf/tuned/<dataset>_rgcn.yaml), the same dropout masks per seed; test Micro-F1 at "
        "the best validation-loss epoch. 'Told apart': a one-sided paired t-test at 0.05 either way "
        "(regnn.evaluation.paired), on test, for this check only.",
        f"- torch {torch.__version__}, PyG {__import__('torch_geometric').__version__}, "
        f"{platform.machine()}, {torch.get_num_threads()} threads. Made by `make pyg-side-by-side` "
        "(scripts/bench/pyg_side_by_side.py).",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["dblp", "acm", "imdb"])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", default=str(REPO / "results" / "pyg_side_by_side"))
    a = ap.parse_args(argv)
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        print("error: PyG is not installed: pip install torch-geometric (the pyg extra)", file=sys.stderr)
        return 2
    rows = [r for ds in a.datasets for r in side_by_side(ds, a.runs)]
    df = pd.DataFrame(rows)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".csv").write_text(df.to_csv(index=False, float_format="%.4f"))
    text = markdown(df, a.runs)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
