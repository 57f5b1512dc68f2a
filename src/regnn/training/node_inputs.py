"""Input rows of sampled nodes, and RE-GNN wrapped to run on sampled blocks.

A node type whose features are one-hot ids (no features: the learnable-embedding choice) gets an
`nn.Embedding(num_nodes, embed_dim, sparse=True)` instead: a linear map of one-hot ids is a per-node
embedding, and a sparse one only touches (and only updates, with SparseAdam) the rows of the sampled nodes.
The per-type projection then maps the embedding to the hidden size (a factorised embedding). Fixed features
stay where they are (CPU) and only the sampled rows move to the model's device.
"""
from __future__ import annotations

import torch
from torch import nn

from regnn.models.regnn import REGNN, _SparseInputMM


def is_one_hot_ids(x: torch.Tensor) -> bool:
    """True for the sparse identity matrix that stands for "no features: one-hot node ids"."""
    if not x.is_sparse or x.dim() != 2 or x.shape[0] != x.shape[1] or x._nnz() != x.shape[0]:
        return False
    x = x.coalesce()
    ar = torch.arange(x.shape[0])
    return bool(torch.equal(x.indices()[0], ar) and torch.equal(x.indices()[1], ar) and (x.values() == 1).all())


class NodeInputs(nn.Module):
    """Per node type: fixed features (dense or sparse) or a learnable sparse embedding; rows by local id."""

    def __init__(self, features: dict[str, torch.Tensor], embed_dim: int = 128):
        super().__init__()
        learn = [t for t, x in features.items() if is_one_hot_ids(x)]
        self.embeddings = nn.ModuleDict({t: nn.Embedding(features[t].shape[0], embed_dim, sparse=True)
                                         for t in learn})
        self._fixed = {t: (x.coalesce() if x.is_sparse else x) for t, x in features.items() if t not in learn}
        self.in_dims = {t: (embed_dim if t in learn else int(x.shape[1])) for t, x in features.items()}

    def project(self, lin: nn.Linear, ntype: str, local: torch.Tensor) -> torch.Tensor:
        """lin(inputs of the nodes `local` of `ntype`), with sparse inputs multiplied as CSR."""
        dev = lin.weight.device
        if ntype in self.embeddings:
            return lin(self.embeddings[ntype](local.to(dev)))
        x = self._fixed[ntype]
        if not x.is_sparse:
            return lin(x[local.to(x.device)].to(dev))
        rows = x.index_select(0, local.to(x.device)).coalesce().to(dev)
        return _SparseInputMM.apply(lin.weight.t(), rows.to_sparse_csr(), rows.t().coalesce().to_sparse_csr()) \
            + lin.bias


class SampledREGNN(nn.Module):
    """REGNN on blocks: input rows of the sampled source nodes -> projection -> one layer per block -> scores."""

    def __init__(self, regnn: REGNN, inputs: NodeInputs, ntypes: list[str], offsets: dict[str, int],
                 node_type: torch.Tensor):
        super().__init__()
        self.regnn, self.inputs = regnn, inputs
        self.ntypes = list(ntypes)
        self._offsets = [offsets[t] for t in self.ntypes]
        self._node_type = node_type  # (N,) type index of every homogeneous id; not a buffer (DDP broadcasts those)

    def input_rows(self, ids: torch.Tensor) -> torch.Tensor:
        """(len(ids), hidden) projected inputs of the homogeneous node ids."""
        ids = ids.cpu()
        nt = self._node_type[ids]
        out = None
        for i, t in enumerate(self.ntypes):
            pos = torch.nonzero(nt == i).view(-1)
            if pos.numel():
                part = self.inputs.project(self.regnn.proj.lins[t], t, ids[pos] - self._offsets[i])
                if out is None:
                    out = part.new_empty(ids.numel(), part.shape[1])
                out[pos.to(part.device)] = part  # in place: the backward gathers rows, no full-size zero fill
        return out

    def forward(self, input_nodes: torch.Tensor, adjs: list) -> torch.Tensor:
        logits, _ = self.regnn.propagate(adjs, self.input_rows(input_nodes))
        return logits

    def relation_weights(self) -> list[dict]:
        return self.regnn.relation_weights()
