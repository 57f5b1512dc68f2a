"""Device choice, and graphs moved to it as arrays.

Data loading and neighbour sampling stay on the CPU with DGL; what a model runs on moves to the device as
tensors (`to_device_adjacency`), never as a DGL graph: PyPI's DGL wheels (the pinned stack) cannot put a graph
on a GPU, while the pinned torch is a CUDA build. So RE-GNN trains on any device torch sees. The baselines that
run DGL's own modules (DGL_OPS_ARCHS) need DGL's CUDA build for that and are refused on a GPU without it.
"""
from __future__ import annotations

import functools

import torch

from regnn.core.adjacency import Adjacency
from regnn.errors import ConfigError

# model.arch values whose forward pass runs DGL's modules or ops on a DGL graph (RelGraphConv, HGTConv, GATConv,
# MAGNN-AC's completion attention, R-HGNN's relation attention)
DGL_OPS_ARCHS = frozenset({"rgcn", "hgt", "han", "rhgnn", "magnn_ac"})


@functools.lru_cache(maxsize=None)
def dgl_has_cuda() -> bool:
    """True when this DGL build can put a graph on the GPU (PyPI's DGL wheels are CPU-only)."""
    if not torch.cuda.is_available():
        return False
    import dgl
    try:
        dgl.graph(([0], [0])).to("cuda")
        return True
    except Exception:  # DGLError: "Device API cuda is not enabled"
        return False


def select_device(requested: str = "auto", arch: str = "regnn") -> tuple[torch.device, str]:
    """The device for a model of `arch` and a one-line explanation of the choice.

    auto: CUDA whenever torch sees it, unless `arch` needs DGL's CUDA ops and this DGL lacks them (then the CPU,
    and the note says why). cuda / cuda:N where that cannot work: a ConfigError naming the reason and the fix."""
    if requested not in ("auto", "cpu", "cuda") and not requested.startswith("cuda:"):
        raise ConfigError(f"device must be auto, cpu, cuda or cuda:N, got {requested!r}")
    if requested == "cpu":
        return torch.device("cpu"), "cpu (requested)"
    if not torch.cuda.is_available():
        why = "torch sees no CUDA device"
    elif arch in DGL_OPS_ARCHS and not dgl_has_cuda():
        why = (f"model.arch={arch} runs DGL's own modules, and this DGL build has no CUDA support; use device=cpu, "
               "or install DGL's CUDA build (docs/gpu.md)")
    else:
        dev = torch.device("cuda" if requested == "auto" else requested)
        return dev, f"{dev} ({torch.cuda.get_device_name(dev)})"
    if requested != "auto":
        raise ConfigError(f"device={requested} requested but {why}" +
                          ("" if "device=cpu" in why else "; use device=cpu or device=auto"))
    return torch.device("cpu"), f"cpu ({why})"


def to_device_adjacency(g, device, rel: torch.Tensor | None = None) -> Adjacency:
    """The DGL graph or block `g` (on the CPU) as an Adjacency on `device`: its arrays move, the DGL graph stays.
    rel: relation id per edge in `g`'s edge order (default g.edata["rel"] where present)."""
    return Adjacency(g, rel).to(device)
