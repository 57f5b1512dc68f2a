"""Graphs whose important relations are known: `planted` of `relations` relations carry the class, the others
nothing, at the same degrees (explain's validation: does a method rank the planted relations on top?).

Target nodes ("item", uninformative features) link through relation r to nodes of their own type "n<r>" (each
relation its own node type, so no type-specific projection tells the relations apart: only their edges do). Every
n<r> node has a class (node j: class j mod num_classes) and features that say it, noisily. Through a planted
relation an item links to nodes of its own class, except a share `noise` of its links, which go to random nodes;
through any other relation every link is random. So an item's class is readable only from its planted
neighbours, and each planted relation tells part of it (the rest of its links are noise): with several planted,
removing one costs accuracy. Relation names: item->n<r> and n<r>->item (its reverse).

per_node=true plants each item's class in one relation of its own (node_relations: among the first `planted`),
every other relation of that item random: a node-level ground truth for why each item got its class.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from regnn.data.dataset import HeteroDataset
from regnn.data.hetero import HeteroGraph
from regnn.data.synthetic import random_split
from regnn.errors import DataError


def planted_names(relations: int, planted: int) -> list[str]:
    """The planted relations' names (each with its reverse): the first `planted` of them."""
    return [f"item->n{r}" for r in range(planted)]


def node_relations(num_items: int, planted: int, seed: int = 0) -> np.ndarray:
    """per_node=true: the one relation through which each item links to its class (a random stream of its own, so
    that the graph-level draws are the same with and without it)."""
    return np.random.default_rng([seed, 1]).integers(0, planted, num_items)


@dataclass(frozen=True)
class Planted:
    """The settings of a planted graph (conf/dataset/planted.yaml's keys)."""

    num_items: int = 600
    relations: int = 4
    planted: int = 2
    noise: float = 0.5
    degree: int = 6
    nodes_per_relation: int = 120
    num_classes: int = 3
    feat_dim: int = 8
    signal: float = 1.5
    seed: int = 0
    per_node: bool = False

    def build(self) -> HeteroDataset:
        n, k, m = self.num_items, self.num_classes, self.nodes_per_relation
        if not 1 <= self.planted <= self.relations:
            raise DataError(f"planted={self.planted} must be between 1 and relations={self.relations}")
        if not 0.0 <= self.noise < 1.0:
            raise DataError(f"noise={self.noise} must be in [0, 1)")
        rng = np.random.default_rng(self.seed)
        y = rng.integers(0, k, n)
        edges, counts = {}, {"item": n}
        features = {"item": torch.from_numpy(rng.normal(0, 1, (n, self.feat_dim)).astype(np.float32))}
        of_class = np.arange(m) % k
        by_class = [np.flatnonzero(of_class == c) for c in range(k)]
        src = np.repeat(np.arange(n), self.degree)
        own = node_relations(n, self.planted, self.seed) if self.per_node else None
        for r in range(self.relations):
            t = f"n{r}"
            dst = rng.integers(0, m, src.size)  # random links, at the same degree for every relation
            if r < self.planted:
                same = rng.random(src.size) >= self.noise
                if own is not None:  # only the items this relation is planted for link to their class through it
                    same &= own[src] == r
                dst = np.where(same, [rng.choice(by_class[c]) for c in y[src]], dst)
            u, v = torch.from_numpy(src.astype(np.int64)), torch.from_numpy(dst.astype(np.int64))
            edges[("item", f"item->{t}", t)] = (u, v)
            edges[(t, f"{t}->item", "item")] = (v, u)
            counts[t] = m
            x = rng.normal(0, 1, (m, self.feat_dim)).astype(np.float32)
            x[np.arange(m), of_class] += self.signal  # every n<r> says its class: only the links differ
            features[t] = torch.from_numpy(x)
        return HeteroDataset(
            name="planted",
            graph=HeteroGraph(edges, counts),
            features=features,
            target="item",
            labels=torch.from_numpy(y.astype(np.int64)),
            splits=random_split(rng, n, 0.4, 0.2),
            num_classes=k,
        )


def make_planted(**options) -> HeteroDataset:
    """The planted graph of these settings (Planted's fields; the defaults where one is not given)."""
    return Planted(**options).build()
