"""Multi-process data-parallel training with torch.distributed, as `torchrun` launches it.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT for every process; `Dist.from_env`
joins the process group when WORLD_SIZE > 1 (gloo on CPU, NCCL on GPU) and is a no-op otherwise, so the same
code runs in one process or many.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
from dataclasses import dataclass

import torch
import torch.distributed as tdist


@dataclass
class Dist:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_env(cls, backend: str = "auto", device: torch.device | str = "cpu") -> "Dist":
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            return cls()
        if backend == "auto":
            backend = "nccl" if torch.device(device).type == "cuda" else "gloo"
        if not tdist.is_initialized():
            tdist.init_process_group(backend=backend)
        return cls(tdist.get_rank(), tdist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")), backend)

    def barrier(self) -> None:
        if self.enabled:
            tdist.barrier()

    @contextlib.contextmanager
    def main_first(self):
        """The main process runs the block first (e.g. to write a cache), then the others."""
        if not self.is_main:
            self.barrier()
        yield
        if self.is_main:
            self.barrier()

    def all_sum(self, t: torch.Tensor) -> torch.Tensor:
        if self.enabled:
            dev = "cuda" if self.backend == "nccl" else "cpu"
            x = t.to(dev)
            tdist.all_reduce(x, op=tdist.ReduceOp.SUM)
            return x.to(t.device)
        return t

    def all_max(self, value: float) -> float:
        if not self.enabled:
            return value
        x = torch.tensor([value], dtype=torch.float64, device="cuda" if self.backend == "nccl" else "cpu")
        tdist.all_reduce(x, op=tdist.ReduceOp.MAX)
        return float(x.item())

    def gather_objects(self, obj) -> list:
        if not self.enabled:
            return [obj]
        out = [None] * self.world_size
        tdist.all_gather_object(out, obj)
        return out

    def broadcast_object(self, obj):
        if not self.enabled:
            return obj
        box = [obj]
        tdist.broadcast_object_list(box, src=0)
        return box[0]

    def shard(self, n: int) -> torch.Tensor:
        """Positions 0..n-1 this process handles (every rank-th one): disjoint, together all of them."""
        return torch.arange(self.rank, n, self.world_size)

    def close(self) -> None:
        if self.enabled and tdist.is_initialized():
            self.barrier()  # no collective still in flight when the process group goes
            gc.collect()
            tdist.destroy_process_group()


def param_digest(model: torch.nn.Module) -> str:
    """SHA-256 of every parameter's bytes in state-dict order: equal digests mean identical replicas."""
    h = hashlib.sha256()
    for name, p in model.state_dict().items():
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def check_backend(learnt_embeddings: bool, backend: str) -> None:
    """ValueError where the processes' backend cannot all-reduce the model's gradients."""
    if learnt_embeddings and backend == "nccl":
        raise ValueError(
            "learnable node embeddings have sparse gradients, which NCCL cannot all-reduce; use "
            "trainer.ddp_backend=gloo, or features for every node type (dataset.featureless=mean|file)"
        )
