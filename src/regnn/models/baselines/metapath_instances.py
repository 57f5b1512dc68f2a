"""Meta-path instances (node sequences) for MAGNN: every instance, or at most `cap` per end node, sampled.

An instance of the meta-path r_1 ... r_l is a node sequence (n_0, ..., n_l) with an r_i edge from n_{i-1} to n_i
(parallel edges count once, as in `metapath_adjacency`, whose entries are the instance counts per end pair).
MAGNN aggregates the instances that END at a target node, so everything here is keyed by the last node.

The prefix counts N_0 = 1, N_i = A_{r_i}^T N_{i-1} give, per node, how many partial instances (n_0 .. n_i) end
there; N_l(v) is the number of instances ending at v. Instances are built backwards from their end node,
keeping only predecessors with N_{i-1} > 0, so no partial path is built that does not complete: listing the
instances of a node costs about its count. Where a node's count is above `cap` (DBLP's APTPA through terms of
huge degree: millions per author), `cap` instances are drawn backwards instead, each predecessor u with
probability N_{i-1}(u) / N_i(n_i): every instance ending at the node equally likely, and the full list is never
built. Duplicated draws are dropped, so such a node keeps at most `cap` distinct instances.
"""

from __future__ import annotations

import numpy as np

from regnn.models.baselines.metapath import check_metapath, relation_matrix


def _prefix_counts(mats) -> list[np.ndarray]:
    """N_0 .. N_l (float64: APTPA counts pass 2^31)."""
    counts = [np.ones(mats[0].shape[0])]
    for m in mats:
        counts.append(m.T @ counts[-1])
    return counts


def _backward(mats_t, counts, ends: np.ndarray) -> np.ndarray:
    """Every instance ending at the nodes `ends`: (k, l + 1) local ids, position 0 first."""
    paths = ends.reshape(-1, 1).astype(np.int64)
    for i in range(len(mats_t), 0, -1):
        m = mats_t[i - 1]  # CSR, rows: nodes at position i, columns: their predecessors at position i - 1
        head = paths[:, 0]
        deg = np.diff(m.indptr)[head]
        starts = np.repeat(m.indptr[head], deg)
        within = np.arange(deg.sum()) - np.repeat(np.cumsum(deg) - deg, deg)
        pred = m.indices[starts + within]
        paths = np.concatenate([pred[:, None], np.repeat(paths, deg, axis=0)], 1)
        paths = paths[counts[i - 1][pred] > 0]
    return paths


def _sample_backward(mats_t, counts, ends: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """`draws` instances ending at each node of `ends`, each drawn uniformly from all its instances."""
    paths = np.repeat(ends.astype(np.int64), draws).reshape(-1, 1)
    for i in range(len(mats_t), 0, -1):
        m = mats_t[i - 1]
        head = paths[:, 0]
        weight = np.cumsum(counts[i - 1][m.indices])  # running count over the CSR entries
        before = np.where(m.indptr[head] > 0, weight[np.maximum(m.indptr[head] - 1, 0)], 0.0)
        pick = before + rng.random(head.size) * counts[i][head]
        pos = np.searchsorted(weight, pick, side="right")
        pos = np.minimum(pos, m.indptr[head + 1] - 1)  # float rounding at a segment's upper end
        paths = np.concatenate([m.indices[pos][:, None], paths], 1)
    return paths


def _by_end(paths: np.ndarray) -> np.ndarray:
    """Distinct rows, ordered by the end node, then position 0, 1, ..."""
    if paths.shape[0] == 0:
        return paths
    paths = np.unique(paths, axis=0)
    keys = [paths[:, j] for j in range(paths.shape[1] - 2, -1, -1)] + [paths[:, -1]]  # lexsort: last key first
    return paths[np.lexsort(keys)]


def metapath_instances(g, relations, cap: int | None = None, seed: int = 0, name: str = "meta-path") -> np.ndarray:
    """(num instances, len(relations) + 1) int64 local ids of the meta-path's instances, ordered by end node.

    cap=None lists every instance. Otherwise a node with at most `cap` instances keeps them all and a node with
    more gets `cap` draws (distinct ones kept), from a generator seeded by `seed`: the same graph, cap and seed
    give the same instances."""
    check_metapath(g, name, relations)
    if cap is not None and cap < 1:
        raise ValueError(f"cap must be >= 1 (instances kept per end node) or None (all), got {cap}")
    mats = [relation_matrix(g, r) for r in relations]
    counts = _prefix_counts(mats)
    mats_t = [m.T.tocsr() for m in mats]
    for m in mats_t:
        m.sort_indices()
    ends = np.flatnonzero(counts[-1] > 0)
    if cap is None:
        return _by_end(_backward(mats_t, counts, ends))
    small, big = ends[counts[-1][ends] <= cap], ends[counts[-1][ends] > cap]
    parts = [_backward(mats_t, counts, small)]
    if big.size:
        parts.append(_sample_backward(mats_t, counts, big, cap, np.random.default_rng(seed)))
    return _by_end(np.concatenate(parts))
