"""Meta-path graphs from a heterograph by sparse products, for HAN, GCN-M and GAT-M.

The heterograph `g` is a regnn.data.hetero.HeteroGraph (or anything with its interface, a DGL heterograph too);
the meta-path graphs are edge arrays, or an `Adjacency` to compute on.

A meta-path is a list of relation names (etype names of the heterograph) that chain: the destination type of
each relation is the source type of the next. Its composite adjacency A_P = A_r1 A_r2 ... A_rl (rows: sources,
columns: destinations) counts the path instances between two nodes; the meta-path graph joins every pair with
at least one instance.

The product is evaluated from both ends towards the middle: the first half left to right, the second half
right to left, then one product of the two. For DBLP's APTPA this multiplies an author x term matrix by a term
x author one instead of building the author x paper or paper x paper intermediates, which are dense.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from regnn.core.adjacency import Adjacency
from regnn.data.relation_graph import RelationGraph, sorted_by_destination


def relation_matrix(g, relation: str) -> sp.csr_matrix:
    """(num src nodes, num dst nodes) 0/1 matrix of one relation (parallel edges count once)."""
    src_t, _, dst_t = g.to_canonical_etype(relation)
    u, v = (x.numpy() for x in g.edges(etype=relation))
    m = sp.csr_matrix((np.ones(u.size, dtype=np.float64), (u, v)), shape=(g.num_nodes(src_t), g.num_nodes(dst_t)))
    m.data[:] = 1.0
    return m


def check_metapath(g, name: str, relations, endpoint: str | None = None) -> list[tuple]:
    """The canonical etypes of a meta-path; a ValueError naming the problem when it does not chain."""
    rels = list(relations) if isinstance(relations, (list, tuple)) else None
    if not rels:
        raise ValueError(f"meta-path {name!r} must be a non-empty list of relation names, got {relations!r}")
    known = {cet[1]: cet for cet in g.canonical_etypes}
    missing = [r for r in rels if r not in known]
    if missing:
        raise ValueError(
            f"meta-path {name!r} names unknown relations {missing}; the graph's relations are {sorted(known)}"
        )
    cets = [known[r] for r in rels]
    for a, b in zip(cets, cets[1:]):
        if a[2] != b[0]:
            raise ValueError(
                f"meta-path {name!r} does not chain: {a[1]!r} ends at {a[2]!r} but {b[1]!r} starts at {b[0]!r}"
            )
    if endpoint is not None and (cets[0][0] != endpoint or cets[-1][2] != endpoint):
        raise ValueError(
            f"meta-path {name!r} runs {cets[0][0]!r} -> {cets[-1][2]!r}; the meta-path models need "
            f"paths from the target type {endpoint!r} back to it"
        )
    return cets


def metapath_adjacency(g, relations, name: str = "meta-path") -> sp.csr_matrix:
    """A_P = A_r1 ... A_rl as a sparse matrix of path-instance counts (rows: first type, columns: last type)."""
    check_metapath(g, name, relations)
    mats = [relation_matrix(g, r) for r in relations]
    half = (len(mats) + 1) // 2
    left = mats[0]
    for m in mats[1:half]:
        left = left @ m
    if half == len(mats):
        return left.tocsr()
    right = mats[-1]
    for m in reversed(mats[half:-1]):
        right = m @ right
    return (left @ right).tocsr()


def metapath_edges(g, relations, name: str = "meta-path", self_loops: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """(src, dst) int64 edges of the endpoint type's meta-path graph: u -> v for every pair with a path instance
    u ... v, destination-major (then by source), so that edge positions are CSR positions.

    self_loops=True puts exactly one self-loop on every node (nodes without any path instance, which would
    otherwise have no in-edge, keep their own features); False drops them all.
    """
    a = metapath_adjacency(g, relations, name).tocoo()
    if a.shape[0] != a.shape[1]:
        raise ValueError(
            f"meta-path {name!r} joins two different node types; a meta-path graph needs the same type at both ends"
        )
    keep = a.row != a.col
    src, dst = a.row[keep].astype(np.int64), a.col[keep].astype(np.int64)
    n = a.shape[0]
    if self_loops:
        src, dst = np.concatenate([src, np.arange(n)]), np.concatenate([dst, np.arange(n)])
    order = np.argsort(dst * n + src, kind="stable")  # destination-major, as the relation graph (CSR order)
    return torch.from_numpy(src[order]), torch.from_numpy(dst[order])


def metapath_graph(g, relations, name: str = "meta-path", self_loops: bool = True) -> Adjacency:
    """The meta-path graph (metapath_edges) as an Adjacency over the endpoint type's nodes, on the CPU."""
    src, dst = metapath_edges(g, relations, name, self_loops)
    n = g.num_nodes(check_metapath(g, name, relations)[0][0])
    return Adjacency.from_edges(src, dst, None, n)


def metapath_graphs(data, metapaths: dict, names=None, self_loops: bool = True) -> dict[str, Adjacency]:
    """{name: meta-path graph of the target type} for the given names (all when None), in config order."""
    return {
        n: metapath_graph(data.graph, rels, n, self_loops=self_loops)
        for n, rels in _target_metapaths(data, metapaths, names).items()
    }


def _target_metapaths(data, metapaths: dict, names=None) -> dict[str, list]:
    """{name: relations} of the named meta-paths (all when None), each checked to run from the target type back
    to it."""
    if not isinstance(metapaths, dict) or not metapaths:
        raise ValueError(
            "model.metapaths must map meta-path names to relation lists (set dataset.metapaths, "
            f"e.g. APA: [author->paper, paper->author]); got {metapaths!r}"
        )
    names = list(metapaths) if names is None else list(names)
    unknown = [n for n in names if n not in metapaths]
    if unknown:
        raise ValueError(f"meta-paths {unknown} are not defined; dataset.metapaths defines {list(metapaths)}")
    for n in names:
        check_metapath(data.graph, n, metapaths[n], endpoint=data.target)
    return {n: metapaths[n] for n in names}


def metapath_relation_graph(data, name: str, relations) -> RelationGraph:
    """One meta-path graph as a RelationGraph of the target type: relation 0 the meta-path edges, relation 1
    the self-loop of every node, so the RE-GNN layers (with relation weights switched off) run on it as-is."""
    _target_metapaths(data, {name: relations})
    src, dst = metapath_edges(data.graph, relations, name, self_loops=False)
    n = data.graph.num_nodes(data.target)
    ids = torch.arange(n)
    rel = torch.cat([torch.zeros(src.numel(), dtype=torch.int64), torch.ones(n, dtype=torch.int64)])
    src, dst, rel = sorted_by_destination(torch.cat([src, ids]), torch.cat([dst, ids]), rel, n)
    return RelationGraph(
        src,
        dst,
        rel,
        [name, f"self:{data.target}"],
        1,
        [data.target],
        {data.target: 0},
        torch.zeros(n, dtype=torch.int64),
    )
