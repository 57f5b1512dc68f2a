"""MAGNN-AC (Jin et al., WWW 2021: HGNN-AC, attribute completion, on MAGNN).

Node types without features (one-hot ids or zero vectors: ACM's authors and subjects, IMDB's directors and
actors, DBLP's venues) get their hidden vectors completed from their featured neighbours (the featured type with
the most edges to them):  h_v = mean_k ELU(sum_u a^k_vu W_s x_u),  a^k_vu = softmax_u LeakyReLU_0.2(
(e_v U_k) V_k (e_u U_k)^T),  over v's neighbours u, e the topological embeddings, edges dropped at the dropout rate
before the softmax. The sum runs over projected vectors W_s x_u + b_s, as the HGNN-AC code completes
the transformed features. MAGNN then runs on the completed vectors.

Topological embeddings: the rank-emb_dim truncated SVD (exact, float64, in a canonical basis: spectral.py) of
D^-1/2 A D^-1/2 over all nodes, U sqrt(S) (a spectral structural embedding; HGNN-AC pretrains metapath2vec, which
would take minutes per job).

HGNN-AC's extra training term: each training step hides the features of feats_drop_rate of the featured source
nodes and rebuilds them with the same attention from their source-type neighbours through a completed type
(e.g. movies sharing a director); the mean L2 distance, times loss_lambda, joins the loss (`auxiliary_loss`,
read by the trainer).

The attention runs on regnn.core's Adjacency of the (source -> completed) pairs; its per-edge arrays are in
destination-sorted order, the edge dropout is drawn in the pairs' own order (the numbering DGL gave them), and
float64 fixtures pin the completion and the rebuild term to DGL's ops (tests/test_dgl_ports_magnn.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import nn

from regnn.core.adjacency import Adjacency, at_least_fp32, full_precision
from regnn.core.attention_ops import aggregate_heads
from regnn.core.edge_ops import csr_mm, edge_dots
from regnn.data.hetero import HeteroGraph
from regnn.errors import DataError
from regnn.models.baselines.magnn import MAGNN, MetapathInstances
from regnn.models.baselines.metapath_instances import metapath_instances
from regnn.models.baselines.spectral import spectral_embedding


def featureless(x: torch.Tensor) -> bool:
    """All zeros, or one-hot ids (the sparse identity): what select_features gives a type without features."""
    if not x.is_sparse:
        return not bool(x.any())
    x = x.coalesce()
    i, v = x.indices(), x.values()
    return x.shape[0] == x.shape[1] == v.numel() and bool((i[0] == i[1]).all() and (v == 1).all())


def homogeneous_edges(g: HeteroGraph) -> tuple[torch.Tensor, torch.Tensor, dict[str, int]]:
    """Every edge of g on one numbering of all nodes, as dgl.to_homogeneous numbers them: the node types one block
    after another in g.ntypes order, local ids within; the edges by canonical edge type in g's order, each type's
    in its own order. Returns (sources, destinations, {node type: first id of its block})."""
    offsets, n = {}, 0
    for t in g.ntypes:
        offsets[t], n = n, n + g.num_nodes(t)
    parts = [
        (u + offsets[s], v + offsets[d])
        for (s, _, d), (u, v) in ((cet, g.edges(etype=cet)) for cet in g.canonical_etypes)
    ]
    empty = torch.zeros(0, dtype=torch.int64)
    return (
        torch.cat([u for u, _ in parts]) if parts else empty,
        torch.cat([v for _, v in parts]) if parts else empty,
        offsets,
    )


def topological_embedding(g: HeteroGraph, dim: int, seed: int) -> dict[str, torch.Tensor]:
    """{node type: (n, dim)} rows of U sqrt(S), the truncated SVD of the normalised adjacency of all nodes, in the
    canonical basis of regnn.models.baselines.spectral (the same embedding on every machine)."""
    u, v, offsets = homogeneous_edges(g)
    u, v = u.numpy(), v.numpy()
    n = g.num_nodes()
    a = sp.coo_matrix((np.ones(u.size), (u, v)), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(np.float64)
    d = np.asarray(a.sum(1)).ravel()
    inv = sp.diags(np.where(d > 0, 1.0 / np.sqrt(np.maximum(d, 1e-12)), 0.0))
    k = min(dim, n - 1)
    left, _ = spectral_embedding((inv @ a @ inv).tocsr(), k, seed)
    emb = np.zeros((n, dim), dtype=np.float32)
    emb[:, :k] = left
    return {t: torch.from_numpy(emb[offsets[t] : offsets[t] + g.num_nodes(t)]) for t in g.ntypes}


def completion_sources(g: HeteroGraph, feats: dict[str, torch.Tensor], types) -> dict[str, str]:
    """{featureless type: the featured type with the most edges into it} for the given types."""
    featured = {t for t in g.ntypes if not featureless(feats[t])}
    out = {}
    for t in types:
        edges = {}
        for s, _, d in g.canonical_etypes:
            if d == t and s in featured:
                edges[s] = edges.get(s, 0) + g.num_edges((s, _, d))
        if not edges:
            raise DataError(
                f"node type {t!r} has no features and no neighbours of a type with features, so "
                "MAGNN-AC cannot complete it; give it features or use model=magnn"
            )
        out[t] = max(edges, key=edges.get)
    return out


def pairs_adjacency(u, v, num_src: int, num_dst: int) -> Adjacency:
    """The graph of the pairs u[i] -> v[i] (edge i, the numbering DGL gives them)."""
    return Adjacency.from_edges(
        torch.as_tensor(u, dtype=torch.int64), torch.as_tensor(v, dtype=torch.int64), None, num_src, num_dst
    )


class _HeadDots(torch.autograd.Function):
    """<q[v, k], k[u, k]> for every edge u -> v (CSR order) and head k, one sampled product per head: the
    (E, heads, dim) products of the gathered rows are never held (DBLP's rebuild pairs: about 1 GB in float32).
    Backward: grad q[:, k] = G_k k[:, k], grad k[:, k] = G_k^T q[:, k], with G_k the graph carrying grad[:, k]."""

    @staticmethod
    def forward(ctx, k_src, q_dst, adj: Adjacency):
        ctx.adj = adj
        ctx.save_for_backward(k_src, q_dst)
        if adj.indices.numel() == 0:
            return k_src.new_zeros(0, k_src.shape[1])
        return torch.stack(
            [edge_dots(adj, q_dst[:, h].contiguous(), k_src[:, h].contiguous()) for h in range(k_src.shape[1])], 1
        )

    @staticmethod
    def backward(ctx, grad):
        k_src, q_dst = ctx.saved_tensors
        adj = ctx.adj
        gk = gq = None
        grad = grad.t().contiguous()  # (heads, E)
        if ctx.needs_input_grad[0]:
            gk = torch.stack(
                [
                    csr_mm(
                        adj.t_indptr,
                        adj.t_indices,
                        grad[h].index_select(0, adj.t_pos),
                        (adj.num_src, adj.num_dst),
                        q_dst[:, h].contiguous(),
                    )
                    for h in range(grad.shape[0])
                ],
                1,
            )
        if ctx.needs_input_grad[1]:
            gq = torch.stack(
                [
                    csr_mm(adj.indptr, adj.indices, grad[h], (adj.num_dst, adj.num_src), k_src[:, h].contiguous())
                    for h in range(grad.shape[0])
                ],
                1,
            )
        return gk, gq, None


def head_dots(adj: Adjacency, k_src: torch.Tensor, q_dst: torch.Tensor) -> torch.Tensor:
    """(E, heads) dot products k_src[u, h] . q_dst[v, h] over the edges u -> v in CSR order; k_src (N_s, heads, dim),
    q_dst (N_t, heads, dim). In float32 at least (the sampled products have no bf16 kernels)."""
    with full_precision(k_src):
        return _HeadDots.apply(at_least_fp32(k_src), at_least_fp32(q_dst), adj)


@dataclass
class CompletionInputs(MetapathInstances):
    sources: dict[str, str] = None  # completed type -> its source type
    graphs: dict[str, Adjacency] = None  # completed type -> source -> completed neighbour graph
    rebuild: tuple[torch.Tensor, torch.Tensor] | None = None  # source -> source pairs through a completed type
    # (the extra loss), as (sources, destinations) sorted by source, then destination
    rebuild_source: str | None = None
    emb: dict[str, torch.Tensor] = None  # topological embeddings per node type

    @classmethod
    def build(cls, data, device="cpu", metapaths=None, max_instances=100, sample_seed=0, emb_dim=64, **_model_options):
        base = MetapathInstances.build(data, device, metapaths, max_instances, sample_seed)
        g = data.graph
        used = sorted({t for ts in base.ntypes.values() for t in ts})
        sources = completion_sources(g, data.features, [t for t in used if featureless(data.features[t])])
        graphs = {}
        for t, s in sources.items():
            u, v = [], []
            for cet in g.canonical_etypes:
                if cet[0] == s and cet[2] == t:
                    a, b = g.edges(etype=cet)
                    u.append(a), v.append(b)
            pairs = np.unique(torch.stack([torch.cat(u), torch.cat(v)], 1).numpy(), axis=0)
            graphs[t] = pairs_adjacency(pairs[:, 0], pairs[:, 1], g.num_nodes(s), g.num_nodes(t)).to(device)
        rebuild, rebuild_source = None, None
        if sources:  # through the completed type with the fewest source-source pairs (IMDB: MDM, not MAM)
            t = min(sources, key=lambda c: sum(int(x) ** 2 for x in graphs[c].indptr.diff()))
            rebuild_source = sources[t]
            rel_in = next(c[1] for c in g.canonical_etypes if c[0] == rebuild_source and c[2] == t)
            rel_out = next(c[1] for c in g.canonical_etypes if c[0] == t and c[2] == rebuild_source)
            inst = metapath_instances(g, [rel_in, rel_out], max_instances, sample_seed)
            inst = np.unique(inst[inst[:, 0] != inst[:, -1]][:, [0, -1]], axis=0)
            rebuild = tuple(torch.from_numpy(inst[:, i].copy()).to(device) for i in (0, 1))
        emb = {t: e.to(device) for t, e in topological_embedding(g, emb_dim, sample_seed).items()}
        return cls(
            **vars(base), sources=sources, graphs=graphs, rebuild=rebuild, rebuild_source=rebuild_source, emb=emb
        )

    def projected_types(self) -> list[str]:
        """The meta-paths' featured types and the completion sources (a completed type needs no projection)."""
        return sorted(set(super().projected_types()) - set(self.sources) | set(self.sources.values()))


class AttributeCompletion(nn.Module):
    """HGNN-AC's attention: per head k, logits LeakyReLU((e_v U_k) V_k . (e_u U_k)), softmax over the edges into
    v (edges dropped at `dropout` first), ELU of the weighted sum of source vectors, the heads averaged."""

    def __init__(self, emb_dim: int, hidden: int, heads: int, dropout: float):
        super().__init__()
        self.u = nn.Parameter(torch.empty(heads, emb_dim, hidden))
        self.v = nn.Parameter(torch.empty(heads, hidden, hidden))
        for p in (self.u, self.v):
            nn.init.xavier_normal_(p, gain=1.414)
        self.dropout = dropout

    def forward(self, graph: Adjacency, emb_src, emb_dst, x_src) -> torch.Tensor:
        k_src = torch.einsum("nd,kdh->nkh", emb_src, self.u)
        q_dst = torch.einsum("nkh,khj->nkj", torch.einsum("nd,kdh->nkh", emb_dst, self.u), self.v)
        score = F.leaky_relu(head_dots(graph, k_src, q_dst), 0.2)  # (E, heads), CSR order
        if self.training and self.dropout > 0:
            # drawn in the pairs' own order, so that each edge gets the number DGL's graph of them gave it
            keep = torch.rand(score.shape[0], device=score.device) >= self.dropout
            keep = keep if graph.perm is None else keep.index_select(0, graph.perm)
            # a node whose edges are all dropped falls back to equal weights, as the dense -9e15 mask of HGNN-AC does
            score = torch.where(keep.view(-1, 1), score, torch.full_like(score, -1e9))
        a = graph.edge_softmax(score)
        return F.elu(aggregate_heads(graph, x_src.unsqueeze(1), a)).mean(1)


class MAGNNAC(MAGNN):
    def __init__(self, in_dims, shape, *, emb_dim: int, feats_drop_rate: float, loss_lambda: float, **kwargs):
        """kwargs: MAGNN's (heads, attn_vec_dim, dropout, ...): the completion attention takes the same."""
        super().__init__(in_dims, shape, **kwargs)
        if not 0 <= feats_drop_rate < 1:
            raise ValueError(f"feats_drop_rate must be in [0, 1), got {feats_drop_rate}")
        self.complete = AttributeCompletion(emb_dim, kwargs["attn_vec_dim"], kwargs["heads"], kwargs["dropout"])
        self.feats_drop_rate, self.loss_lambda = feats_drop_rate, loss_lambda
        self._aux: torch.Tensor | None = None

    def project(self, inputs: CompletionInputs, feats):
        h = {t: self.proj.project(t, feats[t]) for t in self.proj.lins}
        for t, s in inputs.sources.items():
            h[t] = self.complete(inputs.graphs[t], inputs.emb[s], inputs.emb[t], h[s])
        self._aux = None
        if self.training and inputs.rebuild is not None and self.loss_lambda > 0 and self.feats_drop_rate > 0:
            s, (src, dst) = inputs.rebuild_source, inputs.rebuild
            n = h[s].shape[0]
            hidden = torch.rand(n, device=h[s].device) < self.feats_drop_rate
            # only the pairs from a visible source to a hidden node enter the loss: rebuilding on them alone
            # gives the same vectors at a fifth of the cost (DBLP: 1.3M paper-venue-paper pairs)
            kept = torch.nonzero(~hidden[src] & hidden[dst]).squeeze(1)
            sub = pairs_adjacency(src[kept], dst[kept], n, n)
            rebuilt = self.complete(sub, inputs.emb[s], inputs.emb[s], h[s])
            has = sub.indptr.diff() > 0
            if has.any():
                self._aux = self.loss_lambda * (h[s][has] - rebuilt[has]).norm(dim=1).mean()
        return h

    def auxiliary_loss(self) -> torch.Tensor | None:
        """loss_lambda x the rebuild error of the last training forward pass (None outside training)."""
        return self._aux
