"""Dropout whose mask is hashed from a seed and the element's index (the fused CPU kernels' hash_dropout).

torch's CPU dropout draws one random number per element from its generator, stores the mask as a tensor of the
input's size and reads it back in the backward: on the (sampled sources x hidden) inputs of a mini-batch step,
hundreds of MB each, that was a third of the step. Here the mask is a function of (seed, index): the forward
and the backward each make one pass, and nothing is stored. The seed is drawn from torch's generator, so a
seeded run repeats. Elsewhere (no kernels, another device) it is nn.Dropout.
"""

from __future__ import annotations

import torch
from torch import nn

from regnn.core.kernels import load_kernels


class _HashDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, p: float, seed: int, kernels):
        ctx.p, ctx.seed, ctx.kernels = p, seed, kernels
        return kernels.hash_dropout(x.contiguous(), p, seed)

    @staticmethod
    def backward(ctx, grad):
        return ctx.kernels.hash_dropout(grad.contiguous(), ctx.p, ctx.seed), None, None, None


class HashDropout(nn.Dropout):
    """nn.Dropout(p) with the hashed mask on CPU (p quantised to 1/65536); each call draws a new seed."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        kernels = load_kernels() if x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64) else None
        if kernels is None or self.inplace:
            return super().forward(x)
        seed = int(torch.randint(0, 2**62, (1,)).item())
        return _HashDropout.apply(x, float(self.p), seed, kernels)
