"""What an Adjacency derives from relation weights (edge values, degree scales), kept so that it is computed
once per step, and found again without reading the weights' values (no host sync on a GPU).

Two ways to find an entry:
- by identity: the weights tensor itself (its id, with a reference kept so the id stays unique, and its
  `_version`, so a change in place is a miss). A model computes every layer's weights once per pass and hands
  them to Adjacency.prepare; each layer then finds its own by identity, as does a layer called twice.
- by a key the caller gives that names the weights' values: REGNN gives its relation parameters' identities
  and versions (an optimiser step changes them in place, which bumps the versions). A training epoch's
  evaluation pass and the next epoch's training pass see the same parameters, so they share the entries.
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


class AlphaCache:
    def __init__(self):
        self._by_id: dict[tuple, tuple] = {}  # (id(alpha), kind) -> (alpha, alpha._version, value)
        self._by_key: dict[tuple, tuple] = {}  # (kind, key) -> (objects the key names by id, value)

    def find(self, alpha: torch.Tensor, kind: Hashable) -> Any | None:
        """What was remembered for this very tensor (unchanged since), or None."""
        hit = self._by_id.get((id(alpha), kind))
        if hit is not None and hit[0] is alpha and hit[1] == alpha._version:
            return hit[2]
        return None

    def remember(self, alpha: torch.Tensor, kind: Hashable, value) -> None:
        remember(self._by_id, (id(alpha), kind), (alpha, alpha._version, value))

    def compute(
        self,
        alpha: torch.Tensor,
        kind: Hashable,
        fn: Callable[[torch.Tensor], Any],
        key: Hashable | None = None,
        keep: tuple = (),
    ) -> Any:
        """fn(alpha detached) without autograd; with a key, found again by it (`keep`: the objects whose ids the
        key holds, kept alive with the entry so that no other object takes those ids)."""
        if key is None:
            with torch.no_grad():
                return fn(alpha.detach())
        full = (kind, alpha.shape, alpha.dtype, alpha.device, key)
        hit = self._by_key.get(full)
        if hit is None:
            with torch.no_grad():
                hit = (keep, fn(alpha.detach()))
        remember(self._by_key, full, hit)
        return hit[1]

    def __getstate__(self):  # a deep copy (a model copied with its inputs) starts empty
        return {}

    def __setstate__(self, state):
        self.__init__()
