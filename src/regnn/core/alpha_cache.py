"""What an Adjacency derives from relation weights (edge values, degree scales), kept so that it is computed
once per step, and found again without reading the weights' values (no host sync on a GPU).

Two ways to find an entry:
- by identity: the weights tensor itself (its id, with a reference kept so the id stays unique, and its
  `_version`, so a change in place is a miss). A model computes every layer's weights once per pass and hands
  them to Adjacency.prepare; each layer then finds its own by identity, as does a layer called twice.
- by a key the caller gives (REGNN: which layers), checked against a copy of the weights it was computed from:
  a training epoch's evaluation pass and the next epoch's training pass compute equal weights, so they share
  the entry. The values themselves are compared, not the parameters' identities and versions: an edit through
  `.data` or `torch.nn.utils.vector_to_parameters` changes a parameter without its version. The comparison
  reads a few numbers per pass (on a GPU, one small host sync).

Under torch.inference_mode every new tensor is an inference tensor: it has no version counter, and autograd may
not save it for backward. So an inference tensor's entry is checked against a copy of its values instead of its
version, and what is computed in inference mode is found only in inference mode (a training pass after an
inference-mode evaluation computes its own).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable

import torch


def remember(cache: dict, key, value, most: int = 2 * 8) -> None:
    """cache[key] = value as its most recent entry, dropping the oldest beyond `most` (two sets of weights per
    layer cover an epoch of an 8-layer model)."""
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > most:
        cache.pop(next(iter(cache)))


def stamp(t: torch.Tensor):
    """What shows a later change of t in place: its version counter, or a copy of it where it has none (an
    inference tensor)."""
    return t.clone() if torch.is_inference(t) else t._version


def unchanged(t: torch.Tensor, seen) -> bool:
    """Whether t is as it was when stamp(t) gave `seen`."""
    return torch.equal(t, seen) if isinstance(seen, torch.Tensor) else seen == t._version


class AlphaCache:
    def __init__(self):
        # (id(alpha), kind, inference mode) -> (alpha, stamp(alpha), value)
        self._by_id: dict[tuple, tuple] = {}
        self._by_key: dict[tuple, tuple] = {}  # (kind, ..., key, inference mode) -> (copy of alpha, value)

    def find(self, alpha: torch.Tensor, kind: Hashable) -> Any | None:
        """What was remembered for this very tensor (unchanged since) in this mode, or None."""
        hit = self._by_id.get((id(alpha), kind, torch.is_inference_mode_enabled()))
        if hit is not None and hit[0] is alpha and unchanged(alpha, hit[1]):
            return hit[2]
        return None

    def remember(self, alpha: torch.Tensor, kind: Hashable, value) -> None:
        remember(self._by_id, (id(alpha), kind, torch.is_inference_mode_enabled()), (alpha, stamp(alpha), value))

    def compute(
        self, alpha: torch.Tensor, kind: Hashable, fn: Callable[[torch.Tensor], Any], key: Hashable | None = None
    ) -> Any:
        """fn(alpha detached) without autograd; with a key, found again by it while alpha holds the values it
        was computed from."""
        if key is None:
            with torch.no_grad():
                return fn(alpha.detach())
        full = (kind, alpha.shape, alpha.dtype, alpha.device, key, torch.is_inference_mode_enabled())
        hit = self._by_key.get(full)
        if hit is None or not torch.equal(hit[0], alpha):
            with torch.no_grad():
                hit = (alpha.detach().clone(), fn(alpha.detach()))
        remember(self._by_key, full, hit)
        return hit[1]

    def __getstate__(self):  # a deep copy (a model copied with its inputs) starts empty
        return {}

    def __setstate__(self, state):
        self.__init__()
