"""Write this repository's DBLP, ACM or IMDB files in the layout the RE-GNN authors' run_regnn.py reads
(bywmm/RE-GNN at 2e297ef, utils/data.py), so that their code runs unchanged on the same data as regnn:

    git -C /work/.mirror/bywmm+RE-GNN/repo worktree add /tmp/RE-GNN 2e297ef   # or a clone at 2e297ef
    .venv/bin/python scripts/convert/authors_data.py --dataset DBLP --data-dir data/DBLP --repo /tmp/RE-GNN
    cd /tmp/RE-GNN && python run_regnn.py --dataset DBLP --model remixhop ...   # in an environment with DGL

The MAGNN files (features, node types, labels, split) are copied as they are; adjM is written with every edge in both
directions, as the authors' preprocessing wrote it (ACM's file holds each citation once; regnn reads both
directions too). What the authors' loader reads besides, and no released file gives, is derived from adjM and the
node types:
- adjMM (ACM: adjMM_rgcn): the relation id of every edge, 1..K, one id per ordered pair of node types that has
  edges (sorted by the pair); run_regnn.py takes K = adjMM.max() as the number of edge types. ACM's citations
  are therefore one relation, as in the authors' preprocessing (regnn gives cites and cited-by one each);
- adjMM_wsl_2: the same with a self-loop on every node whose id is K + 1 + its node type (run_regnn.py looks up
  every edge of its self-looped graph here, and indexes the relation weights by id - 1); adjMM_wsl: self-loops
  with one shared id K + 1 (loaded, not used by run_regnn.py);
- the meta-path adjacencies the loader returns first (adj_010, ...), which run_regnn.py discards.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import scipy.sparse as sp

METAPATHS = {"DBLP": ["010", "01210", "01310"], "ACM": ["010", "020"], "IMDB": ["010", "020"]}
MAGNN_FILES = [
    "node_types.npy",
    "labels.npy",
    "train_val_test_idx.npz",
    "features_0.npz",
    "features_1.npz",
    "features_2.npz",
    "features_2.npy",
]


def relation_ids(adj: sp.csr_matrix, types: np.ndarray) -> tuple[sp.csr_matrix, int]:
    """adjM's edges valued by their relation id 1..K (one per ordered pair of node types), and K."""
    coo = adj.tocoo()
    keep = coo.row != coo.col
    u, v = coo.row[keep], coo.col[keep]
    pairs = sorted({(int(a), int(b)) for a, b in zip(types[u], types[v])})
    code = {p: i + 1 for i, p in enumerate(pairs)}
    ids = np.array([code[(int(a), int(b))] for a, b in zip(types[u], types[v])], dtype=np.int64)
    return sp.csr_matrix((ids, (u, v)), shape=adj.shape), len(pairs)


def with_self_loops(adjmm: sp.csr_matrix, ids: np.ndarray) -> sp.csr_matrix:
    n = adjmm.shape[0]
    return (adjmm + sp.csr_matrix((ids, (np.arange(n), np.arange(n))), shape=adjmm.shape)).tocsr()


def metapath_adjacency(adj: sp.csr_matrix, types: np.ndarray, path: str) -> sp.csr_matrix:
    out = None
    for a, b in zip(path, path[1:]):
        block = adj[types == int(a)][:, types == int(b)]
        out = block if out is None else out @ block
    return sp.csr_matrix(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", required=True, choices=sorted(METAPATHS))
    ap.add_argument("--data-dir", required=True, type=Path, help="this repository's files, e.g. data/DBLP")
    ap.add_argument("--repo", required=True, type=Path, help="a checkout of the authors' code at 2e297ef")
    a = ap.parse_args()
    out = a.repo / "data" / "preprocessed" / f"{a.dataset}_processed"
    out.mkdir(parents=True, exist_ok=True)
    for name in MAGNN_FILES:
        if (a.data_dir / name).exists():
            shutil.copyfile(a.data_dir / name, out / name)
    adj = sp.load_npz(a.data_dir / "adjM.npz").tocsr()
    adj = ((adj + adj.T) > 0).astype(np.float32).tocsr()
    sp.save_npz(out / "adjM.npz", adj)
    types = np.load(a.data_dir / "node_types.npy")
    adjmm, k = relation_ids(adj, types)
    sp.save_npz(out / ("adjMM_rgcn.npz" if a.dataset == "ACM" else "adjMM.npz"), adjmm)
    sp.save_npz(out / "adjMM_wsl.npz", with_self_loops(adjmm, np.full(len(types), k + 1)))
    sp.save_npz(out / "adjMM_wsl_2.npz", with_self_loops(adjmm, k + 1 + types.astype(np.int64)))
    for path in METAPATHS[a.dataset]:
        sp.save_npz(out / f"adj_{path}.npz", metapath_adjacency(adj, types, path))
    print(f"{out}: {k} edge relations, {types.max() + 1} node types, {adj.nnz} edges")


if __name__ == "__main__":
    main()
