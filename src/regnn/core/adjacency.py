"""Fast weighted aggregation over a DGL graph or sampled block: out[v] = sum over edges u->v of w_e * h[u].

DGL's CPU kernel for u_mul_e_sum with a broadcast edge weight is ~8x slower than its unweighted copy_u_sum,
which would make RE-GNN pay for every edge weight. Here the graph is held as CSR (rows = destinations) and
aggregation is torch's sparse CSR matmul, whose cost does not depend on the values. GCN's degree scalings go
into the edge values (a pass over the edges, not two over the node features). The backward pass gives the
gradient of h by the transposed CSR matmul and the gradient of the edge weights by one sampled dense product
(SDDMM); per-relation and per-node sums of edge quantities are index_add_ reductions on CPU and sorted
segment sums elsewhere (Adjacency.segment_sum).

That is the pure-torch path. On CPU, where the fused C++ kernels could be built (regnn.core.kernels), the
relation-weighted aggregation runs on them instead (_GcnAggregateFused): no per-edge arrays per step, and the
relation-weight gradient comes out of the pass that computes the gradient of h.
"""
from __future__ import annotations

import warnings

import dgl
import torch
from dgl.nn.functional import edge_softmax

from regnn.core.kernels import load_kernels

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta", category=UserWarning)


