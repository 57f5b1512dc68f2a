"""Graphs whose important relations are known: `planted` of `relations` relations carry the class, the others
nothing, at the same degrees (explain's validation: does a method rank the planted relations on top?).

Target nodes ("item", uninformative features) link through relation r to nodes of their own type "n<r>" (each
relation its own node type, so no type-specific projection tells the relations apart: only their edges do). Every
n<r> node has a class (node j: class j mod num_classes) and features that say it, noisily. Through a planted
relation an item links to nodes of its own class, except a share `noise` of its links, which go to random nodes;
through any other relation every link is random. So an item's class is readable only from its planted
neighbours, and each planted relation tells part of it (the rest of its links are noise): with several planted,
removing one costs accuracy. Relation names: item->n<r> and n<r>->item (its reverse).
"""

from __future__ import annotations

import numpy as np
import torch

from regnn.data.dataset import HeteroDataset
from regnn.data.hetero import HeteroGraph
from regnn.data.synthetic import random_split
from regnn.errors import DataError


def planted_names(relations: int, planted: int) -> list[str]:
    """The planted relations' names (each with its reverse): the first `planted` of them."""
    return [f"item->n{r}" for r in range(planted)]


def make_planted(
    num_items: int = 600,
    relations: int = 4,
    planted: int = 2,
    noise: float = 0.5,
    degree: int = 6,
    nodes_per_relation: int = 120,
    num_classes: int = 3,
    feat_dim: int = 8,
    signal: float = 1.5,
    seed: int = 0,
) -> HeteroDataset:
    if not 1 <= planted <= relations:
        raise DataError(f"planted={planted} must be between 1 and relations={relations}")
    if not 0.0 <= noise < 1.0:
        raise DataError(f"noise={noise} must be in [0, 1)")
    rng = np.random.default_rng(seed)
    y = rng.integers(0, num_classes, num_items)
    edges, counts = {}, {"item": num_items}
    features = {"item": torch.from_numpy(rng.normal(0, 1, (num_items, feat_dim)).astype(np.float32))}
    of_class = np.arange(nodes_per_relation) % num_classes
    by_class = [np.flatnonzero(of_class == c) for c in range(num_classes)]
    src = np.repeat(np.arange(num_items), degree)
    for r in range(relations):
        t = f"n{r}"
        dst = rng.integers(0, nodes_per_relation, src.size)  # random links, at the same degree for every relation
        if r < planted:
            same = rng.random(src.size) >= noise
            dst = np.where(same, [rng.choice(by_class[c]) for c in y[src]], dst)
        u, v = torch.from_numpy(src.astype(np.int64)), torch.from_numpy(dst.astype(np.int64))
        edges[("item", f"item->{t}", t)] = (u, v)
        edges[(t, f"{t}->item", "item")] = (v, u)
        counts[t] = nodes_per_relation
        x = rng.normal(0, 1, (nodes_per_relation, feat_dim)).astype(np.float32)
        x[np.arange(nodes_per_relation), of_class] += signal  # every n<r> says its class: only the links differ
        features[t] = torch.from_numpy(x)
    return HeteroDataset(
        name="planted",
        graph=HeteroGraph(edges, counts),
        features=features,
        target="item",
        labels=torch.from_numpy(y.astype(np.int64)),
        splits=random_split(rng, num_items, 0.4, 0.2),
        num_classes=num_classes,
    )
