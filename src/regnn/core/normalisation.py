"""What a graph computes for GCN aggregation: products with the relation-weighted adjacency, normalised by its
weighted degrees (on whole graphs and on sampled blocks), and the per-step cache of what one set of relation
weights gives (edge values, node scales). A mixin of regnn.core.adjacency.Adjacency, whose arrays it reads:
indptr/indices (CSR), t_pos (CSC order), rel, in_degree, source_counts, edge_scale, num_src/num_dst, backend,
alphas (regnn.core.alpha_cache.AlphaCache)."""

from __future__ import annotations

import torch

from regnn.core.edge_ops import at_least_fp32, full_precision
from regnn.core.gcn_aggregate import NORM_CODES, CsrSpmm, GcnAggregate, GcnAggregateFused, edge_scales, scales


class Normalisation:
    """Normalised, relation-weighted aggregation on an Adjacency (see the module docstring)."""

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
                raise ValueError(
                    "norm='both' needs the source degrees of the whole graph; on sampled blocks use "
                    "norm='right' (mean over the weighted in-edges)"
                )
            return self._block_both(h, alpha)
        with full_precision(h):
            h = at_least_fp32(h)
            if alpha is None:
                return GcnAggregate.apply(h, None, self, norm)
            alpha = at_least_fp32(alpha if alpha.shape[1] == 1 else alpha[:, :1])  # no slice node for one head
            kernels = self.fused_kernels(h) if h.dtype == alpha.dtype else None
            if kernels is not None and self.num_relations_seen > alpha.shape[0]:
                raise ValueError(
                    f"the graph has relation ids up to {self.num_relations_seen - 1}, but "
                    f"{alpha.shape[0]} relation weights were given"
                )
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
            raise ValueError(
                "this layer needs the whole graph's degrees of a block's sources: sample with "
                "SampledGraph(whole_graph_degrees=True) and every neighbour (fanout -1)"
            )
        counts = self.source_counts.to(device=self.indptr.device, dtype=dtype if alpha is None else alpha.dtype)
        return counts.sum(1) if alpha is None else (counts @ alpha)[:, 0]

    def fused_kernels(self, t: torch.Tensor):
        """The backend's fused kernels where they serve tensors like t, else None: they run on CPU tensors, and
        their backward visits destinations as the first sources (full graphs, sampled blocks)."""
        kernels = self.backend.kernels
        return kernels if kernels is not None and t.device.type == "cpu" and self.num_dst <= self.num_src else None

    def normalized_values(self, norm: str, dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """Edge values of the plain (all weights 1) normalised adjacency, in CSR order and in CSC order."""

        def build():
            a, b, _, _ = scales(self.in_degree[:, 0].to(dtype), norm)
            ab = edge_scales(self, a, b)
            vals = ab if ab is not None else self.ones(dtype, self.indptr.device)
            return vals, vals[self.t_pos]

        return self._once(("normalized", norm, dtype), build)

    def weighted_values(self, alpha: torch.Tensor, norm: str) -> tuple:
        """Edge weights w, normalised edge values a_v w_e b_u, edge scales a_v b_u, and the node scales a, b
        with their derivatives in the degree, for relation weights alpha (num_relations, 1): the torch path's.
        Those given to prepare() are found by identity; others are computed for this call only (a caller's own
        tensor may be edited through .data before its next call, which no version counter shows)."""
        hit = self.alphas.find(alpha, ("values", norm))
        if hit is None:
            hit = self.alphas.compute(alpha, ("values", norm), lambda al: self._weighted_values_of(al, norm))
        return hit

    def _weighted_values_of(self, alpha: torch.Tensor, norm: str) -> tuple:
        w = alpha[:, 0].index_select(0, self.rel)
        a, b, da, db = scales((self.relation_counts(alpha.shape[0], alpha.dtype) @ alpha)[:, 0], norm)
        ab = edge_scales(self, a, b)
        return w, w * ab if ab is not None else w, ab, a, b, da, db

    def node_scales(self, alpha: torch.Tensor, norm: str, kernels) -> tuple:
        """For relation weights alpha (num_relations, 1), the fused kernels' inputs: alpha as a vector, the
        destination and source scales a, b (ones where the norm has none) and ka = (da/ddeg) / a, kb likewise.
        Those given to prepare() are found by identity; others are computed for this call only, as in
        weighted_values."""
        hit = self.alphas.find(alpha, ("scales", norm))
        if hit is None:
            hit = self.alphas.compute(
                alpha, ("scales", norm), lambda al: self._node_scales_of(al.t(), norm, kernels)[0]
            )
        return hit

    def prepare(self, alphas: torch.Tensor | list[torch.Tensor], norm: str, key=None) -> None:
        """Computes now what normalized_spmm(h, alpha, norm) will need of these relation weights, and lets it find
        that by the identity of `alpha`. `alphas`: one layer's weights (num_relations, 1) or a list of several
        layers' (on the fused kernels one call for all). key: where later passes find them while their weights
        hold the same values (regnn.core.alpha_cache); None: computed for this pass only. A model calls this for
        all its layers back to back before propagating (REGNN.propagate): inside a layer, after its large
        operations, the same small steps take several times longer."""
        alphas = [alphas] if isinstance(alphas, torch.Tensor) else list(alphas)
        alphas = [al for al in alphas if al.shape[1] == 1 and al.dtype in (torch.float32, torch.float64)]
        if not alphas:
            return
        if len({(al.shape, al.dtype, al.device) for al in alphas}) > 1:  # not stackable together
            for i, al in enumerate(alphas):
                self.prepare(al, norm, None if key is None else (key, i))
            return
        if self.num_relations_seen > alphas[0].shape[0]:  # too few weights: normalized_spmm says so
            return
        kernels = self.fused_kernels(alphas[0])
        if kernels is None:
            for i, al in enumerate(alphas):
                hit = self.alphas.compute(
                    al,
                    ("values", norm),
                    lambda a: self._weighted_values_of(a, norm),
                    None if key is None else (key, i),
                )
                self.alphas.remember(al, ("values", norm), hit)
            return
        with torch.no_grad():
            stacked = torch.stack(alphas)[:, :, 0]  # (layers, num_relations)
        found = self.alphas.compute(stacked, ("scales", norm), lambda st: self._node_scales_of(st, norm, kernels), key)
        for al, sc in zip(alphas, found):
            self.alphas.remember(al, ("scales", norm), sc)

    def _node_scales_of(self, alphas: torch.Tensor, norm: str, kernels) -> list[tuple]:
        """node_scales' tuple for each row of alphas (layers, num_relations), from one kernel call."""
        alphas = alphas.contiguous()
        a, b, ka, kb = kernels.scales(self.relation_counts(alphas.shape[1], alphas.dtype), alphas, NORM_CODES[norm])
        if norm != "both":  # the sources are not scaled: ones over every source (blocks have more)
            ones = torch.ones(self.num_src, dtype=alphas.dtype, device=alphas.device)
        return [(alphas[i], a[i], b[i] if norm == "both" else ones, ka[i], kb[i]) for i in range(alphas.shape[0])]
