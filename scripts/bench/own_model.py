"""A model of one's own built from regnn.nn's layers, timed beside the package's RE-GCN on DBLP in one process.

    python scripts/bench/own_model.py                     # -> results/own_model.{json,md}
    python scripts/bench/own_model.py --epochs 10 --out /tmp/own

The own model is the package's RE-GCN written with the public layers, as a user would write it: a linear map per
node type (sparse features multiplied sparse), four REGCNConv layers of the authors' layout (the first and last
propagation only, the two between with W and ELU), dropout before each (the package's rates), a linear output.
Four forms of it: called PyG's way (each layer keeps the graph it built: regnn.nn.graph), on a graph prepared
once (typed_adjacency), on that graph computed by torch alone (no fused kernels), and with the package's input
projection and dropout (regnn.nn.TypeProjection, regnn.nn.HashDropout) instead of torch's. What
the package's model does beyond those: the evaluation pass computes the validation rows only, and the last
propagation carries the class scores instead of the hidden features (docs/performance.md). An epoch is one training
step and the evaluation pass on the validation nodes, as the trainer times it. Every form and the package's model
train one epoch in turn (who goes first rotates), after warm-up epochs; each figure is the median epoch.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[2]


class OwnREGCN(torch.nn.Module):
    """RE-GCN from regnn.nn's layers (the authors' layout), as a user writes it."""

    def __init__(
        self, in_dims: dict, num_classes: int, num_relations: int, num_node_types: int, rates: list, parts=False
    ):
        from regnn.nn import HashDropout, REGCNConv, TypeProjection

        super().__init__()
        self.inp = torch.nn.ModuleDict({t: torch.nn.Linear(d, 64) for t, d in in_dims.items()})
        for m in self.inp.values():
            torch.nn.init.xavier_normal_(m.weight, gain=1.414)
        # parts: the package's input projection (CSR products) and dropout (a hashed mask) instead of torch's
        self.proj = TypeProjection(in_dims, 64) if parts else None
        self.drops = [HashDropout(p) for p in rates] if parts else None
        R, T = num_relations, num_node_types
        self.convs = torch.nn.ModuleList(
            [REGCNConv(64, 64, R, T, weight=False)]
            + [REGCNConv(64, 64, R, T, activation="elu") for _ in range(2)]
            + [REGCNConv(64, 64, R, T, weight=False)]
        )
        self.out = torch.nn.Linear(64, num_classes)
        self.rates = rates

    def forward(self, xs: dict, graph: tuple):
        if self.proj is not None:
            h = self.proj(xs, list(xs))
        else:
            h = torch.cat(
                [
                    torch.sparse.mm(x, self.inp[t].weight.t()) + self.inp[t].bias if x.is_sparse else self.inp[t](x)
                    for t, x in xs.items()
                ]
            )
        for i, (conv, p) in enumerate(zip(self.convs, self.rates)):
            drop = self.drops[i].train(self.training) if self.drops else (lambda x: F.dropout(x, p, self.training))
            h = conv(drop(h), *graph)
        return self.out(h)


def own_epochs(model, xs, graph, target, labels, splits):
    """One training step and the validation pass per step of the generator: its seconds."""
    opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=1e-3)
    train, val = splits["train"], splits["val"]
    while True:
        t = time.perf_counter()
        model.train()
        opt.zero_grad()
        F.cross_entropy(model(xs, graph)[target][train], labels[train]).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            model(xs, graph)[target][val].argmax(1)
        yield time.perf_counter() - t


def measure(epochs: int, warmup: int) -> dict:
    from benchmark import _build

    from regnn.core.backend import TORCH
    from regnn.nn import typed_adjacency
    from regnn.spec import training_of
    from regnn.training.trainer import epochs as package_epochs

    cfg, job, net = _build("dblp", "re_gcn")
    rg = job.inputs.rg
    keep = rg.rel < rg.num_edge_relations  # the typed self-loops: the layers add their own
    edge_index, edge_type = torch.stack([rg.src[keep], rg.dst[keep]]), rg.rel[keep]
    R, T = rg.num_edge_relations, len(rg.ntypes)
    xs = {t: job.feats[t] for t in rg.ntypes}
    p = float(cfg.model.dropout)
    rates = [p] + [1 - (1 - p) ** 2] * 3  # the package's double dropout before layers 2..4
    target = job.inputs.target_nodes
    package = package_epochs(net, job.inputs, job.feats, job.labels, job.splits, training_of(cfg))
    prepared = typed_adjacency(edge_index, edge_type, rg.node_type, R)
    graphs = {
        "own model, PyG call (kept graph)": ((edge_index, edge_type, rg.node_type), False),
        "own model, prepared graph": ((prepared,), False),
        "own model, prepared graph, torch alone": (
            (typed_adjacency(edge_index, edge_type, rg.node_type, R, TORCH),),
            False,
        ),
        "own model, prepared graph, regnn.nn's TypeProjection and HashDropout": ((prepared,), True),
    }
    steps = {"package RE-GCN (regnn.models)": (row["epoch_time_s"] for row in package)}
    for name, (graph, parts) in graphs.items():
        torch.manual_seed(0)
        model = OwnREGCN({t: x.shape[1] for t, x in xs.items()}, int(job.labels.max()) + 1, R, T, rates, parts)
        steps[name] = own_epochs(model, xs, graph, target, job.labels, job.splits)
    names = list(steps)
    times = {n: [] for n in names}
    for i in range(warmup + epochs):
        order = names[i % len(names) :] + names[: i % len(names)]
        for n in order:
            t = next(steps[n])
            if i >= warmup:
                times[n].append(t)
    base = float(np.median(times[names[0]]))
    return {
        "rows": [
            {
                "model": n,
                "median_epoch_s": float(np.median(times[n])),
                "ratio_to_package": float(np.median(times[n])) / base,
            }
            for n in names
        ],
        "epochs_timed": epochs,
        "warmup": warmup,
        "threads": torch.get_num_threads(),
        "machine": f"{platform.machine()}, torch {torch.__version__}, Python {platform.python_version()}",
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "results" / "own_model"), help="path stem of the .json and .md")
    a = ap.parse_args(argv)
    r = measure(a.epochs, a.warmup)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(r, indent=1) + "\n")
    lines = [
        "# A model of one's own from regnn.nn beside the package's RE-GCN (DBLP, CPU)",
        "",
        f"`python scripts/bench/own_model.py` ({r['machine']}, {r['threads']} threads): {r['epochs_timed']} epochs "
        f"of each in turn after {r['warmup']} warm-up; an epoch is one training step and the validation pass.",
        "",
        "| model | median s / epoch | ratio to the package's |",
        "|---|---|---|",
        *(f"| {x['model']} | {x['median_epoch_s']:.4f} | {x['ratio_to_package']:.2f} |" for x in r["rows"]),
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
