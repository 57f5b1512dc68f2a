"""Input rows of sampled nodes, and RE-GNN wrapped to run on sampled blocks.

A node type whose features are one-hot ids (no features: the learnable-embedding choice) is, as in full batch,
its one-hot rows times the type's input projection (embed_dim None): the projection's columns of the sampled
nodes, trained by the same optimizer, so that both trainers train one model. For a type too large for a dense
(num_nodes x hidden) weight and its gradient (OGBN-MAG's authors), embed_dim gives it an
`nn.Embedding(num_nodes, embed_dim, sparse=True)` instead: a linear map of one-hot ids is a per-node embedding,
and a sparse one only touches (and only updates, with SparseAdam) the rows of the sampled nodes. The per-type
projection then maps the embedding to the hidden size (a factorised embedding). Fixed features stay where they
are (CPU) and only the sampled rows move to the model's device.
"""

from __future__ import annotations

import torch
from torch import nn

from regnn.nn.propagation import ProjectAfterHop
from regnn.models.regnn import REGNN
from regnn.nn.projection import SparseInputMM
from regnn.names import INPUT_DROPOUT
from regnn.runtime.perf import StepTimer


def is_one_hot_ids(x: torch.Tensor) -> bool:
    """True for the sparse identity matrix that stands for "no features: one-hot node ids"."""
    if not x.is_sparse or x.dim() != 2 or x.shape[0] != x.shape[1] or x._nnz() != x.shape[0]:
        return False
    x = x.coalesce()
    ar = torch.arange(x.shape[0])
    return bool(torch.equal(x.indices()[0], ar) and torch.equal(x.indices()[1], ar) and (x.values() == 1).all())


def learnt_types(features: dict[str, torch.Tensor], embed_dim: int | None) -> list[str]:
    """The node types that get sparse embeddings: those given as one-hot ids, where embed_dim is set."""
    return [t for t, x in features.items() if embed_dim is not None and is_one_hot_ids(x)]


class NodeInputs(nn.Module):
    """Per node type: fixed features (dense or sparse) or a learnable sparse embedding; rows by local id."""

    def __init__(self, features: dict[str, torch.Tensor], embed_dim: int | None = None):
        super().__init__()
        learn = learnt_types(features, embed_dim)
        self.embeddings = nn.ModuleDict({t: nn.Embedding(features[t].shape[0], embed_dim, sparse=True) for t in learn})
        self._fixed = {t: (x.coalesce() if x.is_sparse else x) for t, x in features.items() if t not in learn}
        self.in_dims = {t: (embed_dim if t in learn else int(x.shape[1])) for t, x in features.items()}

    def is_dense(self, ntype: str) -> bool:
        """Whether `ntype` has fixed dense features (rows gathered by `rows`, projected by the caller)."""
        x = self._fixed.get(ntype)
        return x is not None and not x.is_sparse

    def rows(self, ntype: str, local: torch.Tensor) -> torch.Tensor:
        """The fixed dense features of the nodes `local` of `ntype`."""
        x = self._fixed[ntype]
        return x.index_select(0, local.to(x.device))

    def features(self, ntype: str, local: torch.Tensor) -> torch.Tensor:
        """The inputs of the nodes `local` of `ntype` as dense rows (fixed dense features or learnt embeddings), for
        dropout on the input features (trainer.input_dropout=features)."""
        if ntype in self.embeddings:
            return self.embeddings[ntype](local.to(self.embeddings[ntype].weight.device))
        x = self._fixed[ntype]
        if x.is_sparse:
            raise ValueError(
                f"trainer.input_dropout=features drops dense input features, but node type {ntype!r} has sparse "
                "ones (a bag of words, or one-hot ids: give those trainer.embed_dim); use trainer.input_dropout="
                "projected"
            )
        return self.rows(ntype, local)

    def project(self, lin: nn.Linear, ntype: str, local: torch.Tensor) -> torch.Tensor:
        """lin(inputs of the nodes `local` of `ntype`) for learnable embeddings and sparse inputs (multiplied as
        CSR); dense features are gathered by `rows` and projected by SampledREGNN's _Projection."""
        dev = lin.weight.device
        if ntype in self.embeddings:
            return lin(self.embeddings[ntype](local.to(dev)))
        x = self._fixed[ntype]
        rows = x.index_select(0, local.to(x.device)).coalesce().to(dev)
        return SparseInputMM.apply(lin.weight.t(), rows.to_sparse_csr(), rows.t().coalesce().to_sparse_csr()) + lin.bias


