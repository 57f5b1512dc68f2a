"""Device choice. Every model runs on arrays (regnn.core's Adjacency and torch), so each trains on any device
torch sees; the data is loaded and neighbours are sampled on the CPU, and what a model runs on moves to the device
as tensors.
"""

from __future__ import annotations

import torch

from regnn.names import is_device_name


def select_device(requested: str = "auto") -> tuple[torch.device, str]:
    """The device and a one-line explanation of the choice.

    auto: CUDA whenever torch sees it, else the CPU. cuda / cuda:N where torch sees no GPU: a ValueError naming
    the reason and the fix."""
    if not is_device_name(requested):
        raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got {requested!r}")
    if requested == "cpu":
        return torch.device("cpu"), "cpu (requested)"
    if torch.cuda.is_available():
        dev = torch.device("cuda" if requested == "auto" else requested)
        return dev, f"{dev} ({torch.cuda.get_device_name(dev)})"
    why = "torch sees no CUDA device"
    if requested != "auto":
        raise ValueError(f"device={requested} requested but {why}; use device=cpu or device=auto")
    return torch.device("cpu"), f"cpu ({why})"
