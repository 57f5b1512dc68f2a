"""Input layers for heterogeneous features: one linear map per node type into a shared space, sparse features
(bag-of-words, one-hot ids) multiplied as CSR without being made dense. The RE-GNN model's own input layer, and
one's own model's (regnn.nn)."""

from __future__ import annotations

import torch
from torch import nn

from regnn.core.adjacency import full_precision


class SparseInputMM(torch.autograd.Function):
    """x @ w for a constant sparse x held as CSR together with its transpose (both MKL/cuSPARSE matmuls)."""

    @staticmethod
    def forward(ctx, w, x_csr, xt_csr):
        ctx.save_for_backward(xt_csr)
        return x_csr @ w

    @staticmethod
    def backward(ctx, grad):
        (xt_csr,) = ctx.saved_tensors
        return xt_csr @ grad.contiguous(), None, None


class TypeProjection(nn.Module):
    """x~_i = x_i W_type(i) + b_type(i): one linear map per node type into a shared space (no b with bias=False).

    Sparse inputs (bag-of-words, one-hot ids) stay sparse: they are multiplied as CSR, and the CSR of their
    transpose, built once per input tensor, gives the weight gradient.
    """

    def __init__(self, in_dims: dict[str, int], out_dim: int, bias: bool = True):
        super().__init__()
        self.lins = nn.ModuleDict({t: nn.Linear(d, out_dim, bias=bias) for t, d in in_dims.items()})
        for lin in self.lins.values():
            nn.init.xavier_normal_(lin.weight, gain=1.414)
        self._csr_cache: dict[int, tuple] = {}

    def _csr(self, x: torch.Tensor):
        hit = self._csr_cache.get(id(x))
        if hit is None or hit[0] is not x:
            # built outside inference mode even under it: inference tensors could not be saved for the backward
            # of a later training pass (and a sparse transpose of a normal tensor fails in inference mode)
            with torch.inference_mode(False):
                hit = (x, x.to_sparse_csr(), x.t().coalesce().to_sparse_csr())  # keeps x alive: its id stays unique
            self._csr_cache[id(x)] = hit
        return hit[1], hit[2]

    def project(self, t: str, x: torch.Tensor) -> torch.Tensor:
        lin = self.lins[t]
        if not x.is_sparse:
            return lin(x)
        with full_precision(x):
            out = SparseInputMM.apply(lin.weight.t(), *self._csr(x))
            return out if lin.bias is None else out + lin.bias

    def forward(self, feats: dict[str, torch.Tensor], order: list[str]) -> torch.Tensor:
        return torch.cat([self.project(t, feats[t]) for t in order])