class Adjacency:
    """CSR (destination rows) and CSC views of a graph or block, plus the relation id of every edge.

    Every per-edge tensor here is in CSR order, and `graph` is the same graph with its edges in that order, so
    DGL's edge-wise ops (edge_softmax, u_add_v) on `graph` line up with them.
    """

    def __init__(self, g: dgl.DGLGraph, rel: torch.Tensor | None = None):
        indptr, indices, eid = g.adj_tensors("csc")  # for every destination: its in-edges
        rel = g.edata["rel"] if rel is None and "rel" in g.edata else rel
        self._set_arrays(g.num_dst_nodes(), g.num_src_nodes(), indptr, indices, eid, *g.adj_tensors("csr"), rel)
        if self.perm is None:
            self.graph = g
        elif g.is_block:
            self.graph = dgl.create_block((indices, self.dst_of), num_src_nodes=self.num_src,
                                          num_dst_nodes=self.num_dst)
        else:
            self.graph = dgl.graph((indices, self.dst_of), num_nodes=self.num_dst)

    @classmethod
    def from_arrays(cls, num_dst: int, num_src: int, indptr, indices, eid, t_indptr, t_indices, t_eid,
                    rel: torch.Tensor | None = None) -> "Adjacency":
        """From the CSC and CSR arrays (as DGL's adj_tensors gives them) with no DGL graph: every layer works
        (the attention layers' edge-wise ops run in torch, see u_add_v and edge_softmax), and nothing of DGL is
        called (the module still imports it: scripts/device_train.py puts a stand-in where DGL is missing)."""
        self = cls.__new__(cls)
        self._set_arrays(num_dst, num_src, indptr, indices, eid, t_indptr, t_indices, t_eid, rel)
        self.graph = None
        return self

    def _set_arrays(self, num_dst, num_src, indptr, indices, eid, t_indptr, t_indices, t_eid, rel) -> None:
        self.num_dst, self.num_src = num_dst, num_src
        self.indptr, self.indices = indptr, indices
        self.t_indptr, self.t_indices = t_indptr, t_indices
        e = indices.shape[0]
        self.perm = None if torch.equal(eid, torch.arange(e, device=eid.device)) else eid  # csr position -> edge id
        pos = torch.empty_like(eid)
        pos[eid] = torch.arange(e, device=eid.device)
        self.t_pos = pos[t_eid]  # csc position -> csr position
        self.dst_of = torch.repeat_interleave(torch.arange(self.num_dst, device=indptr.device), indptr.diff())
        self.in_degree = indptr.diff().to(torch.float32).unsqueeze(-1)
        self.rel = None if rel is None else (rel if self.perm is None else rel[self.perm])  # csr order
        self._rel_counts = None

    # -- relation weights -> edges and degrees ------------------------------------------------------------
    def edge_weights(self, alpha: torch.Tensor) -> torch.Tensor:
        """(E, heads) weight of every edge in CSR order from the (num_relations, heads) relation weights."""
        return self.gather(alpha, "rel")

    def gather(self, x: torch.Tensor, by: str) -> torch.Tensor:
        """x's row for every edge in CSR order: of its source (by="src": x has a row per source), destination
        ("dst") or relation ("rel"). The gradient sums per row with segment_sum (index_add_ on CPU, as
        index_select's own backward; sorted segments elsewhere)."""
        return _GatherEdges.apply(x, self, by)

    def weighted_in_degree(self, alpha: torch.Tensor) -> torch.Tensor:
        """(num_dst, heads) sum of incoming edge weights: counts of in-edges per relation @ alpha."""
        return self.relation_counts(alpha.shape[0], alpha.dtype) @ alpha

    # -- edge-wise ops (the attention layers') ------------------------------------------------------------
    def u_add_v(self, src_feat: torch.Tensor, dst_feat: torch.Tensor) -> torch.Tensor:
        """src_feat[u] + dst_feat[v] for every edge u -> v, in CSR order: DGL's u_add_v on `graph`, or the same
        sum by index_select where there is no DGL graph (from_arrays: a CUDA machine without DGL's CUDA build)."""
        if self.graph is not None:
            return dgl.ops.u_add_v(self.graph, src_feat, dst_feat)
        return self.gather(src_feat, "src") + self.gather(dst_feat, "dst")

    def edge_softmax(self, score: torch.Tensor) -> torch.Tensor:
        """Softmax of score (E, ...) over the in-edges of every destination (CSR order): DGL's edge_softmax on
        `graph`, else in torch (max per destination for stability, exp, sums per destination)."""
        if self.graph is not None:
            return edge_softmax(self.graph, score)
        dst = self.dst_of.view(-1, *([1] * (score.dim() - 1))).expand_as(score)
        top = torch.full((self.num_dst, *score.shape[1:]), float("-inf"), dtype=score.dtype, device=score.device)
        top = top.scatter_reduce_(0, dst, score.detach(), "amax", include_self=True)
        ex = torch.exp(score - top.index_select(0, self.dst_of))
        return ex / self.gather(self.segment_sum(ex, "dst", self.num_dst), "dst")

    def segment_sum(self, values: torch.Tensor, by: str, n: int) -> torch.Tensor:
        """Sums of per-edge values (E, ...) in CSR order for every destination (by="dst"), source ("src") or
        relation id ("rel"): (n, ...).

        On CPU one index_add_. Elsewhere sums over sorted segments (the edges are already sorted by destination;
        by source and by relation through a permutation kept per graph): deterministic, and fast where CUDA's
        deterministic index_add_ is an index_put_ that walks every run of equal indices serially (2.7 ms for one
        sum over DBLP's 10 relations on an H100, 89% of an RE-GCN epoch's GPU time)."""
        if not _sorted_sums(values):
            return torch.zeros(n, *values.shape[1:], dtype=values.dtype, device=values.device).index_add_(
                0, self.edge_ids(by), values)
        order, offsets = self._segments(by, n)
        v = values if order is None else values.index_select(0, order)
        return torch.segment_reduce(v, "sum", offsets=offsets, axis=0, initial=0)

    def edge_ids(self, by: str) -> torch.Tensor:
        """Every edge's destination (by="dst"), source ("src") or relation id ("rel"), in CSR order."""
        return {"dst": self.dst_of, "src": self.indices, "rel": self.rel}[by]

    def _segments(self, by: str, n: int) -> tuple[torch.Tensor | None, torch.Tensor]:
        """(order of the edges that sorts them by `by` or None if they are sorted already, offsets of the n segments)."""
        cache = self.__dict__.setdefault("_segment_cache", {})
        if (by, n) not in cache:
            if by == "dst" and n == self.num_dst:
                cache[by, n] = (None, self.indptr)
            elif by == "src" and n == self.num_src:
                cache[by, n] = (self.t_pos, self.t_indptr)  # CSC order: sorted by source
            else:
                index = self.edge_ids(by)
                counts = torch.bincount(index, minlength=n)
                if counts.shape[0] > n:
                    raise ValueError(f"segment_sum: ids up to {counts.shape[0] - 1} do not fit {n} segments")
                offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
                cache[by, n] = (torch.sort(index, stable=True).indices, offsets)
        return cache[by, n]

    # -- aggregation --------------------------------------------------------------------------------------
    def spmm(self, h: torch.Tensor, w: torch.Tensor | None = None) -> torch.Tensor:
        """sum_{u->v} w_e h[u] for every destination v; w in CSR order (E,) or None for all ones."""
        with full_precision(h):
            return _CsrSpmm.apply(at_least_fp32(h), None if w is None else at_least_fp32(w), self)

    def normalized_spmm(self, h: torch.Tensor, alpha: torch.Tensor | None, norm: str = "both") -> torch.Tensor:
        """GCN aggregation D^-1/2 A_w D^-1/2 h ("both"), D^-1 A_w h ("right") or A_w h ("none").

        A_w holds the relation weight alpha[rel(e)] on every edge (all ones when alpha is None) and D its
        weighted in-degree, clamped at 1. One fused autograd op: the gradients of alpha through the edge weights
        and through the degrees come from one SDDMM and two node-wise dot products, with no per-edge scatter.
        """
        if norm == "both" and self.num_src != self.num_dst:
            raise ValueError("norm='both' needs the source degrees of the whole graph; on sampled blocks use "
                             "norm='right' (mean over the weighted in-edges)")
        with full_precision(h):
            h = at_least_fp32(h)
            if alpha is None:
                return _GcnAggregate.apply(h, None, self, norm)
            alpha = at_least_fp32(alpha if alpha.shape[1] == 1 else alpha[:, :1])  # no slice node for one head
            kernels = self._fused_kernels(h) if h.dtype == alpha.dtype else None
            if kernels is not None and self.num_relations_seen > alpha.shape[0]:
                raise ValueError(f"the graph has relation ids up to {self.num_relations_seen - 1}, but "
                                 f"{alpha.shape[0]} relation weights were given")
            if kernels is not None:
                if torch.is_grad_enabled() and (h.requires_grad or alpha.requires_grad):
                    return _GcnAggregateFused.apply(h, alpha, self, norm, kernels)
                al, a, b, _, _ = self.node_scales(alpha, norm, kernels)  # evaluation: no autograd record
                return kernels.forward(self.indptr, self.indices, self.kernel_rel, al, a, b, h.contiguous())
            return _GcnAggregate.apply(h, alpha, self, norm)

    def kernel_csc(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(destination, relation) of every edge in source-major order, each source's edges grouped by relation:
        the fused backward handles one run of a relation at a time (t_indptr delimits the sources)."""
        if getattr(self, "_kernel_csc", None) is None:
            t_rel = self.rel.index_select(0, self.t_pos)
            src = torch.repeat_interleave(torch.arange(self.num_src, device=t_rel.device), self.t_indptr.diff())
            order = torch.sort(src * (int(t_rel.max()) + 1 if t_rel.numel() else 1) + t_rel, stable=True).indices
            self._kernel_csc = (self.t_indices.index_select(0, order).contiguous(),
                                t_rel.index_select(0, order).to(torch.int32).contiguous())
        return self._kernel_csc

    @property
    def num_relations_seen(self) -> int:
        """1 + the largest relation id on an edge (0 without edges)."""
        if getattr(self, "_num_rel_seen", None) is None:
            self._num_rel_seen = int(self.rel.max()) + 1 if self.rel.numel() else 0
        return self._num_rel_seen

    @property
    def kernel_rel(self) -> torch.Tensor:
        """Relation ids in CSR order as int32 (half the bytes per edge of the int64 ids) for the fused kernels."""
        if getattr(self, "_kernel_rel", None) is None:
            self._kernel_rel = self.rel.to(torch.int32).contiguous()
        return self._kernel_rel

    def _ones(self, dtype, device) -> torch.Tensor:
        if getattr(self, "_ones_cache", None) is None or self._ones_cache.dtype != dtype:
            self._ones_cache = torch.ones(self.indices.shape[0], dtype=dtype, device=device)
        return self._ones_cache

    def normalized_values(self, norm: str, dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """Edge values of the plain (all weights 1) normalised adjacency, in CSR order and in CSC order."""
        cache = self.__dict__.setdefault("_norm_cache", {})
        key = (norm, dtype)
        if key not in cache:
            a, b, _, _ = _scales(self.in_degree[:, 0].to(dtype), norm)
            ab = _edge_scales(self, a, b)
            vals = ab if ab is not None else self._ones(dtype, self.indptr.device)
            cache[key] = (vals, vals[self.t_pos])
        return cache[key]

    def weighted_values(self, alpha: torch.Tensor, norm: str) -> tuple:
        """Edge weights w, normalised edge values a_v w_e b_u, edge scales a_v b_u, and the node scales a, b
        with their derivatives in the degree, for relation weights alpha (num_relations, 1).

        Kept for the last few alphas seen: a training epoch's evaluation pass and the next epoch's training
        pass see the same weights (no optimiser step between them), so every layer computes these once per
        step instead of twice.
        """
        def compute(alpha):
            w = alpha[:, 0].index_select(0, self.rel)
            a, b, da, db = _scales((self.relation_counts(alpha.shape[0], alpha.dtype) @ alpha)[:, 0], norm)
            ab = _edge_scales(self, a, b)
            return w, w * ab if ab is not None else w, ab, a, b, da, db

        return self._per_alpha(("values", norm), alpha, compute)

    def _per_alpha(self, kind: tuple, alpha: torch.Tensor, compute) -> tuple:
        """compute(alpha detached), kept for the last few alphas seen (per kind): a training epoch's evaluation
        pass and the next epoch's training pass see the same weights (no optimiser step between them)."""
        key = (*kind, alpha.dtype, alpha.device, alpha.detach().cpu().numpy().tobytes())
        cache = self.__dict__.setdefault("_weighted_cache", {})
        hit = cache.pop(key, None)
        if hit is None:
            with torch.no_grad():
                hit = compute(alpha.detach())
        _remember(cache, key, hit)
        return hit

    def prepare(self, alphas: torch.Tensor | list[torch.Tensor], norm: str) -> None:
        """Computes now what normalized_spmm(h, alpha, norm) will need of these relation weights on the fused
        kernels, and lets it find that by the identity of `alpha` (no key from alpha's values). `alphas`: one
        layer's weights (num_relations, 1) or a list of several layers' (one kernel call and one cache lookup for
        all). A model calls this for all its layers back to back before propagating (REGNN.propagate): inside a
        layer, after its large operations, the same small steps take several times longer."""
        alphas = [alphas] if isinstance(alphas, torch.Tensor) else list(alphas)
        alphas = [al for al in alphas if al.shape[1] == 1 and al.dtype in (torch.float32, torch.float64)]
        groups: dict[tuple, list] = {}  # stackable together
        for al in alphas:
            groups.setdefault((al.shape, al.dtype, al.device), []).append(al)
        if len(groups) > 1:
            for group in groups.values():
                self.prepare(group, norm)
            return
        kernels = self._fused_kernels(alphas[0]) if alphas else None
        if kernels is None or self.num_relations_seen > alphas[0].shape[0]:  # too few weights: normalized_spmm says so
            return
        with torch.no_grad():
            stacked = torch.stack(alphas)[:, :, 0]  # (layers, num_relations)
        scales = self._per_alpha(("scales", norm, len(alphas)), stacked,
                                 lambda st: self._node_scales_of(st, norm, kernels))
        prepared = self.__dict__.setdefault("_prepared", {})
        for al, sc in zip(alphas, scales):
            _remember(prepared, (id(al), norm), (al, al._version, sc))

    def _fused_kernels(self, t: torch.Tensor):
        """The fused kernels where they serve tensors like t, else None: they run on CPU tensors, and their backward
        visits destinations as the first sources (full graphs, DGL blocks)."""
        return load_kernels() if t.device.type == "cpu" and self.num_dst <= self.num_src else None

    def node_scales(self, alpha: torch.Tensor, norm: str, kernels) -> tuple:
        """For relation weights alpha (num_relations, 1), the fused kernels' inputs: alpha as a vector, the
        destination and source scales a, b (ones where the norm has none) and ka = (da/ddeg) / a, kb likewise.
        Kept for the last few alphas, as weighted_values (an epoch's evaluation and the next training step share
        them); those given to prepare() are found by identity."""
        hit = self.__dict__.get("_prepared", {}).get((id(alpha), norm))
        if hit is not None and hit[0] is alpha and hit[1] == alpha._version:  # the same tensor, not changed in place
            return hit[2]

        return self._per_alpha(("scales", norm), alpha, lambda al: self._node_scales_of(al.t(), norm, kernels)[0])

    def _node_scales_of(self, alphas: torch.Tensor, norm: str, kernels) -> list[tuple]:
        """node_scales' tuple for each row of alphas (layers, num_relations), from one kernel call."""
        alphas = alphas.contiguous()
        a, b, ka, kb = kernels.scales(self.relation_counts(alphas.shape[1], alphas.dtype), alphas, NORM_CODES[norm])
        if norm != "both":  # the sources are not scaled: ones over every source (blocks have more)
            ones = torch.ones(self.num_src, dtype=alphas.dtype, device=alphas.device)
        return [(alphas[i], a[i], b[i] if norm == "both" else ones, ka[i], kb[i]) for i in range(alphas.shape[0])]

    def relation_counts(self, num_relations: int, dtype=torch.float32) -> torch.Tensor:
        """(num_dst, num_relations) number of in-edges of each relation at every destination."""
        if self._rel_counts is None or self._rel_counts.shape[1] != num_relations:
            c = torch.zeros(self.num_dst, num_relations, dtype=dtype, device=self.indptr.device)
            c.index_put_((self.dst_of, self.rel), torch.ones_like(self.rel, dtype=dtype), accumulate=True)
            self._rel_counts = c
        if self._rel_counts.dtype != dtype:  # counts are whole numbers: exact in every float type
            self._rel_counts = self._rel_counts.to(dtype)
        return self._rel_counts

    def to(self, device) -> "Adjacency":
        if self.graph is not None:
            return Adjacency(self.graph.to(device), None if self.rel is None else self.rel.to(device))
        moved = Adjacency.__new__(Adjacency)  # from_arrays: its arrays, moved (caches are rebuilt there)
        for k, v in self.__dict__.items():
            if not k.startswith("_"):
                moved.__dict__[k] = v.to(device) if isinstance(v, torch.Tensor) else v
        moved._rel_counts = None
        return moved


def _remember(cache: dict, key, value, most: int = 2 * 8) -> None:
    """cache[key] = value as its most recent entry, dropping the oldest beyond `most` (two alphas per layer cover
    an epoch of an 8-layer model)."""
    cache[key] = value
    while len(cache) > most:
        cache.pop(next(iter(cache)))


def full_precision(t: torch.Tensor):
    """Sparse products always run in float32: under bf16 autocast (precision=bf16) only dense layers go lower."""
    return torch.autocast(device_type=t.device.type, enabled=False)


def at_least_fp32(t: torch.Tensor) -> torch.Tensor:
    """bfloat16/float16 (from autocast) -> float32; float32 and float64 stay as they are."""
    return t.float() if t.is_floating_point() and t.element_size() < 4 else t


def _csr(indptr, indices, values, shape):
    return torch.sparse_csr_tensor(indptr, indices, values, shape)


def _csr_mm(indptr, indices, values, shape, dense: torch.Tensor) -> torch.Tensor:
    """CSR(indptr, indices, values) @ dense, written straight into a fresh output (the plain `@` zero-fills
    an output and copies the product into it: two extra passes over a (rows, cols) array)."""
    out = torch.empty(shape[0], dense.shape[1], dtype=dense.dtype, device=dense.device)
    return torch.addmm(out, _csr(indptr, indices, values, shape), dense, beta=0, out=out)  # beta=0: out unread


class _CsrSpmm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, w, adj: Adjacency):
        vals = w if w is not None else adj._ones(h.dtype, h.device)
        ctx.adj = adj
        ctx.save_for_backward(h, vals)
        return _csr_mm(adj.indptr, adj.indices, vals, (adj.num_dst, adj.num_src), h)

    @staticmethod
    def backward(ctx, grad):
        h, vals = ctx.saved_tensors
        adj = ctx.adj
        grad = grad.contiguous()
        gh = gw = None
        if ctx.needs_input_grad[0]:
            gh = _csr_mm(adj.t_indptr, adj.t_indices, vals.index_select(0, adj.t_pos), (adj.num_src, adj.num_dst),
                         grad)
        if ctx.needs_input_grad[1]:
            gw = _edge_dots(adj, grad, h)
        return gh, gw, None


