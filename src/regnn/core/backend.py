"""How the compute core runs, chosen once per graph: the fused C++ kernels (CPU) or torch alone.

A `Backend` is given to an `Adjacency` when it is built (`choose_backend` picks it from the device and the
user's choice) and every layer reads it from there: nothing is switched at run time. With the fused kernels the
relation-weighted GCN aggregation, the attention layers' aggregation, softmax and GATv2 scores run on them; with
torch alone they run on torch's CSR products and segment ops. `sorted_sums` says how sums of per-edge values by
node or relation are taken: over sorted segments (deterministic and fast on CUDA, where the deterministic
index_add_ walks runs of equal indices serially) or by index_add_ (the fastest on CPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from regnn.core.kernels import enabled, load_kernels


@dataclass(frozen=True)
class Backend:
    kernels: Any = None  # the compiled module of regnn.core.kernels, or None: torch alone
    sorted_sums: bool = False  # sums over sorted segments (True) or by index_add_ (False)

    @property
    def name(self) -> str:
        return "kernels" if self.kernels is not None else "torch"


def choose_backend(
    device: torch.device | str = "cpu", kernels: bool | None = None, sorted_sums: bool | None = None
) -> Backend:
    """The backend for graphs on `device`. kernels: use the fused kernels where they run (CPU, and built here);
    None reads REGNN_KERNELS (unset or 1: yes, 0: no). sorted_sums: None picks by device (sorted off the CPU)."""
    device = torch.device(device)
    cpu = device.type == "cpu"
    want = enabled() if kernels is None else kernels
    return Backend(
        kernels=load_kernels() if cpu and want else None, sorted_sums=(not cpu) if sorted_sums is None else sorted_sums
    )


TORCH = Backend()  # torch alone, sums by index_add_ (the CPU torch path)
