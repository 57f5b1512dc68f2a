"""Train the GTN authors' own model (seongjunyun/Graph_Transformer_Networks at 0df0c69, `model_gtn.GTN` imported
unchanged from a checkout) on one of this repository's datasets, with this repository's features and split.

    git clone https://github.com/seongjunyun/Graph_Transformer_Networks /tmp/GTN && git -C /tmp/GTN checkout 0df0c69
    pip install --target /tmp/pyg torch_geometric --no-deps      # GTN's GCNConv is a torch_geometric MessagePassing
    PYTHONPATH=/tmp/pyg .venv/bin/python scripts/reference/reference_gtn.py --repo /tmp/GTN --dataset imdb \
        --data-dir data/IMDB --seeds 0 1 2 3 4 5 6 7 8 9 --out results/reference_gtn_imdb.json

The training rule is the checkout's `main.py` with its README's IMDB command (GTN, 2 layers, 2 channels, 64 hidden,
50 epochs, Adam lr 0.02, weight decay 1e-3): full batch, the test scores of the epoch with the best validation
Micro-F1. Differences from running `main.py` itself, none of which changes a number it computes:
- the graph is ours, in GTN's layout: one node index over all types (in the graph's type order), one adjacency
  per relation (row = source, as GTN's preprocessing stores them) plus the identity, and one feature matrix
  whose rows are zero where a type has no features (ours are zero vectors there too);
- `main.py` builds CUDA tensors; this driver keeps them on the CPU;
- GTN has no dropout, so the scores after a step are taken from one evaluation forward for validation and test
  together where `main.py` makes one forward each;
- each run is seeded with its seed (`main.py` seeds once, with 777, before all runs);
- `torch_scatter.scatter_add` and `torch_sparse.coalesce`, the two functions the model imports from those
  compiled packages (they have no wheels for a current torch), are given by `torch` equivalents below, which
  compute the same sums in the same (row-major) order.
"""

import argparse
import json
import sys
import time
import types

import numpy as np
import torch
from reference_runs import check, parser, summarise  # scripts/ is on the path as the script's folder


def scatter_add(src, index, dim=0, out=None, dim_size=None):
    """torch_scatter.scatter_add along dim 0 (the only use in GTN's code)."""
    if dim != 0:
        raise ValueError("only dim=0 is provided")
    size = int(index.max()) + 1 if dim_size is None else dim_size
    res = torch.zeros((size,) + tuple(src.shape[1:]), dtype=src.dtype, device=src.device)
    res = res.index_add(0, index, src)
    return res if out is None else out.add_(res)


def coalesce(index, value, m, n, op="add"):
    """torch_sparse.coalesce: duplicates summed, entries sorted by (row, col); differentiable in value."""
    if op != "add":
        raise ValueError("only op='add' is provided")
    t = torch.sparse_coo_tensor(index, value, (m, n)).coalesce()
    return t.indices(), t.values()


def install_compat():
    """Make `import torch_scatter` / `import torch_sparse` give the two functions above.

    torch_geometric is imported first, so that it records the compiled packages as absent and never reaches
    for the rest of their API through these stand-ins.
    """
    import torch_geometric  # noqa: F401

    for name, attrs in (("torch_scatter", {"scatter_add": scatter_add}), ("torch_sparse", {"coalesce": coalesce})):
        try:
            __import__(name)
        except ImportError:
            mod = types.ModuleType(name)
            mod.__dict__.update(attrs)
            sys.modules[name] = mod


def gtn_inputs(ds):
    """Our dataset in GTN's layout: [(edge_index, value) per relation] + identity, X, and the target's offset."""
    g = ds.graph
    offset, start = {}, 0
    for t in g.ntypes:
        offset[t] = start
        start += g.num_nodes(t)
    n = start
    width = max(ds.features[t].shape[1] for t in g.ntypes)
    x = torch.zeros(n, width)
    for t in g.ntypes:
        f = ds.features[t]
        f = (f.to_dense() if f.is_sparse else f).float()
        if f.abs().sum() > 0 and f.shape[1] != width:
            raise ValueError(
                f"type {t!r} has {f.shape[1]}-d features next to {width}-d ones; GTN takes one feature matrix"
            )
        x[offset[t] : offset[t] + f.shape[0], : f.shape[1]] = f
    adjs = []
    for s, e, d in g.canonical_etypes:
        u, v = g.edges((s, e, d))
        # GTN's main.py reads an adjacency M (row = source) as edge_index = (M.col, M.row)
        idx = torch.stack([v.long() + offset[d], u.long() + offset[s]])
        adjs.append((idx, torch.ones(idx.shape[1])))
    eye = torch.arange(n)
    adjs.append((torch.stack([eye, eye]), torch.ones(n)))
    return adjs, x, offset[ds.target], n


def main():
    p = parser("seongjunyun/Graph_Transformer_Networks")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--channels", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--wd", type=float, default=0.001)
    a = p.parse_args()
    check(a, "seongjunyun/Graph_Transformer_Networks", "model_gtn.py")
    try:
        install_compat()
    except ImportError:
        sys.exit(
            "GTN's layers need torch_geometric: pip install --target /tmp/pyg torch_geometric --no-deps, "
            "then run with PYTHONPATH=/tmp/pyg"
        )
    torch.set_num_threads(a.threads)
    sys.path.insert(0, a.repo)
    from model_gtn import GTN

    from regnn.data import load_dataset
    from regnn.evaluation.metrics import f1_scores

    ds = load_dataset(a.dataset, dir=a.data_dir)
    adjs, x, off, n = gtn_inputs(ds)
    split = {k: v.long() for k, v in ds.splits.items()}
    labels = ds.labels.long()
    nodes = {k: v + off for k, v in split.items()}
    evaluated = torch.cat([nodes["val"], nodes["test"]])
    n_val = len(nodes["val"])
    # the attributes of main.py's argparse namespace that GTN's classes read
    gtn_args = argparse.Namespace(dataset=a.dataset.upper(), remove_self_loops=False, num_nodes=n)

    def scores(logits, y):  # sklearn's micro and macro F1 (main.py's), as regnn computes them
        f = f1_scores(logits, y)
        return f["micro_f1"], f["macro_f1"]

    rows = []
    for seed in a.seeds:
        np.random.seed(seed)
        torch.manual_seed(seed)
        model = GTN(
            num_edge=len(adjs),
            num_channels=a.channels,
            w_in=x.shape[1],
            w_out=a.hidden,
            num_class=ds.num_classes,
            num_layers=a.layers,
            num_nodes=n,
            args=gtn_args,
        )
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.wd)
        best, t0 = None, time.time()
        for epoch in range(a.epochs):
            model.zero_grad()
            model.train()
            loss, _, _ = model(adjs, x, nodes["train"], labels[split["train"]])
            loss.backward()
            opt.step()
            model.eval()
            with torch.no_grad():
                logits = model(adjs, x, evaluated, None, eval=True)
            vmi, vma = scores(logits[:n_val], labels[split["val"]])
            if best is None or vmi > best["val_micro"]:  # main.py: strictly better validation Micro-F1
                tmi, tma = scores(logits[n_val:], labels[split["test"]])
                best = {
                    "val_micro": vmi,
                    "val_macro": vma,
                    "test_micro": tmi,
                    "test_macro": tma,
                    "best_epoch": epoch + 1,
                }
        row = {"seed": seed, **best, "epochs": a.epochs, "seconds": round(time.time() - t0, 1)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    summarise(a, rows)


if __name__ == "__main__":
    main()
