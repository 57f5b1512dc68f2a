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
every other relation of that item random: a node-level ground truth for why each item got its class. `shares`
(one per planted relation, summing to at most 1) draws that relation with these probabilities instead, and leaves
the rest of the items with no relation that says their class: graded effects, one relation worth much, another
little. `through` (relation indices) makes a relation reach the items only through a middle type m<r>: items link
to m<r> nodes (by class where the relation is planted), m<r> nodes to n<r> nodes (likewise), and m<r> nodes say
nothing themselves: the class enters the items through item->m<r>, while m<r>->n<r> never touches an item.
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


def node_relations(num_items: int, planted: int, seed: int = 0, shares=()) -> np.ndarray:
    """per_node=true: the one relation through which each item links to its class (a random stream of its own, so
    that the graph-level draws are the same with and without it); with `shares`, -1 for an item whose class no
    relation says."""
    rng = np.random.default_rng([seed, 1])
    if not shares:
        return rng.integers(0, planted, num_items)
    p = [*map(float, shares), 1.0 - float(sum(shares))]
    own = rng.choice(planted + 1, size=num_items, p=np.clip(p, 0.0, None) / sum(np.clip(p, 0.0, None)))
    return np.where(own == planted, -1, own)


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
    shares: tuple = ()
    through: tuple = ()

    def check(self) -> None:
        if not 1 <= self.planted <= self.relations:
            raise DataError(f"planted={self.planted} must be between 1 and relations={self.relations}")
        if not 0.0 <= self.noise < 1.0:
            raise DataError(f"noise={self.noise} must be in [0, 1)")
        if self.shares and (len(self.shares) != self.planted or min(self.shares) < 0 or sum(self.shares) > 1 + 1e-9):
            raise DataError(
                f"shares={list(self.shares)}: give one share per planted relation ({self.planted}), each at least "
                "0, summing to at most 1"
            )
        if self.shares and not self.per_node:
            raise DataError("shares draw each item's one planted relation: set per_node=true with them")
        if any(not 0 <= int(r) < self.relations for r in self.through):
            raise DataError(f"through={list(self.through)}: relation indices run from 0 to {self.relations - 1}")

    def build(self) -> HeteroDataset:
        n, k, m = self.num_items, self.num_classes, self.nodes_per_relation
        self.check()
        rng = np.random.default_rng(self.seed)
        y = rng.integers(0, k, n)
        edges, counts = {}, {"item": n}
        features = {"item": torch.from_numpy(rng.normal(0, 1, (n, self.feat_dim)).astype(np.float32))}
        of_class = np.arange(m) % k
        by_class = [np.flatnonzero(of_class == c) for c in range(k)]
        src = np.repeat(np.arange(n), self.degree)
        own = node_relations(n, self.planted, self.seed, tuple(self.shares)) if self.per_node else None
        through = {int(r) for r in self.through}
        for r in range(self.relations):
            t = f"n{r}"
            first = f"m{r}" if r in through else t  # the type the items link to
            links = self._links(rng, src, y[src], r, by_class, None if own is None else own[src] == r)
            _pair(edges, "item", first, src, links)
            counts[first] = m
            x = rng.normal(0, 1, (m, self.feat_dim)).astype(np.float32)
            if r in through:  # m<r> says nothing itself; its n<r> neighbours of its class do
                features[first] = torch.from_numpy(x)
                inner = np.repeat(np.arange(m), self.degree)
                _pair(edges, first, t, inner, self._links(rng, inner, of_class[inner], r, by_class, None))
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

    def _links(self, rng, src, classes, r: int, by_class, planted_for) -> np.ndarray:
        """Each source's link through relation r: random, at the same degree for every relation, or (a planted
        relation, for the sources it is planted for) to a node of the source's class but for a share `noise`."""
        dst = rng.integers(0, self.nodes_per_relation, src.size)
        if r < self.planted:
            same = rng.random(src.size) >= self.noise
            if planted_for is not None:  # only the items this relation is planted for link to their class through it
                same &= planted_for
            dst = np.where(same, [rng.choice(by_class[c]) for c in classes], dst)
        return dst


def _pair(edges: dict, a: str, b: str, src: np.ndarray, dst: np.ndarray) -> None:
    """The relation a->b and its reverse b->a."""
    u, v = torch.from_numpy(src.astype(np.int64)), torch.from_numpy(dst.astype(np.int64))
    edges[(a, f"{a}->{b}", b)] = (u, v)
    edges[(b, f"{b}->{a}", a)] = (v, u)


def make_planted(**options) -> HeteroDataset:
    """The planted graph of these settings (Planted's fields; the defaults where one is not given)."""
    for key in ("shares", "through"):  # lists from the config; the dataclass is frozen (hashable)
        if options.get(key) is not None:
            options[key] = tuple(options[key])
    return Planted(**options).build()
