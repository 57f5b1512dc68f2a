"""Device choice: CUDA only when both torch and DGL can use it, and say why not otherwise."""
from __future__ import annotations

import functools

import torch


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


def select_device(requested: str = "auto") -> tuple[torch.device, str]:
    """Returns the device and a one-line explanation of the choice."""
    if requested not in ("auto", "cpu", "cuda") and not requested.startswith("cuda:"):
        raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got {requested!r}")
    if requested == "cpu":
        return torch.device("cpu"), "cpu (requested)"
    torch_cuda = torch.cuda.is_available()
    if torch_cuda and dgl_has_cuda():
        dev = torch.device("cuda" if requested == "auto" else requested)
        return dev, f"{dev} ({torch.cuda.get_device_name(dev)})"
    why = ("torch sees no CUDA device" if not torch_cuda else
           "torch sees a GPU but this DGL build has no CUDA support; install DGL's CUDA wheel (docs/gpu.md)")
    if requested != "auto":
        raise RuntimeError(f"device={requested} requested but {why}")
    return torch.device("cpu"), f"cpu ({why})"