def _runs(pos: torch.Tensor, min_run: int = 1024):
    """pos (sorted positions) as pieces: (slice, its index in pos) for each run of >= min_run consecutive
    positions, then (the other positions, their indices) if any."""
    n = pos.numel()
    breaks = torch.nonzero(pos.diff() != 1).view(-1) + 1
    starts = torch.cat([torch.zeros(1, dtype=torch.int64), breaks]).tolist()
    ends = torch.cat([breaks, torch.tensor([n])]).tolist()
    long = [(s, e) for s, e in zip(starts, ends) if e - s >= min_run]
    pieces = [(slice(int(pos[s]), int(pos[s]) + e - s), slice(s, e)) for s, e in long]
    if sum(e - s for s, e in long) < n:
        rest = torch.ones(n, dtype=torch.bool)
        for s, e in long:
            rest[s:e] = False
        idx = torch.nonzero(rest).view(-1)
        pieces.append((pos[idx], idx))
    return pieces


def _place(out: torch.Tensor | None, n: int, pos: torch.Tensor, part: torch.Tensor) -> torch.Tensor:
    """out[pos] = part, out (n rows, allocated on the first call) written in place: the backward gathers rows, with
    no full-size zero fill."""
    if out is None:
        out = part.new_empty(n, part.shape[1])
    out[pos.to(part.device)] = part
    return out


class _Projection(torch.autograd.Function):
    """out[rows] = x W^T + b for pieces (rows, x, k) with the weight and bias of type k: rows a slice (the
    product is written straight into out, and the backward reads the gradient's slice) or an index tensor.
    The inputs are fixed features: only the weights get gradients."""

    @staticmethod
    def forward(ctx, n: int, pieces: list, *params):
        w0 = params[0]
        out = torch.empty(n, w0.shape[0], dtype=w0.dtype, device=w0.device)
        for rows, x, k in pieces:
            w, b = params[2 * k], params[2 * k + 1]
            if isinstance(rows, slice):
                torch.addmm(b, x, w.t(), out=out[rows])
            else:
                out.index_copy_(0, rows.to(out.device), torch.addmm(b, x, w.t()))
        ctx.pieces, ctx.num_params = pieces, len(params)
        return out

    @staticmethod
    def backward(ctx, grad):
        grads: list = [None] * ctx.num_params
        for rows, x, k in ctx.pieces:
            g = grad[rows] if isinstance(rows, slice) else grad.index_select(0, rows.to(grad.device))
            gw, gb = g.t() @ x, g.sum(0)
            grads[2 * k] = gw if grads[2 * k] is None else grads[2 * k] + gw
            grads[2 * k + 1] = gb if grads[2 * k + 1] is None else grads[2 * k + 1] + gb
        return (None, None, *grads)


