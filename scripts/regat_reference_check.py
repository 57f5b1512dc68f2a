"""RE-GAT on DBLP written independently of regnn: is our RE-GAT's gap to the paper in our implementation?

    python scripts/regat_reference_check.py                       # seeds 0-3, the released layout ("mul")
    python scripts/regat_reference_check.py --seeds 0 1 --mode add --out results/regat_reference_add.json
    python scripts/regat_reference_check.py --mode none --out results/regat_reference_check_gat.json   # plain GAT

The model here is the layout of the authors' released REGAT for DBLP (their run_regnn.py with the
scripts/dblp_regat_res.sh settings: 4 attention layers, 8 heads of 64, one-head output layer averaged, per-type
input projections, dropout 0.6 on every layer's input and on the attention, LeakyReLU slope 0.01, one relation
weight per relation type and head with LeakyReLU(100 e), e initialised to 1/100), built from DGL's built-in
message functions (u_add_v, edge_softmax, u_mul_e + sum) instead of regnn's model code and fused kernels, and
the graph is built from the MAGNN files directly (relation = (source type, destination type); one self-loop per
node typed by its node type). Training follows their loop: Adam lr 1e-3, weight decay 1e-3, at most 200 epochs,
early stopping on the validation loss with patience 50, test scores of the epoch with the lowest validation
loss. Every seed runs in its own process (one thread each, --workers at a time). Writes the per-seed scores and
their mean and std as JSON (an existing output is never overwritten: pass a new --out).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


FILES = ["features_0.npz", "features_1.npz", "features_2.npy", "adjM.npz", "node_types.npy", "labels.npy",
         "train_val_test_idx.npz"]


def check_files(data_dir: Path) -> None:
    """Exits naming the fix when a DBLP file is missing (before any worker starts, without loading them)."""
    missing = [f for f in FILES if not (data_dir / f).is_file()]
    if missing:
        raise SystemExit(f"error: {data_dir} lacks {', '.join(missing)}; run `make data` (or pass --data-dir)")


def load_dblp(data_dir: Path):
    """(features per node type, graph with typed self-loops, relation id per edge, labels, splits) from the
    MAGNN-style DBLP files that `make data` fetches (feats_type 0: every type's own features, venues one-hot)."""
    import dgl
    import scipy.sparse as sp
    import torch

    check_files(data_dir)
    feats = [sp.load_npz(data_dir / "features_0.npz").toarray(), sp.load_npz(data_dir / "features_1.npz").toarray(),
             np.load(data_dir / "features_2.npy"), np.eye(20, dtype=np.float32)]
    feats = [torch.tensor(f, dtype=torch.float32) for f in feats]
    ntype = np.load(data_dir / "node_types.npy")
    adj = sp.load_npz(data_dir / "adjM.npz").tocoo()
    keep = adj.row != adj.col
    src, dst = adj.row[keep], adj.col[keep]
    pairs = sorted(set(zip(ntype[src].tolist(), ntype[dst].tolist())))
    pair_id = {p: i for i, p in enumerate(pairs)}
    rel = np.array([pair_id[p] for p in zip(ntype[src].tolist(), ntype[dst].tolist())])
    n = ntype.shape[0]
    src, dst = np.concatenate([src, np.arange(n)]), np.concatenate([dst, np.arange(n)])
    rel = np.concatenate([rel, len(pairs) + ntype])  # self-loops: one relation per node type
    g = dgl.graph((torch.tensor(src), torch.tensor(dst)), num_nodes=n)
    idx = np.load(data_dir / "train_val_test_idx.npz")
    splits = {k: torch.tensor(np.sort(idx[f"{k}_idx"])) for k in ("train", "val", "test")}
    labels = torch.tensor(np.load(data_dir / "labels.npy"), dtype=torch.long)
    return feats, g, torch.tensor(rel), len(pairs) + int(ntype.max()) + 1, labels, splits


def run_seed(seed: int, mode: str, data_dir: str, max_epochs: int = 200) -> dict:
    """Trains one model (in a worker process, one thread) and returns its scores at the best validation epoch."""
    import dgl.function as fn
    import torch
    import torch.nn.functional as F
    from dgl.nn.functional import edge_softmax
    from sklearn.metrics import f1_score
    from torch import nn

    torch.set_num_threads(1)
    feats, g, rel, num_rel, labels, splits = load_dblp(Path(data_dir))
    scale, slope, p = 100.0, 0.01, 0.6

    class Layer(nn.Module):
        def __init__(self, d_in, d_out, heads, act):
            super().__init__()
            self.heads, self.d_out, self.act = heads, d_out, act
            self.fc = nn.Linear(d_in, heads * d_out, bias=False)
            self.attn_src = nn.Parameter(torch.empty(1, heads, d_out))
            self.attn_dst = nn.Parameter(torch.empty(1, heads, d_out))
            self.e = nn.Parameter(torch.full((num_rel, heads), 1.0 / scale)) if mode != "none" else None
            self.drop, self.attn_drop = nn.Dropout(p), nn.Dropout(p)
            for w in (self.fc.weight, self.attn_src, self.attn_dst):
                nn.init.xavier_normal_(w, gain=nn.init.calculate_gain("relu"))

        def forward(self, x):
            z = self.fc(self.drop(x)).view(-1, self.heads, self.d_out)
            with g.local_scope():
                g.ndata["z"] = z
                g.ndata["s"] = (z * self.attn_src).sum(-1, keepdim=True)
                g.ndata["d"] = (z * self.attn_dst).sum(-1, keepdim=True)
                g.apply_edges(fn.u_add_v("s", "d", "logit"))
                logit = g.edata["logit"]
                if self.e is not None:
                    w = F.leaky_relu(scale * self.e)[rel].unsqueeze(-1)  # (E, heads, 1)
                    logit = logit * w if mode == "mul" else logit + w
                g.edata["a"] = self.attn_drop(edge_softmax(g, F.leaky_relu(logit, slope)))
                g.update_all(fn.u_mul_e("z", "a", "m"), fn.sum("m", "out"))
                out = g.ndata["out"]
            return self.act(out) if self.act is not None else out

    class Net(nn.Module):
        def __init__(self, hidden=64, heads=8, num_classes=int(labels.max()) + 1):
            super().__init__()
            self.proj = nn.ModuleList(nn.Linear(f.shape[1], hidden) for f in feats)
            for lin in self.proj:
                nn.init.xavier_normal_(lin.weight, gain=1.414)
            self.layers = nn.ModuleList([Layer(hidden, hidden, heads, F.elu),
                                         Layer(hidden * heads, hidden, heads, F.elu),
                                         Layer(hidden * heads, hidden, heads, F.elu),
                                         Layer(hidden * heads, num_classes, 1, None)])

        def forward(self):
            h = torch.cat([lin(f) for lin, f in zip(self.proj, feats)])
            for layer in self.layers[:-1]:
                h = layer(h).flatten(1)
            return self.layers[-1](h).mean(1)

    torch.manual_seed(seed)
    np.random.seed(seed)
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-3)
    tr, va, te = splits["train"], splits["val"], splits["test"]
    best, wait, t0 = None, 0, time.perf_counter()
    for epoch in range(max_epochs):
        net.train()
        loss = F.cross_entropy(net()[tr], labels[tr])
        opt.zero_grad()
        loss.backward()
        opt.step()
        net.eval()
        with torch.no_grad():
            logits = net()
            val_loss = F.cross_entropy(logits[va], labels[va]).item()
        if best is None or val_loss <= best["val_loss"]:  # ties count as improvements, as in the authors' loop
            pred = logits.argmax(1)
            best = {"best_epoch": epoch, "val_loss": val_loss,
                    "val_micro_f1": 100 * f1_score(labels[va], pred[va], average="micro"),
                    "test_micro_f1": 100 * f1_score(labels[te], pred[te], average="micro"),
                    "test_macro_f1": 100 * f1_score(labels[te], pred[te], average="macro")}
            wait = 0
        else:
            wait += 1
            if wait >= 50:
                break
    print(f"seed {seed}: test Micro-F1 {best['test_micro_f1']:.2f} Macro-F1 {best['test_macro_f1']:.2f} "
          f"(best epoch {best['best_epoch']} of {epoch + 1}, {time.perf_counter() - t0:.0f} s)", flush=True)
    return {"seed": seed, **best, "epochs": epoch + 1, "train_time_s": time.perf_counter() - t0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--mode", choices=["mul", "add", "none"], default="mul",
                    help="relation weight times the attention logit (the released code), added to it, or none "
                         "(plain GAT on the same graph)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="seeds trained side by side")
    ap.add_argument("--max-epochs", type=int, default=200)
    ap.add_argument("--data-dir", type=Path,
                    default=Path(os.environ.get("REGNN_DATA_DIR", REPO / "data")) / "DBLP")
    ap.add_argument("--out", type=Path, default=REPO / "results" / "regat_reference_check.json")
    args = ap.parse_args(argv)
    if args.out.exists():
        print(f"error: {args.out} exists; pass another --out (earlier results are never overwritten)",
              file=sys.stderr)
        return 2
    check_files(args.data_dir)
    model = "GAT" if args.mode == "none" else "RE-GAT"
    print(f"{model} (independent DGL implementation, mode {args.mode}) on DBLP, seeds {args.seeds}, "
          f"{args.workers} workers of 1 thread", flush=True)
    # spawned, not forked: this process has loaded torch (OpenMP) already
    with ProcessPoolExecutor(max_workers=max(1, min(args.workers, len(args.seeds))),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        runs = list(pool.map(run_seed, args.seeds, [args.mode] * len(args.seeds),
                             [str(args.data_dir)] * len(args.seeds), [args.max_epochs] * len(args.seeds)))
    summary = {k: {"mean": float(np.mean([r[k] for r in runs])), "std": float(np.std([r[k] for r in runs]))}
               for k in ("test_micro_f1", "test_macro_f1", "val_micro_f1", "val_loss")}
    import dgl
    import torch
    out = {"command": shlex.join(["python", "scripts/regat_reference_check.py",
                                  *(sys.argv[1:] if argv is None else argv)]),
           "model": f"{model}, authors' released DBLP layout, plain DGL",
           "mode": args.mode, "dataset": "dblp",
           "max_epochs": args.max_epochs,
           "seeds": args.seeds, "metrics": summary, "per_seed": runs,
           "environment": {"torch": torch.__version__, "dgl": dgl.__version__, "python": platform.python_version(),
                           "threads_per_seed": 1}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    m = summary["test_micro_f1"]
    print(f"test Micro-F1 {m['mean']:.2f} ± {m['std']:.2f} over {len(runs)} seeds -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
