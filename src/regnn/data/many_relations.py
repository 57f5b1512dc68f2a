"""A knowledge-graph-like graph without node features and with many relation types, few of them informative and
few nodes labelled (R-GCN's entity-classification setting: the speed of models with a weight per relation, and
how they fare on imbalanced labels).

Entities of `len(types)` types, the first ("entity") the target. Every target entity has `degree` out-links; each
picks one of `relations` relation kinds (kind k with probability proportional to 1 / (k + 1), as relation
frequencies in a knowledge graph are skewed) and a node of the kind's destination type (kind k: types[k %
len(types)]). Through the `informative` kinds (spread over the frequency ranks) a link reaches, with probability
`homophily`, a node whose id is the entity's class modulo num_classes (a latent class of the destination, which
only the links reveal), else a random one; through every other kind always a random one. Each kind is one
relation and its reverse: 2 * `relations` relation types. `largest_class` is the share of entities in class 0,
the others sharing the rest equally; `labelled` entities (chosen at random) carry a label, split
train/validation/test by `shares`; the rest are unlabelled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from regnn.data.dataset import HeteroDataset
from regnn.data.features import one_hot_ids
from regnn.data.hetero import HeteroGraph
from regnn.data.synthetic import class_labels


@dataclass
class ManyRelationGraph:
    num_entities: int = 3000
    num_others: int = 2650  # nodes of each other type
    types: tuple[str, ...] = ("entity", "concept", "literal")
    relations: int = 40  # relation kinds, each with its reverse
    informative: int = 4
    degree: int = 12
    homophily: float = 0.7
    num_classes: int = 4
    largest_class: float = 0.0
    labelled: int = 120
    shares: tuple[float, float] = (0.6, 0.15)  # train, validation; the rest of the labelled are test
    seed: int = 0

    def _links(self, rng, y: np.ndarray, sizes: dict[str, int]) -> dict[tuple, tuple]:
        """{(source type, name, destination type): (sources, destinations)} of every kind and its reverse."""
        freq = 1.0 / np.arange(1, self.relations + 1)
        kinds = rng.choice(self.relations, (self.num_entities, self.degree), p=freq / freq.sum())
        informative = set(np.linspace(0, self.relations - 1, self.informative).round().astype(int).tolist())
        out = {}
        for k in range(self.relations):
            src, _ = np.nonzero(kinds == k)
            dtype = self.types[k % len(self.types)]
            n = sizes[dtype]
            dst = rng.integers(0, n, src.shape[0])
            if k in informative:  # a node of the entity's class: the same residue, a random multiple
                own = rng.random(src.shape[0]) < self.homophily
                j = y[src] + self.num_classes * rng.integers(0, n // self.num_classes, src.shape[0])
                dst = np.where(own, j, dst)
            s, d = (torch.from_numpy(a.astype(np.int64)) for a in (src, dst))
            out[("entity", f"r{k}", dtype)] = (s, d)
            out[(dtype, f"r{k}_inv", "entity")] = (d, s)
        return out

    def build(self) -> HeteroDataset:
        rng = np.random.default_rng(self.seed)
        y = class_labels(rng, self.num_entities, self.num_classes, self.largest_class)
        sizes = {t: (self.num_entities if i == 0 else self.num_others) for i, t in enumerate(self.types)}
        graph = HeteroGraph(self._links(rng, y, sizes), sizes)
        chosen = rng.permutation(self.num_entities)[: self.labelled]
        a = int(self.shares[0] * self.labelled)
        b = a + int(self.shares[1] * self.labelled)
        unlabelled = np.setdiff1d(np.arange(self.num_entities), chosen)
        splits = {
            s: torch.from_numpy(np.sort(ids)) for s, ids in zip(("train", "val", "test"), np.split(chosen, [a, b]))
        }
        return HeteroDataset(
            name="many_relations",
            graph=graph,
            features={t: one_hot_ids(n) for t, n in sizes.items()},
            target="entity",
            labels=torch.from_numpy(y.astype(np.int64)),
            splits=splits,
            num_classes=self.num_classes,
            unlabelled=torch.from_numpy(unlabelled),
        )
