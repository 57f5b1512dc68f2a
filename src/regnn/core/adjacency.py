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
from regnn.core.normalisation import Normalisation


class Adjacency(Normalisation):
    """CSR (destination rows) and CSC views of a graph or block, the relation id of every edge (CSR order), the
    backend that computes on them, and what is derived from them on first use; the normalised, relation-weighted
    products come from regnn.core.normalisation."""

    def __init__(self, g, rel: torch.Tensor | None = None, backend: Backend | None = None):
        """From a graph that gives its CSC and CSR arrays as DGL's adj_tensors does (a DGL graph or block);
        rel: relation id per edge in g's edge order (default: g.edata["rel"])."""
        indptr, indices, eid = g.adj_tensors("csc")  # for every destination: its in-edges
        rel = g.edata["rel"] if rel is None and "rel" in g.edata else rel
        self._set_arrays(
            g.num_dst_nodes(), g.num_src_nodes(), indptr, indices, eid, *g.adj_tensors("csr"), rel, backend
        )

    @classmethod
    def from_arrays(
        cls,
        num_dst: int,
        num_src: int,
        indptr,
        indices,
        eid,
        t_indptr,
        t_indices,
        t_eid,
        rel: torch.Tensor | None = None,
        backend: Backend | None = None,
    ) -> "Adjacency":
        """From the CSC (in-edges per destination) and CSR (out-edges per source) arrays with edge ids."""
        self = cls.__new__(cls)
        self._set_arrays(num_dst, num_src, indptr, indices, eid, t_indptr, t_indices, t_eid, rel, backend)
        return self

    @classmethod
    def from_edges(
        cls,
        src: torch.Tensor,
        dst: torch.Tensor,
        rel: torch.Tensor | None,
        num_src: int,
        num_dst: int | None = None,
        backend: Backend | None = None,
    ) -> "Adjacency":
        """From edge arrays: edge i goes src[i] -> dst[i] with relation rel[i]; edge ids are positions in them.
        Sorted by destination already (as regnn.data builds them), the edges keep their order."""
        num_dst = num_src if num_dst is None else num_dst
        by_dst = torch.sort(dst, stable=True).indices
        by_src = torch.sort(src, stable=True).indices
        indptr = segment_offsets(dst, num_dst)
        t_indptr = segment_offsets(src, num_src)
        return cls.from_arrays(
            num_dst,
            num_src,
            indptr,
            src.index_select(0, by_dst),
            by_dst,
            t_indptr,
            dst.index_select(0, by_src),
            by_src,
            rel,
            backend,
        )

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
        self._derived = {}  # arrays derived from the structure, built on first use (one dict per mode)
        self.alphas = AlphaCache()  # what the relation weights give, per step (regnn.core.alpha_cache)

    @property
    def _derived(self) -> dict:
        """Arrays derived from the structure, built on first use: one dict per mode, since what is built under
        torch.inference_mode is made of inference tensors, which autograd may not save for backward nor change
        in place outside it (regnn.core.receptive keeps its plans and scratch buffers here too)."""
        return self._derived_modes[torch.is_inference_mode_enabled()]

    @_derived.setter
    def _derived(self, value: dict) -> None:  # emptying it empties both modes' dicts
        self._derived_modes = (value, {})

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

    def kernel_csc(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(destination, relation) of every edge in source-major order, each source's edges grouped by relation:
        the fused backward handles one run of a relation at a time (t_indptr delimits the sources)."""

        def build():
            t_rel = self.rel.index_select(0, self.t_pos)
            src = torch.repeat_interleave(torch.arange(self.num_src, device=t_rel.device), self.t_indptr.diff())
            order = torch.sort(src * (int(t_rel.max()) + 1 if t_rel.numel() else 1) + t_rel, stable=True).indices
            return (
                self.t_indices.index_select(0, order).contiguous(),
                t_rel.index_select(0, order).to(torch.int32).contiguous(),
            )

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
        moved.__dict__.update(
            {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in self.__dict__.items()}
        )
        moved.backend, moved._derived, moved.alphas = backend, {}, AlphaCache()  # caches rebuilt there
        return moved


def segment_offsets(index: torch.Tensor, n: int) -> torch.Tensor:
    """indptr of the segments of sorted ids `index` over n rows."""
    counts = torch.bincount(index, minlength=n)
    if counts.shape[0] > n:
        raise ValueError(f"node ids up to {counts.shape[0] - 1} do not fit {n} nodes")
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)])