def _edge_dots(adj: Adjacency, dst_feat: torch.Tensor, src_feat: torch.Tensor) -> torch.Tensor:
    """<dst_feat[v], src_feat[u]> for every edge u->v, in CSR order (an SDDMM).

    On CPU torch's sampled_addmm is the fastest here from 8 columns up but ~10x slower below; DGL's u_dot_v wins
    there. Elsewhere, and for an Adjacency built by from_arrays (no DGL graph), sampled_addmm throughout.
    """
    if dst_feat.shape[1] < 8 and dst_feat.device.type == "cpu" and adj.graph is not None:
        return dgl.ops.u_dot_v(adj.graph, src_feat, dst_feat)[:, 0]
    pattern = _csr(adj.indptr, adj.indices, adj._ones(dst_feat.dtype, dst_feat.device), (adj.num_dst, adj.num_src))
    return torch.sparse.sampled_addmm(pattern, dst_feat, src_feat.t(), beta=0.0).values()


def _scales(deg: torch.Tensor, norm: str):
    """Destination scale a, source scale b and their derivatives in the (clamped) degree."""
    d = deg.clamp(min=1)
    live = (deg >= 1).to(deg.dtype)  # the clamp passes no gradient
    if norm == "both":
        a = d.pow(-0.5)
        return a, a, -0.5 * a / d * live, -0.5 * a / d * live
    if norm == "right":
        a = 1.0 / d
        return a, None, -a * a * live, None
    return None, None, None, None


