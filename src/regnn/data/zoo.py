"""A zoo of generated heterographs spanning what users bring, for choosing `dataset=custom` defaults and checking
them out of sample (regnn.experiments.zoo_defaults).

One generator, `ZooGraph`, varies what makes graphs differ for a model: the target type's features (none, a
binary bag of words, raw heavy-tailed counts, dense continuous values), the label rate, class imbalance, size, the
number of relation types, and whether the informative relations touch the target or reach it through a middle
type. `FAMILIES` names one graph per family; a family is left out when the defaults it is scored with are chosen.

The class signal: every other node has a class of its own (node i of a type: class i % classes); an informative
relation links a target to nodes of its class with probability `homophily`, else to a random node; the others
link at random. The target's features carry `signal` of the class (0: none). Other types have no features
(one-hot ids), as the neighbour types of most users' graphs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from regnn.data.dataset import HeteroDataset
from regnn.data.features import one_hot_ids
from regnn.data.hetero import HeteroGraph
from regnn.data.synthetic import class_labels, homophilous_links, int64, random_split

FEATURES = ("none", "bow", "counts", "dense")


@dataclass(frozen=True)
class ZooGraph:
    """features: none | bow | counts | dense. others: sizes of the other node types (t0, t1, ...); relations
    from the target spread over them in turn, the first `informative` linking by class. through: the informative
    relations start at a middle type ("mid", one node per target, linked to the targets by class) instead of the
    target, so their signal reaches a target two hops away."""

    features: str = "none"
    num_targets: int = 2000
    others: tuple[int, ...] = (2000, 500)
    relations: int = 2
    informative: int = 1
    through: bool = False
    degree: int = 4
    homophily: float = 0.5
    signal: float = 0.3
    num_classes: int = 3
    largest_class: float = 0.0
    train_share: float = 0.2
    val_share: float = 0.1
    seed: int = 0

    def target_features(self, rng, y: np.ndarray) -> torch.Tensor:
        n, c, s = len(y), self.num_classes, self.signal
        if self.features == "none":
            return one_hot_ids(n)
        if self.features == "dense":  # class means s apart on 32 standard-normal columns
            means = rng.normal(0.0, s, (c, 32))
            return torch.from_numpy((means[y] + rng.normal(size=(n, 32))).astype(np.float32))
        if self.features == "counts":  # 80 columns of over-dispersed counts, rates log-normal (values into the 100s)
            base = np.exp(rng.normal(1.0, 1.2, 80))
            shift = np.exp(rng.normal(0.0, s, (c, 80)))
            rates = base * shift[y] * rng.gamma(2.0, 0.5, (n, 80))
            return torch.from_numpy(rng.poisson(rates).astype(np.float32))
        # bow: 600 words, 40 of them each class's own; a node's 20 words are its class's with probability s
        own = rng.random((n, 20)) < s
        topic = y[:, None] * 40 + rng.integers(0, 40, (n, 20))
        words = np.where(own, topic, rng.integers(0, 600, (n, 20)))
        x = np.zeros((n, 600), dtype=np.float32)
        x[np.arange(n)[:, None], words] = 1.0
        return torch.from_numpy(x)

    def build(self) -> HeteroDataset:
        s = self
        if s.features not in FEATURES:
            raise ValueError(f"features is one of {', '.join(FEATURES)}, got {s.features!r}")
        rng = np.random.default_rng(s.seed)
        y = class_labels(rng, s.num_targets, s.num_classes, s.largest_class)
        sizes = {"target": s.num_targets, **{f"t{k}": n for k, n in enumerate(s.others)}}
        edges: dict[tuple, tuple] = {}
        start, start_y = "target", y
        if s.through:
            sizes["mid"] = s.num_targets
            mid_y = np.arange(s.num_targets) % s.num_classes
            src, dst = homophilous_links(rng, y, 2, s.homophily, s.num_targets, s.num_classes)
            _both(edges, "target", "mid", "to_mid", src, dst)
            start, start_y = "mid", mid_y
        for r in range(s.relations):
            other = f"t{r % len(s.others)}"
            informative = r < s.informative
            frm, frm_y = (start, start_y) if informative else ("target", y)
            h = s.homophily if informative else 0.0
            src, dst = homophilous_links(rng, frm_y, s.degree, h, sizes[other], s.num_classes)
            _both(edges, frm, other, f"r{r:02d}", src, dst)
        features = {t: one_hot_ids(n) for t, n in sizes.items()}
        features["target"] = s.target_features(rng, y)
        return HeteroDataset(
            name="zoo",
            graph=HeteroGraph(edges, sizes),
            features=features,
            target="target",
            labels=int64(y),
            splits=random_split(rng, s.num_targets, s.train_share, s.val_share),
            num_classes=s.num_classes,
        )


def _both(edges: dict, a: str, b: str, name: str, src: np.ndarray, dst: np.ndarray) -> None:
    edges[(a, f"{a}-{name}->{b}", b)] = (int64(src), int64(dst))
    edges[(b, f"{b}-{name}->{a}", a)] = (int64(dst), int64(src))


@dataclass(frozen=True)
class Family:
    """select: whether the family takes part in choosing defaults (a graph on which no model leaves the majority
    class can tell no setting from another; it is still scored)."""

    graph: ZooGraph
    about: str = field(default="", compare=False)
    select: bool = True


FAMILIES = {
    "bow_5pct": Family(
        ZooGraph(
            "bow", 3000, (3000, 60), relations=3, informative=2, degree=3, signal=0.25, train_share=0.05, val_share=0.05
        ),
        "papers: binary bag of words, 5% labelled, balanced, 3 relations, 6k nodes",
    ),
    "counts_20pct": Family(
        ZooGraph("counts", 2500, (1500,), relations=2, informative=1, homophily=0.2, signal=0.35, num_classes=4),
        "items: 80 raw count columns (values into the 100s), 20% labelled, 4 classes, 2 relations, 4k nodes",
    ),
    "ids_1pct": Family(
        ZooGraph(
            "none",
            6000,
            (8000, 5000, 1000),
            relations=3,
            informative=3,
            homophily=0.5,
            train_share=0.01,
            val_share=0.01,
        ),
        "no features, 1% labelled (60 nodes), balanced, 3 relations, 20k nodes",
    ),
    "ids_imbalanced": Family(
        ZooGraph(
            "none",
            4000,
            (2000, 1000),
            relations=4,
            informative=2,
            homophily=0.45,
            largest_class=0.6,
            train_share=0.05,
            val_share=0.05,
        ),
        "no features, 5% labelled, 60% in one class, 4 relations, 7k nodes",
    ),
    "kg_80": Family(
        ZooGraph(
            "none",
            2000,
            (3000, 2000, 1000),
            relations=80,
            informative=4,
            degree=1,
            homophily=0.8,
            num_classes=4,
            train_share=0.05,
            val_share=0.05,
        ),
        "knowledge-graph-like: no features, 80 relation types (4 informative), 5% labelled, 8k nodes; no model "
        "leaves the majority class on it (validation and test), so it chooses nothing and is scored only",
        select=False,
    ),
    "dense_indirect": Family(
        ZooGraph(
            "dense",
            3000,
            (3000, 500),
            relations=3,
            informative=2,
            through=True,
            signal=0.15,
            largest_class=0.45,
            train_share=0.2,
            val_share=0.1,
        ),
        "weak dense features, the informative relations two hops away through a middle type, 45% in one "
        "class, 20% labelled, 10k nodes",
    ),
}