class SampledREGNN(nn.Module):
    """REGNN on blocks: input rows of the sampled source nodes -> projection -> one layer per block -> scores.

    input_dropout: where the first layer's dropout applies: "projected" (on the projected inputs, as full batch)
    or "features" (on the input features, before the projection). With "features", a first layer that aggregates
    before any weight (GCN) takes its input as the two factors of x W (ProjectAfterHop): the projection then runs
    after the aggregation, on the first hop's destinations instead of on every sampled source, a fraction of the
    rows, and computes the same function (project_after_hop=False projects first; tests compare the two orders).
    """

    def __init__(
        self,
        regnn: REGNN,
        inputs: NodeInputs,
        ntypes: list[str],
        offsets: dict[str, int],
        node_type: torch.Tensor,
        input_dropout: str = "projected",
    ):
        super().__init__()
        if input_dropout not in INPUT_DROPOUT:
            raise ValueError(f"input_dropout must be one of {INPUT_DROPOUT}, got {input_dropout!r}")
        self.input_dropout, self.project_after_hop = input_dropout, True
        self.regnn, self.inputs = regnn, inputs
        self.timer = StepTimer()  # the trainer's, when it profiles
        self.ntypes = list(ntypes)
        self._offsets = [offsets[t] for t in self.ntypes]
        self._node_type = node_type  # (N,) type index of every homogeneous id; not a buffer (DDP broadcasts those)

    @classmethod
    def from_graph(
        cls,
        graph,
        features: dict[str, torch.Tensor],
        num_classes: int,
        *,
        embed_dim: int | None,
        input_dropout: str = "projected",
        **kwargs,
    ) -> "SampledREGNN":
        """The registry's sampled build (ARCHS["regnn"].sampled): graph is the sampler's graph (its node types,
        their offsets and relation types), kwargs REGNN's. The inputs are built before the REGNN, so a seed draws
        the same weights as it always has."""
        inputs = NodeInputs(features, embed_dim=embed_dim)
        regnn = REGNN(in_dims=inputs.in_dims, num_classes=num_classes, relation_types=graph, **kwargs)
        return cls(regnn, inputs, graph.ntypes, graph.offsets, graph.node_type, input_dropout)

    def input_rows(self, ids: torch.Tensor) -> torch.Tensor:
        """(len(ids), hidden) projected inputs of the homogeneous node ids.

        Dense fixed features are projected by one _Projection into one buffer: a long run of one type's rows (as
        SampledGraph.batch lays out the sources) is written and read back as a slice, other rows by index. Other
        inputs (sparse features, learnable embeddings) are projected per type and written in after it."""
        ids = ids.cpu()
        dense, other = [], []
        for i, t, pos in self._types_in(ids):
            (dense if self.inputs.is_dense(t) else other).append((i, t, pos))
        lins = self.regnn.proj.lins
        out = None
        if dense:
            with self.timer("gather"):
                pieces = [
                    (rows, self.inputs.rows(t, ids[pos[sel]] - self._offsets[i]), k)
                    for k, (i, t, pos) in enumerate(dense)
                    for rows, sel in _runs(pos)
                ]
            dev = lins[dense[0][1]].weight.device
            with self.timer("project"):
                params = [q for _, t, _ in dense for q in (lins[t].weight, lins[t].bias)]
                out = _Projection.apply(ids.numel(), [(r, x.to(dev), k) for r, x, k in pieces], *params)
        for i, t, pos in other:
            with self.timer("project"):
                part = self.inputs.project(lins[t], t, ids[pos] - self._offsets[i])
            out = _place(out, ids.numel(), pos, part)
        return out

    def _types_in(self, ids: torch.Tensor) -> list[tuple[int, str, torch.Tensor]]:
        """(type index, node type, positions in ids) of every node type present in ids (CPU ids)."""
        nt = self._node_type[ids]
        present = [(i, t, torch.nonzero(nt == i).view(-1)) for i, t in enumerate(self.ntypes)]
        return [(i, t, pos) for i, t, pos in present if pos.numel()]

    def dropped_inputs(self, ids: torch.Tensor) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
        """(node type, positions in ids, input features with the first layer's dropout) of every type in ids."""
        ids = ids.cpu()
        parts = []
        for i, t, pos in self._types_in(ids):
            with self.timer("gather"):
                x = self.inputs.features(t, ids[pos] - self._offsets[i])
                x = x.to(self.regnn.proj.lins[t].weight.device)
            parts.append((t, pos, self.regnn.dropouts[0](x)))
        return parts

    def factors(self, ids: torch.Tensor) -> ProjectAfterHop:
        """The projected inputs x W of the nodes ids as their two factors (ProjectAfterHop): every type's dropped
        features in its block of columns of Z with a 1 for its bias, and every type's [W; b] stacked."""
        parts = self.dropped_inputs(ids)
        lins = self.regnn.proj.lins
        with self.timer("project"):
            z = parts[0][2].new_zeros(ids.numel(), sum(x.shape[1] + 1 for _, _, x in parts))
            weights, col = [], 0
            for t, pos, x in parts:
                d = x.shape[1]
                for rows, sel in _runs(pos):  # a long run of one type's rows (SampledGraph.batch) as one slice
                    rows = rows if isinstance(rows, slice) else rows.to(z.device)
                    z[rows, col : col + d] = x[sel]
                    z[rows, col + d] = 1.0
                weights.append(torch.cat([lins[t].weight.t(), lins[t].bias[None]]))  # REGNN's projection has a bias
                col += d + 1
            return ProjectAfterHop(z, torch.cat(weights))

    def projected(self, ids: torch.Tensor) -> torch.Tensor:
        """(len(ids), hidden): the dropped input features of the nodes ids, projected (the order that projects
        first)."""
        out = None
        for t, pos, x in self.dropped_inputs(ids):
            with self.timer("project"):
                part = self.regnn.proj.lins[t](x)
            out = _place(out, ids.numel(), pos, part)
        return out

    def forward(self, input_nodes: torch.Tensor, adjs: list) -> torch.Tensor:
        if self.input_dropout == "projected":
            logits, _ = self.regnn.propagate(adjs, self.input_rows(input_nodes))
            return logits
        after_hop = self.project_after_hop and getattr(self.regnn.convs[0], "takes_factors", False)
        h = self.factors(input_nodes) if after_hop else self.projected(input_nodes)
        logits, _ = self.regnn.propagate(adjs, h, dropped=True)
        return logits

    def relation_weights(self) -> list[dict]:
        return self.regnn.relation_weights()
