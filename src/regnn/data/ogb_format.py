"""A generated graph with OGBN-MAG's schema, written in OGB's on-disk layout for heterogeneous node-property data.

There is no network in CI, so the real ogbn-mag cannot be downloaded there. This writes a graph of the same
shape (node types paper/author/institution/field_of_study, the four relations, 128-d paper features, paper
years, venue labels and a time split) into the folder layout that `ogb.nodeproppred.DglNodePropPredDataset`
reads, so the real loader code path is exercised end to end. `scale=1` gives OGBN-MAG's node and edge counts
(about 1.94M nodes and 21.1M edges, for the scale benchmark); tests use a tiny scale.

Layout under <root>/ogbn_mag/ (all csv gzip-compressed, no index column):
    RELEASE_v2.txt                        version marker the loader checks
    raw/num-node-dict.csv.gz              header: node types; one row: node counts
    raw/triplet-type-list.csv.gz          one (head, relation, tail) per row, no header
    raw/relations/<h>___<r>___<t>/        edge.csv.gz (src,dst per row), num-edge-list.csv.gz, edge_reltype.csv.gz
    raw/node-feat/paper/                  node-feat.csv.gz (128 floats per row), node_year.csv.gz
    raw/node-label/paper/node-label.csv.gz, raw/nodetype-has-label.csv.gz
    split/time/paper/{train,valid,test}.csv.gz, split/time/nodetype-has-split.csv.gz
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

# OGBN-MAG (OGB paper, Table / ogb.stanford.edu): node counts, edge counts per relation, split sizes
MAG_NODES = {"paper": 736_389, "author": 1_134_649, "institution": 8_740, "field_of_study": 59_965}
MAG_EDGES = {
    ("author", "affiliated_with", "institution"): 1_043_998,
    ("author", "writes", "paper"): 7_145_660,
    ("paper", "cites", "paper"): 5_416_271,
    ("paper", "has_topic", "field_of_study"): 7_505_078,
}
MAG_SPLIT = {"train": 629_571, "valid": 64_879, "test": 41_939}
MAG_CLASSES, MAG_FEAT_DIM, MAG_VERSION = 349, 128, 2
_GZ = {"method": "gzip", "compresslevel": 1}


def _csv(path: Path, data, header=False, float_format=None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    df = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    df.to_csv(path, header=header, index=False, compression=_GZ, float_format=float_format)


def _skewed(rng, n: int, size: int, exponent: float) -> np.ndarray:
    """`size` draws from n items with Zipf-like popularity (a few hubs, a long tail), in random id order."""
    p = (np.arange(1, n + 1, dtype=np.float64)) ** -exponent
    p /= p.sum()
    return rng.permutation(n)[rng.choice(n, size=size, p=p)]


def _edges(rng, n_src: int, n_dst: int, m: int, exponent: float, no_loops: bool) -> np.ndarray:
    """(2, ~m) distinct edges: uniform sources, skewed destinations; duplicates (and self-loops) dropped."""
    u = rng.integers(0, n_src, m, dtype=np.int64)
    v = _skewed(rng, n_dst, m, exponent).astype(np.int64)
    key = np.unique(u * n_dst + v)
    u, v = key // n_dst, key % n_dst
    keep = u != v if no_loops else slice(None)
    return np.stack([u[keep], v[keep]])


def write_ogb_mag_like(
    root: str | Path,
    scale: float = 1.0,
    seed: int = 0,
    num_label_classes: int = MAG_CLASSES,
    feat_dim: int = MAG_FEAT_DIM,
    signal: float = 1.0,
    float_format: str = "%.4f",
) -> dict:
    """Writes the generated graph under <root>/ogbn_mag/ and returns its node and edge counts.

    Paper labels are drawn from the first `num_label_classes` of the 349 venues; paper features are Gaussian
    noise plus `signal` times a random per-class centre, so a model can learn the labels (tests check it).
    Splits follow OGBN-MAG's time split in proportion: train papers have years up to 2017, valid 2018, test 2019.
    """
    rng = np.random.default_rng(seed)
    nodes = {t: max(2, int(round(n * scale))) for t, n in MAG_NODES.items()}
    base = Path(root) / "ogbn_mag"
    raw = base / "raw"
    _csv(raw / "num-node-dict.csv.gz", pd.DataFrame({t: [n] for t, n in nodes.items()}), header=True)
    _csv(raw / "triplet-type-list.csv.gz", [list(t) for t in MAG_EDGES])
    edges = _write_edges(rng, raw, nodes, scale)

    n_paper = nodes["paper"]
    y = rng.integers(0, num_label_classes, n_paper)
    centres = rng.normal(0, 1, (num_label_classes, feat_dim)).astype(np.float32)
    x = rng.normal(0, 1, (n_paper, feat_dim)).astype(np.float32)
    x += signal * centres[y]
    _csv(raw / "node-feat" / "paper" / "node-feat.csv.gz", x, float_format=float_format)
    del x
    total = sum(MAG_SPLIT.values())
    n_valid = max(1, int(round(n_paper * MAG_SPLIT["valid"] / total)))
    n_test = max(1, int(round(n_paper * MAG_SPLIT["test"] / total)))
    perm = rng.permutation(n_paper)
    split = {"valid": perm[:n_valid], "test": perm[n_valid : n_valid + n_test], "train": perm[n_valid + n_test :]}
    year = rng.integers(2010, 2018, n_paper)
    year[split["valid"]], year[split["test"]] = 2018, 2019
    _csv(raw / "node-feat" / "paper" / "node_year.csv.gz", year)
    _csv(raw / "node-label" / "paper" / "node-label.csv.gz", y)
    has = pd.DataFrame({t: [t == "paper"] for t in nodes})
    _csv(raw / "nodetype-has-label.csv.gz", has, header=True)
    for s, ids in split.items():
        _csv(base / "split" / "time" / "paper" / f"{s}.csv.gz", np.sort(ids))
    _csv(base / "split" / "time" / "nodetype-has-split.csv.gz", has, header=True)
    (base / f"RELEASE_v{MAG_VERSION}.txt").write_text("generated by regnn.data.ogb_format (not the real data)\n")
    return {
        "nodes": nodes,
        "edges": {"___".join(k): v for k, v in edges.items()},
        "num_nodes": sum(nodes.values()),
        "num_edges": sum(edges.values()),
        "split": {s: int(ids.size) for s, ids in split.items()},
    }


def _write_edges(rng, raw: Path, nodes: dict[str, int], scale: float) -> dict:
    """Every relation's generated edges under raw/relations/; returns the edge count per relation."""
    edges = {}
    for i, (trip, m) in enumerate(MAG_EDGES.items()):
        h, _, t = trip
        e = _edges(rng, nodes[h], nodes[t], max(1, int(round(m * scale))), exponent=0.8, no_loops=h == t)
        d = raw / "relations" / "___".join(trip)
        _csv(d / "edge.csv.gz", e.T)
        _csv(d / "num-edge-list.csv.gz", [e.shape[1]])
        _csv(d / "edge_reltype.csv.gz", np.full(e.shape[1], i, dtype=np.int64))
        edges[trip] = int(e.shape[1])
        del e
    return edges