def _edge_scales(adj: Adjacency, a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor | None:
    """a[v] * b[u] for every edge u->v (CSR order); None when there is no normalisation."""
    if a is None:
        return None
    ab = a.index_select(0, adj.dst_of)  # index_select: ~2.5x faster than a[idx] on CPU
    return ab * b.index_select(0, adj.indices) if b is not None else ab


def _sorted_sums(values: torch.Tensor) -> bool:
    """Whether Adjacency.segment_sum sums over sorted segments (off CPU) rather than with index_add_ (CPU)."""
    return values.device.type != "cpu"


class _GcnAggregate(torch.autograd.Function):
    """out = a * (A_w (b * h)) with a, b functions of the weighted in-degree (see Adjacency.normalized_spmm).

    The scales go into the edge values (one pass over E numbers instead of two over the (N, d) features):
    out = A_n h with A_n[v, u] = a_v w_e b_u. Backward: grad h = A_n^T grad, and from one SDDMM
    s_e = <grad_v, h_u>: dL/dw_e = a_v b_u s_e, dL/da_v = sum_e w_e b_u s_e, dL/db_u = sum_e w_e a_v s_e
    (both sums of the same per-edge product over rows and over columns), so the relation weights' gradient
    costs one SDDMM and a few passes over the edges, never a pass over the features.
    """

    @staticmethod
    def forward(ctx, h, alpha, adj: Adjacency, norm: str):
        shape = (adj.num_dst, adj.num_src)
        ctx.adj, ctx.num_relations = adj, (0 if alpha is None else alpha.shape[0])
        if alpha is None:  # the plain graph: constant normalised values, built once per graph
            vals, vals_t = adj.normalized_values(norm, h.dtype)
            ctx.save_for_backward(vals_t)
            return _csr_mm(adj.indptr, adj.indices, vals, shape, h)
        w, vals, ab, a, b, da, db = adj.weighted_values(alpha, norm)
        ctx.save_for_backward(h, w, vals, ab, a, b, da, db)
        return _csr_mm(adj.indptr, adj.indices, vals, shape, h)

    @staticmethod
    def backward(ctx, grad):
        adj = ctx.adj
        grad = grad.contiguous()
        shape_t = (adj.num_src, adj.num_dst)
        if ctx.num_relations == 0:
            (vals_t,) = ctx.saved_tensors
            gh = _csr_mm(adj.t_indptr, adj.t_indices, vals_t, shape_t, grad) if ctx.needs_input_grad[0] else None
            return gh, None, None, None
        h, w, vals, ab, a, b, da, db = ctx.saved_tensors
        gh = None
        if ctx.needs_input_grad[0]:
            gh = _csr_mm(adj.t_indptr, adj.t_indices, vals.index_select(0, adj.t_pos), shape_t, grad)
        galpha = None
        if ctx.needs_input_grad[1]:
            s = _edge_dots(adj, grad, h)  # <grad_v, h_u> per edge
            gw = s * ab if ab is not None else s  # dL/dw_e
            galpha = adj.segment_sum(gw, "rel", ctx.num_relations)
            if a is not None:
                ws = vals * s  # w_e a_v b_u s_e: divided by a_v (b_u) it is the edge's share of dL/da_v (dL/db_u)
                gdeg = adj.segment_sum(ws, "dst", adj.num_dst) / a * da
                if b is not None:
                    gdeg = gdeg + adj.segment_sum(ws, "src", adj.num_src) / b * db
                galpha = galpha + adj.relation_counts(ctx.num_relations, grad.dtype).t() @ gdeg
            galpha = galpha.unsqueeze(-1)
        return gh, galpha, None, None


class _GatherEdges(torch.autograd.Function):
    """x[index] per edge (Adjacency.gather), whose backward sums the gradient per row with Adjacency.segment_sum:
    on CPU that is index_add_ (as index_select's own backward; much faster than index_put there), elsewhere sorted
    segments (CUDA's deterministic index_add_ walks runs of equal indices serially)."""

    @staticmethod
    def forward(ctx, x, adj: Adjacency, by: str):
        ctx.adj, ctx.by, ctx.n = adj, by, x.shape[0]
        return x.index_select(0, adj.edge_ids(by))

    @staticmethod
    def backward(ctx, grad):
        return ctx.adj.segment_sum(grad.contiguous(), ctx.by, ctx.n), None, None


NORM_CODES = {"none": 0, "right": 1, "both": 2}


class _GcnAggregateFused(torch.autograd.Function):
    """Adjacency.normalized_spmm with relation weights on the fused CPU kernels (regnn.core.kernels).

    The forward computes each edge's value alpha[rel] a_v b_u on the fly while aggregating (no per-step edge
    arrays). The backward needs, besides grad h = A_n^T G, the sums of s_e = <G_v, h_u> that _GcnAggregate gets
    from an SDDMM: per relation sum a_v b_u s_e, and per node the in- and out-sums of w_e a_v b_u s_e (through
    the degrees). One pass over the edges by source accumulates a_v G_v per run of one relation, from which come
    grad h, the relation sums and the out-sums (a dot per source and relation); the in-sums are <G_v, out_v>
    with the forward's output; the degree part is added up in the same call. About the cost of the plain
    transposed product, where the torch path adds an SDDMM and three scatter-adds over the edges.
    """

    @staticmethod
    def forward(ctx, h, alpha, adj: Adjacency, norm: str, kernels):
        al, a, b, ka, kb = adj.node_scales(alpha, norm, kernels)
        out = kernels.forward(adj.indptr, adj.indices, adj.kernel_rel, al, a, b, h.contiguous())
        ctx.adj, ctx.kernels, ctx.norm = adj, kernels, norm
        ctx.save_for_backward(h, out, al, a, b, ka, kb)
        return out

    @staticmethod
    def backward(ctx, grad):
        adj = ctx.adj
        h, out, al, a, b, ka, kb = ctx.saved_tensors
        need_h, need_alpha = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        gh, galpha = ctx.kernels.backward(adj.t_indptr, *adj.kernel_csc(), al, a, b, grad.contiguous(), h.contiguous(),
                                          out, adj.relation_counts(al.shape[0], al.dtype), ka, kb,
                                          ctx.norm != "none", ctx.norm == "both", need_h, need_alpha)
        return (gh if need_h else None), (galpha.unsqueeze(-1) if need_alpha else None), None, None, None
