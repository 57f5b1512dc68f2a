"""Write one of this repository's MAGNN-format datasets (DBLP, ACM, IMDB) in the HGB benchmark's text layout
(THUDM/HGB, NC/benchmark/methods/<method>/data_loader.py: node.dat, link.dat, label.dat, label.dat.test), so that
HGB's baseline code runs unchanged on the same graph and test nodes as regnn:

    git clone https://github.com/THUDM/HGB /tmp/HGB
    .venv/bin/python scripts/convert/hgb_data.py --data-dir data/IMDB --out /tmp/HGB/NC/benchmark/methods/IMDB_RE
    cd /tmp/HGB/NC/benchmark/methods/HGT && python train_hgt.py --dataset IMDB_RE --device -1 ...

- node.dat: every node with its type and, where the type has features, its feature row (HGB's --feats-type 0);
- link.dat: every edge of adjM in both directions, one relation id per ordered pair of node types;
- label.dat: the training and validation nodes (HGB's loader draws its own validation fifth from them, unseeded),
  or with --pool train the training nodes alone (then HGB trains on four fifths of regnn's training nodes);
  label.dat.test: the test nodes. One class per node: HGB treats a folder named IMDB as multi-label, so give the
  folder another name.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import scipy.sparse as sp


def features(data_dir: Path, t: int):
    for name in (f"features_{t}.npz", f"features_{t}.npy"):
        p = data_dir / name
        if p.exists():
            x = sp.load_npz(p) if p.suffix == ".npz" else np.load(p)
            return np.asarray(x.todense()) if sp.issparse(x) else x
    return None  # a type without features (DBLP's venues): HGB uses identity rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument(
        "--pool",
        choices=["train+val", "train"],
        default="train+val",
        help="the labelled nodes HGB splits into its training and validation nodes",
    )
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    types = np.load(a.data_dir / "node_types.npy")
    if np.any(np.diff(types) < 0):
        raise SystemExit("node_types.npy must list the node types in blocks (0..., 1..., ...), as HGB's ids do")
    with open(a.out / "node.dat", "w") as f:
        for t in range(int(types.max()) + 1):
            ids = np.flatnonzero(types == t)
            x = features(a.data_dir, t)
            for i, node in enumerate(ids):
                row = "" if x is None else "\t" + ",".join(f"{v:g}" for v in x[i])
                f.write(f"{node}\t{node}\t{t}{row}\n")
    adj = sp.load_npz(a.data_dir / "adjM.npz").tocsr()
    adj = ((adj + adj.T) > 0).tocoo()
    keep = adj.row != adj.col
    u, v = adj.row[keep], adj.col[keep]
    pairs = sorted({(int(p), int(q)) for p, q in zip(types[u], types[v])})
    rel = {p: i for i, p in enumerate(pairs)}
    order = np.lexsort((v, u))
    with open(a.out / "link.dat", "w") as f:
        for k in order:
            f.write(f"{u[k]}\t{v[k]}\t{rel[(int(types[u[k]]), int(types[v[k]]))]}\t1.0\n")
    labels = np.load(a.data_dir / "labels.npy")
    split = np.load(a.data_dir / "train_val_test_idx.npz")
    target = int(types[0])
    pool = [split["train_idx"]] + ([split["val_idx"]] if a.pool == "train+val" else [])
    for name, idx in (("label.dat", np.concatenate(pool)), ("label.dat.test", split["test_idx"])):
        with open(a.out / name, "w") as f:
            for node in np.sort(idx):
                f.write(f"{node}\t{node}\t{target}\t{labels[node]}\n")
    print(f"{a.out}: {len(types)} nodes, {len(pairs)} relations, {int(keep.sum())} links")


if __name__ == "__main__":
    main()
