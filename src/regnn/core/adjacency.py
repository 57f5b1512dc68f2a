"""The graph every RE-GNN layer runs on: a relation-typed graph (or sampled block) as torch arrays.

CSR (rows = destinations) and CSC views, the relation id of every edge, and the backend chosen for it once
(regnn.core.backend). Every per-edge tensor is in CSR order. Nothing here needs DGL: an Adjacency is built from
edge arrays (from_edges), from CSR/CSC arrays (from_arrays), or from any graph that gives them as DGL's
`adj_tensors` does (a DGL graph or block: regnn.data and the samplers hand those in; DGL is not imported).
"""
from __future__ import annotations

import torch

from regnn.core import edge_ops
from regnn.core.alpha_cache import AlphaCache
from regnn.core.backend import Backend, choose_backend
from regnn.core.edge_ops import at_least_fp32, full_precision  # noqa: F401 (part of this module's interface)
from regnn.core.gcn_aggregate import NORM_CODES, CsrSpmm, GcnAggregate, GcnAggregateFused, edge_scales, scales


class Adjacency:
    """CSR (destination rows) and CSC views of a graph or block, the relation id of every edge (CSR order), the
    backend that computes on them, and what is derived from them on first use."""

    def __init__(self, g, rel: torch.Tensor | None = None, backend: Backend | None = None):
        """From a graph that gives its CSC and CSR arrays as DGL's adj_tensors does (a DGL graph or block);
        rel: relation id per edge in g's edge order (default: g.edata["rel"])."""
        indptr, indices, eid = g.adj_tensors("csc")  # for every destination: its in-edges
        rel = g.edata["rel"] if rel is None and "rel" in g.edata else rel
        self._set_arrays(g.num_dst_nodes(), g.num_src_nodes(), indptr, indices, eid, *g.adj_tensors("csr"), rel,
                         backend)

    @classmethod
    def from_arrays(cls, num_dst: int, num_src: int, indptr, indices, eid, t_indptr, t_indices, t_eid,
                    rel: torch.Tensor | None = None, backend: Backend | None = None) -> "Adjacency":
        """From the CSC (in-edges per destination) and CSR (out-edges per source) arrays with edge ids."""
        self = cls.__new__(cls)
        self._set_arrays(num_dst, num_src, indptr, indices, eid, t_indptr, t_indices, t_eid, rel, backend)
        return self

    @classmethod
    def from_edges(cls, src: torch.Tensor, dst: torch.Tensor, rel: torch.Tensor | None, num_src: int,
                   num_dst: int | None = None, backend: Backend | None = None) -> "Adjacency":
        """From edge arrays: edge i goes src[i] -> dst[i] with relation rel[i]; edge ids are positions in them.
        Sorted by destination already (as regnn.data builds them), the edges keep their order."""
        num_dst = num_src if num_dst is None else num_dst
        by_dst = torch.sort(dst, stable=True).indices
        by_src = torch.sort(src, stable=True).indices
        indptr = segment_offsets(dst, num_dst)
        t_indptr = segment_offsets(src, num_src)
        return cls.from_arrays(num_dst, num_src, indptr, src.index_select(0, by_dst), by_dst, t_indptr,
                               dst.index_select(0, by_src), by_src, rel, backend)

    def _set_arrays(self, num_dst, num_src, indptr, indices, eid, t_indptr, t_indices, t_eid, rel, backend) -> None:
        self.num_dst, self.num_src = num_dst, num_src
        self.indptr, self.indices = indptr, indices
        self.t_indptr, self.t_indices = t_indptr, t_indices
        self.backend = backend if backend is not None else choose_backend(indptr.device)
        e = indices.shape[0]
        self.perm = None if torch.equal(eid, torch.arange(e, device=eid.device)) else eid  # csr position -> edge id
        if self.perm is None:  # edge ids are CSR positions (sampled blocks, sorted graphs): no inverse to take
            self.t_pos = t_eid  # csc position -> csr position
        else:
            pos = torch.empty_like(eid)
            pos[eid] = torch.arange(e, device=eid.device)
            self.t_pos = pos[t_eid]
        self.dst_of = torch.repeat_interleave(torch.arange(self.num_dst, device=indptr.device), indptr.diff())
        self.in_degree = indptr.diff().to(torch.float32).unsqueeze(-1)
        self.rel = None if rel is None else (rel if self.perm is None else rel[self.perm])  # csr order
        # (num_src, num_relations) in-edge counts of every source in the whole graph, for norm="both" on a block
        # (set by the sampler where the model asks for it; None: unknown)
        self.source_counts: torch.Tensor | None = None
        # (E,) in CSR order: how many of its destination's in-edges each edge stands for, where the sampler drew k
        # of n (n / k on a sampled edge, 1 on the self-loop); None: every in-edge is there
        self.edge_scale: torch.Tensor | None = None
        self._derived: dict = {}  # arrays derived from the structure, built on first use
        self.alphas = AlphaCache()  # what the relation weights give, per step (regnn.core.alpha_cache)

    def _once(self, key, build):
        if key not in self._derived:
            self._derived[key] = build()
        return self._derived[key]

    # -- edge-wise ops ------------------------------------------------------------------------------------
    def edge_weights(self, alpha: torch.Tensor) -> torch.Tensor:
        """(E, heads) weight of every edge in CSR order from the (num_relations, heads) relation weights."""
        return self.gather(alpha, "rel")

    def gather(self, x: torch.Tensor, by: str) -> torch.Tensor:
        """x's row for every edge in CSR order: of its source (by="src": x has a row per source), destination
        ("dst") or relation ("rel"). The gradient sums per row with segment_sum."""
        return edge_ops.GatherEdges.apply(x, self, by)

    def u_add_v(self, src_feat: torch.Tensor, dst_feat: torch.Tensor) -> torch.Tensor:
        """src_feat[u] + dst_feat[v] for every edge u -> v, in CSR order."""
        return self.gather(src_feat, "src") + self.gather(dst_feat, "dst")

    def edge_softmax(self, score: torch.Tensor) -> torch.Tensor:
        """Softmax of score (E, ...) over the in-edges of every destination (CSR order)."""
        return edge_ops.edge_softmax(self, score)

    def segment_sum(self, values: torch.Tensor, by: str, n: int) -> torch.Tensor:
        """Sums of per-edge values (E, ...) in CSR order per destination, source or relation (edge_ops)."""
        return edge_ops.segment_sum(self, values, by, n)

    def edge_ids(self, by: str) -> torch.Tensor:
        """Every edge's destination (by="dst"), source ("src") or relation id ("rel"), in CSR order."""
        return {"dst": self.dst_of, "src": self.indices, "rel": self.rel}[by]

    def segments(self, by: str, n: int) -> tuple[torch.Tensor | None, torch.Tensor]:
        """(order of the edges that sorts them by `by`, None if they are sorted already; offsets of the n segments)."""
        def build():
            if by == "dst" and n == self.num_dst:
                return None, self.indptr
            if by == "src" and n == self.num_src:
                return self.t_pos, self.t_indptr  # CSC order: sorted by source
            index = self.edge_ids(by)
            counts = torch.bincount(index, minlength=n)
            if counts.shape[0] > n:
                raise ValueError(f"segment_sum: ids up to {counts.shape[0] - 1} do not fit {n} segments")
            return torch.sort(index, stable=True).indices, torch.cat([counts.new_zeros(1), counts.cumsum(0)])
        return self._once(("segments", by, n), build)

    # -- aggregation --------------------------------------------------------------------------------------
    def spmm(self, h: torch.Tensor, w: torch.Tensor | None = None) -> torch.Tensor:
        """sum_{u->v} w_e h[u] for every destination v; w in CSR order (E,) or None for all ones."""
        with full_precision(h):
            return CsrSpmm.apply(at_least_fp32(h), None if w is None else at_least_fp32(w), self)

    def normalized_spmm(self, h: torch.Tensor, alpha: torch.Tensor | None, norm: str = "both") -> torch.Tensor:
        """GCN aggregation D^-1/2 A_w D^-1/2 h ("both"), D^-1 A_w h ("right") or A_w h ("none").

        A_w holds the relation weight alpha[rel(e)] on every edge (all ones when alpha is None) and D its
        weighted in-degree, clamped at 1. One fused autograd op (regnn.core.gcn_aggregate).
        """
        if norm == "both" and self.num_src != self.num_dst:
            if self.source_counts is None:
                raise ValueError("norm='both' needs the source degrees of the whole graph; on sampled blocks use "
                                 "norm='right' (mean over the weighted in-edges)")
            return self._block_both(h, alpha)
        with full_precision(h):
            h = at_least_fp32(h)
            if alpha is None:
                return GcnAggregate.apply(h, None, self, norm)
            alpha = at_least_fp32(alpha if alpha.shape[1] == 1 else alpha[:, :1])  # no slice node for one head
            kernels = self.fused_kernels(h) if h.dtype == alpha.dtype else None
            if kernels is not None and self.num_relations_seen > alpha.shape[0]:
                raise ValueError(f"the graph has relation ids up to {self.num_relations_seen - 1}, but "
                                 f"{alpha.shape[0]} relation weights were given")
            if kernels is not None:
                if torch.is_grad_enabled() and (h.requires_grad or alpha.requires_grad):
                    return GcnAggregateFused.apply(h, alpha, self, norm, kernels)
                al, a, b, _, _ = self.node_scales(alpha, norm, kernels)  # evaluation: no autograd record
                return kernels.forward(self.indptr, self.indices, self.kernel_rel, al, a, b, h.contiguous())
            return GcnAggregate.apply(h, alpha, self, norm)

    def _block_both(self, h: torch.Tensor, alpha: torch.Tensor | None) -> torch.Tensor:
        """D^-1/2 A_w D^-1/2 h on a block, D from the whole graph's weighted in-degrees (a destination is its
        block's first sources). Where every in-edge is there, the full graph's product restricted to the block;
        where the sampler drew k of a destination's n in-edges, each drawn edge counts n / k times
        (scaled_edge_weights): a uniform draw without replacement makes that sum an unbiased estimate of the full one.
        Composed of autograd operations, so the degrees pass their gradient to alpha."""
        with full_precision(h):
            h = at_least_fp32(h)
            alpha = None if alpha is None else at_least_fp32(alpha[:, :1]).to(h.dtype)
            s = self.source_degree(alpha, h.dtype).clamp(min=1).pow(-0.5).unsqueeze(-1)
            return s[: self.num_dst] * CsrSpmm.apply(h * s, self.scaled_edge_weights(alpha, h.dtype), self)

    def scaled_edge_weights(self, alpha: torch.Tensor | None, dtype=torch.float32) -> torch.Tensor | None:
        """(E,) the relation weight of every edge (alpha (num_relations, 1); None: 1) times its edge_scale, in
        CSR order; None where both are 1 everywhere."""
        w = None if alpha is None else alpha[:, 0].index_select(0, self.rel)
        if self.edge_scale is None:
            return w
        scale = self.edge_scale.to(device=self.indptr.device, dtype=dtype if alpha is None else alpha.dtype)
        return scale if w is None else w * scale

    def source_degree(self, alpha: torch.Tensor | None, dtype=torch.float32) -> torch.Tensor:
        """(num_src,) weighted in-degree of every source in the whole graph (alpha (num_relations, 1); None: every
        weight 1), unclamped, differentiable in alpha. On a full graph the sources are the destinations; a block
        needs source_counts (SampledGraph(whole_graph_degrees=True))."""
        if self.num_src == self.num_dst:
            if alpha is None:
                return self.in_degree[:, 0].to(dtype)
            return (self.relation_counts(alpha.shape[0], alpha.dtype) @ alpha)[:, 0]
        if self.source_counts is None:
            raise ValueError("this layer needs the whole graph's degrees of a block's sources: sample with "
                             "SampledGraph(whole_graph_degrees=True) and every neighbour (fanout -1)")
        counts = self.source_counts.to(device=self.indptr.device, dtype=dtype if alpha is None else alpha.dtype)
        return counts.sum(1) if alpha is None else (counts @ alpha)[:, 0]

    def fused_kernels(self, t: torch.Tensor):
        """The backend's fused kernels where they serve tensors like t, else None: they run on CPU tensors, and
        their backward visits destinations as the first sources (full graphs, sampled blocks)."""
        kernels = self.backend.kernels
        return kernels if kernels is not None and t.device.type == "cpu" and self.num_dst <= self.num_src else None

    def kernel_csc(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(destination, relation) of every edge in source-major order, each source's edges grouped by relation:
        the fused backward handles one run of a relation at a time (t_indptr delimits the sources)."""
        def build():
            t_rel = self.rel.index_select(0, self.t_pos)
            src = torch.repeat_interleave(torch.arange(self.num_src, device=t_rel.device), self.t_indptr.diff())
            order = torch.sort(src * (int(t_rel.max()) + 1 if t_rel.numel() else 1) + t_rel, stable=True).indices
            return (self.t_indices.index_select(0, order).contiguous(),
                    t_rel.index_select(0, order).to(torch.int32).contiguous())
        return self._once("kernel_csc", build)

    @property
    def num_relations_seen(self) -> int:
        """1 + the largest relation id on an edge (0 without edges)."""
        return self._once("num_rel_seen", lambda: int(self.rel.max()) + 1 if self.rel.numel() else 0)

    @property
    def kernel_rel(self) -> torch.Tensor:
        """Relation ids in CSR order as int32 (half the bytes per edge of the int64 ids) for the fused kernels."""
        return self._once("kernel_rel", lambda: self.rel.to(torch.int32).contiguous())

    def ones(self, dtype, device) -> torch.Tensor:
        return self._once(("ones", dtype), lambda: torch.ones(self.indices.shape[0], dtype=dtype, device=device))

    def normalized_values(self, norm: str, dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """Edge values of the plain (all weights 1) normalised adjacency, in CSR order and in CSC order."""
        def build():
            a, b, _, _ = scales(self.in_degree[:, 0].to(dtype), norm)
            ab = edge_scales(self, a, b)
            vals = ab if ab is not None else self.ones(dtype, self.indptr.device)
            return vals, vals[self.t_pos]
        return self._once(("normalized", norm, dtype), build)

    # -- what relation weights give (kept per step in self.alphas) -----------------------------------------
    def weighted_values(self, alpha: torch.Tensor, norm: str) -> tuple:
        """Edge weights w, normalised edge values a_v w_e b_u, edge scales a_v b_u, and the node scales a, b
        with their derivatives in the degree, for relation weights alpha (num_relations, 1): the torch path's.
        Those given to prepare() are found by identity."""
        hit = self.alphas.find(alpha, ("values", norm))
        if hit is None:
            hit = self.alphas.compute(alpha, ("values", norm), lambda al: self._weighted_values_of(al, norm))
            self.alphas.remember(alpha, ("values", norm), hit)
        return hit

    def _weighted_values_of(self, alpha: torch.Tensor, norm: str) -> tuple:
        w = alpha[:, 0].index_select(0, self.rel)
        a, b, da, db = scales((self.relation_counts(alpha.shape[0], alpha.dtype) @ alpha)[:, 0], norm)
        ab = edge_scales(self, a, b)
        return w, w * ab if ab is not None else w, ab, a, b, da, db

    def node_scales(self, alpha: torch.Tensor, norm: str, kernels) -> tuple:
        """For relation weights alpha (num_relations, 1), the fused kernels' inputs: alpha as a vector, the
        destination and source scales a, b (ones where the norm has none) and ka = (da/ddeg) / a, kb likewise.
        Those given to prepare() are found by identity."""
        hit = self.alphas.find(alpha, ("scales", norm))
        if hit is None:
            hit = self.alphas.compute(alpha, ("scales", norm),
                                      lambda al: self._node_scales_of(al.t(), norm, kernels)[0])
            self.alphas.remember(alpha, ("scales", norm), hit)
        return hit

    def prepare(self, alphas: torch.Tensor | list[torch.Tensor], norm: str, key=None, keep: tuple = ()) -> None:
        """Computes now what normalized_spmm(h, alpha, norm) will need of these relation weights, and lets it find
        that by the identity of `alpha`. `alphas`: one layer's weights (num_relations, 1) or a list of several
        layers' (on the fused kernels one call for all). key: names the weights' values (see
        regnn.core.alpha_cache; `keep` holds the objects whose ids it holds), so that later passes with the same
        values find them too; None: computed for this pass only. A model calls this for all its layers back to
        back before propagating (REGNN.propagate): inside a layer, after its large operations, the same small
        steps take several times longer."""
        alphas = [alphas] if isinstance(alphas, torch.Tensor) else list(alphas)
        alphas = [al for al in alphas if al.shape[1] == 1 and al.dtype in (torch.float32, torch.float64)]
        if not alphas:
            return
        if len({(al.shape, al.dtype, al.device) for al in alphas}) > 1:  # not stackable together
            for i, al in enumerate(alphas):
                self.prepare(al, norm, None if key is None else (key, i), keep)
            return
        if self.num_relations_seen > alphas[0].shape[0]:  # too few weights: normalized_spmm says so
            return
        kernels = self.fused_kernels(alphas[0])
        if kernels is None:
            for i, al in enumerate(alphas):
                hit = self.alphas.compute(al, ("values", norm), lambda a: self._weighted_values_of(a, norm),
                                          None if key is None else (key, i), keep)
                self.alphas.remember(al, ("values", norm), hit)
            return
        with torch.no_grad():
            stacked = torch.stack(alphas)[:, :, 0]  # (layers, num_relations)
        found = self.alphas.compute(stacked, ("scales", norm), lambda st: self._node_scales_of(st, norm, kernels),
                                    key, keep)
        for al, sc in zip(alphas, found):
            self.alphas.remember(al, ("scales", norm), sc)

    def _node_scales_of(self, alphas: torch.Tensor, norm: str, kernels) -> list[tuple]:
        """node_scales' tuple for each row of alphas (layers, num_relations), from one kernel call."""
        alphas = alphas.contiguous()
        a, b, ka, kb = kernels.scales(self.relation_counts(alphas.shape[1], alphas.dtype), alphas, NORM_CODES[norm])
        if norm != "both":  # the sources are not scaled: ones over every source (blocks have more)
            ones = torch.ones(self.num_src, dtype=alphas.dtype, device=alphas.device)
        return [(alphas[i], a[i], b[i] if norm == "both" else ones, ka[i], kb[i]) for i in range(alphas.shape[0])]

    def relation_counts(self, num_relations: int, dtype=torch.float32) -> torch.Tensor:
        """(num_dst, num_relations) number of in-edges of each relation at every destination."""
        def build():
            if dtype != torch.float32:  # counts are whole numbers: exact in every float type
                return self.relation_counts(num_relations).to(dtype)
            c = torch.zeros(self.num_dst, num_relations, dtype=dtype, device=self.indptr.device)
            c.index_put_((self.dst_of, self.rel), torch.ones_like(self.rel, dtype=dtype), accumulate=True)
            return c
        return self._once(("relation_counts", num_relations, dtype), build)

    def to(self, device, backend: Backend | None = None) -> "Adjacency":
        """The same graph on `device`, with `backend` or the one chosen there (the fused kernels stay off on CPU
        where they are off here)."""
        device = torch.device(device)
        if backend is None:
            off = self.backend.kernels is None and self.indptr.device.type == "cpu"
            backend = choose_backend(device, kernels=False if off else None)
        moved = Adjacency.__new__(Adjacency)
        moved.__dict__.update({k: (v.to(device) if isinstance(v, torch.Tensor) else v)
                               for k, v in self.__dict__.items()})
        moved.backend, moved._derived, moved.alphas = backend, {}, AlphaCache()  # caches rebuilt there
        return moved


def segment_offsets(index: torch.Tensor, n: int) -> torch.Tensor:
    """indptr of the segments of sorted ids `index` over n rows."""
    counts = torch.bincount(index, minlength=n)
    if counts.shape[0] > n:
        raise ValueError(f"node ids up to {counts.shape[0] - 1} do not fit {n} nodes")
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)])
