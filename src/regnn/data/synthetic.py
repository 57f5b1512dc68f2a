"""A small heterograph with the class signal planted in its relation structure, for tests and smoke runs.

Target nodes ("item") have uninformative features. Each item links to a few "source" nodes of its own class
through the relation `item->source` ("trusted") and to many random source nodes through `item->noise`
("random"); source nodes carry a noisy one-hot of their class. Both relations reach the same node type, so a
type-specific projection cannot separate them: a plain GNN averages the few informative neighbours with the
many random ones, while RE-GNN can learn to weigh the trusted relation up. A third type ("tag") hangs off the
source nodes and carries no signal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from regnn.data.dataset import HeteroDataset
from regnn.data.features import one_hot_ids
from regnn.data.hetero import HeteroGraph


def int64(a) -> torch.Tensor:
    return torch.from_numpy(np.asarray(a, dtype=np.int64))


def make_synthetic(
    num_items: int = 300,
    num_sources: int = 150,
    num_tags: int = 20,
    num_classes: int = 3,
    trusted_degree: int = 2,
    random_degree: int = 12,
    feat_dim: int = 8,
    signal: float = 1.0,
    seed: int = 0,
) -> HeteroDataset:
    rng = np.random.default_rng(seed)
    item_y = rng.integers(0, num_classes, num_items)
    src_y = np.arange(num_sources) % num_classes
    by_class = [np.flatnonzero(src_y == c) for c in range(num_classes)]
    t_u = np.repeat(np.arange(num_items), trusted_degree)
    t_v = np.concatenate([rng.choice(by_class[c], trusted_degree, replace=False) for c in item_y])
    r_u = np.repeat(np.arange(num_items), random_degree)
    r_v = rng.integers(0, num_sources, num_items * random_degree)
    g_u = np.arange(num_sources)
    g_v = rng.integers(0, num_tags, num_sources)
    graph = HeteroGraph(
        {
            ("item", "item->source", "source"): (int64(t_u), int64(t_v)),
            ("source", "source->item", "item"): (int64(t_v), int64(t_u)),
            ("item", "item->noise", "source"): (int64(r_u), int64(r_v)),
            ("source", "noise->item", "item"): (int64(r_v), int64(r_u)),
            ("source", "source->tag", "tag"): (int64(g_u), int64(g_v)),
            ("tag", "tag->source", "source"): (int64(g_v), int64(g_u)),
        },
        {"item": num_items, "source": num_sources, "tag": num_tags},
    )
    src_x = rng.normal(0, 1, (num_sources, feat_dim)).astype(np.float32)
    src_x[np.arange(num_sources), src_y] += 2.0 * signal
    features = {
        "item": torch.from_numpy(rng.normal(0, 1, (num_items, feat_dim)).astype(np.float32)),
        "source": torch.from_numpy(src_x),
        "tag": torch.from_numpy(rng.normal(0, 1, (num_tags, feat_dim)).astype(np.float32)),
    }
    return HeteroDataset(
        name="synthetic",
        graph=graph,
        features=features,
        target="item",
        labels=int64(item_y),
        splits=random_split(rng, num_items, 0.4, 0.2),
        num_classes=num_classes,
    )


def random_split(rng, n: int, train: float, val: float) -> dict[str, torch.Tensor]:
    """Sorted ids of a random train/val/test split of n nodes (the rest is test)."""
    perm = rng.permutation(n)
    a, b = int(train * n), int(train * n) + int(val * n)
    return {
        s: torch.from_numpy(np.sort(ids).astype(np.int64))
        for s, ids in (("train", perm[:a]), ("val", perm[a:b]), ("test", perm[b:]))
    }


def homophilous_links(rng, y: np.ndarray, degree: int, homophily: float, n: int, num_classes: int):
    """(src, dst): `degree` links from every target node to n other nodes (node i of class i % num_classes), each
    to a node of its own class with probability `homophily`, else to a random one."""
    of_class = np.arange(n) % num_classes
    by_class = [np.flatnonzero(of_class == c) for c in range(num_classes)]
    src = np.repeat(np.arange(len(y)), degree)
    same = rng.random(src.size) < homophily
    return src, np.where(same, [rng.choice(by_class[c]) for c in y[src]], rng.integers(0, n, src.size))


def class_labels(rng, n: int, num_classes: int, largest_class: float = 0.0) -> np.ndarray:
    """n class labels: every class equally likely, or class 0 with probability `largest_class` and the others
    sharing the rest equally."""
    if not 0 <= largest_class < 1:
        raise ValueError(f"largest_class is a share in [0, 1), got {largest_class}")
    if not largest_class:
        return rng.integers(0, num_classes, n)
    rest = (1 - largest_class) / (num_classes - 1)
    return rng.choice(num_classes, n, p=[largest_class] + [rest] * (num_classes - 1))


def both_ways(target: str, links: dict[str, tuple]) -> dict[tuple, tuple]:
    """{other type: (target ids, other ids)} -> the relations target->other and other->target of each, in order."""
    relations = {}
    for other, (src, dst) in links.items():
        relations[(target, f"{target}->{other}", other)] = (int64(src), int64(dst))
        relations[(other, f"{other}->{target}", target)] = (int64(dst), int64(src))
    return relations


@dataclass(frozen=True)
class CountGraph:
    """A heterograph like many users' own: the target nodes' features are raw counts (Poisson, rates up to
    `max_rate`) that carry most of the class signal, and the structure is only weakly informative.

    Class c draws counts with rates max_rate * (overlap * shared + (1 - overlap) * own_c) per dimension, so the
    classes overlap and features alone do not separate them perfectly. Every item links to `user_degree` users;
    with probability `homophily` a user of its own class (users carry a class only through these links), else a
    random one. Tags link to random items (no signal). Users and tags have no features (one-hot ids). Split
    30/30/40 (train/val/test), so the validation set is large enough to compare settings on.
    """

    num_items: int = 800
    num_users: int = 400
    num_tags: int = 50
    num_classes: int = 3
    feat_dim: int = 20
    max_rate: float = 60.0
    overlap: float = 0.8
    user_degree: int = 6
    homophily: float = 0.15
    tag_degree: int = 4
    seed: int = 0

    def build(self) -> HeteroDataset:
        s = self
        rng = np.random.default_rng(s.seed)
        y = rng.integers(0, s.num_classes, s.num_items)
        shared = rng.uniform(0.05, 1.0, s.feat_dim)
        own = rng.uniform(0.05, 1.0, (s.num_classes, s.feat_dim))
        rates = s.max_rate * (s.overlap * shared + (1 - s.overlap) * own)
        x = rng.poisson(rates[y]).astype(np.float32)
        u_item, u_user = homophilous_links(rng, y, s.user_degree, s.homophily, s.num_users, s.num_classes)
        t_item = np.repeat(np.arange(s.num_items), s.tag_degree)
        t_tag = rng.integers(0, s.num_tags, t_item.size)
        graph = HeteroGraph(
            both_ways("item", {"user": (u_item, u_user), "tag": (t_item, t_tag)}),
            {"item": s.num_items, "user": s.num_users, "tag": s.num_tags},
        )
        features = {"item": torch.from_numpy(x), "user": one_hot_ids(s.num_users), "tag": one_hot_ids(s.num_tags)}
        return HeteroDataset(
            name="counts",
            graph=graph,
            features=features,
            target="item",
            labels=int64(y),
            splits=random_split(rng, s.num_items, 0.3, 0.3),
            num_classes=s.num_classes,
        )


def make_count_graph(**shape) -> HeteroDataset:
    """The graph of `CountGraph(**shape)` (its fields: sizes, count rates, link degrees, seed)."""
    return CountGraph(**shape).build()


@dataclass(frozen=True)
class BowGraph:
    """A graph like HGB's ACM: target nodes ("paper") carry wide, sparse, binary bag-of-words features, "author" and
    "subject" nodes the word counts of their papers, and "term" nodes (the words themselves) carry none (one-hot
    ids) while linking to every paper that uses them: a feature-less type with many edges.

    Each class owns `topic_words` words of the `vocab`; a paper draws `words` distinct words, each from its class's
    own words with probability `topic_share`, else from the whole vocabulary. Every paper has `author_degree`
    authors (of its own class with probability `homophily`, else random) and one subject (of its class with
    probability `subject_homophily`). Split `train_share`/`val_share`/rest (20/5/75): a small validation set, as in
    many users' graphs.
    """

    num_papers: int = 1500
    num_authors: int = 2000
    num_subjects: int = 50
    num_classes: int = 3
    vocab: int = 1000
    topic_words: int = 80
    words: int = 30
    topic_share: float = 0.2
    author_degree: int = 3
    homophily: float = 0.5
    subject_homophily: float = 0.6
    train_share: float = 0.2
    val_share: float = 0.05
    seed: int = 0

    def _words(self, rng, y: np.ndarray) -> np.ndarray:
        """(papers, vocab) 0/1: each paper's distinct words."""
        s = self
        own = rng.random((len(y), s.words)) < s.topic_share
        topic = y[:, None] * s.topic_words + rng.integers(0, s.topic_words, (len(y), s.words))
        x = np.zeros((len(y), s.vocab), dtype=np.float32)
        x[np.arange(len(y))[:, None], np.where(own, topic, rng.integers(0, s.vocab, (len(y), s.words)))] = 1.0
        return x

    def build(self) -> HeteroDataset:
        s = self
        rng = np.random.default_rng(s.seed)
        y = rng.integers(0, s.num_classes, s.num_papers)
        x = self._words(rng, y)
        pa, aa = homophilous_links(rng, y, s.author_degree, s.homophily, s.num_authors, s.num_classes)
        ps, ss = homophilous_links(rng, y, 1, s.subject_homophily, s.num_subjects, s.num_classes)
        pt, tt = np.nonzero(x)

        def counts(src, dst, n):  # the word counts of each node's papers
            out = np.zeros((n, s.vocab), dtype=np.float32)
            np.add.at(out, dst, x[src])
            return torch.from_numpy(out)

        graph = HeteroGraph(
            both_ways("paper", {"author": (pa, aa), "subject": (ps, ss), "term": (pt, tt)}),
            {"paper": s.num_papers, "author": s.num_authors, "subject": s.num_subjects, "term": s.vocab},
        )
        features = {
            "paper": torch.from_numpy(x),
            "author": counts(pa, aa, s.num_authors),
            "subject": counts(ps, ss, s.num_subjects),
            "term": one_hot_ids(s.vocab),
        }
        return HeteroDataset(
            name="bow",
            graph=graph,
            features=features,
            target="paper",
            labels=int64(y),
            splits=random_split(rng, s.num_papers, s.train_share, s.val_share),
            num_classes=s.num_classes,
        )


@dataclass(frozen=True)
class IdGraph:
    """A graph without node features, like a movie or paper graph read from ids alone: every type, the target
    ("movie") included, carries one-hot ids, and the neighbour types are several times larger than the target.

    Each movie has one director, `actor_degree` actors and `keyword_degree` keywords, each of its own class with
    probability `homophily` (node i of a type belongs to class i % num_classes), else random. Few labelled
    movies (`train_share`) and a small validation set (`val_share`). `largest_class`: the share of movies in class
    0, the others sharing the rest equally (0: every class equally likely).
    """

    num_movies: int = 2000
    num_directors: int = 800
    num_actors: int = 8000
    num_keywords: int = 3000
    num_classes: int = 3
    actor_degree: int = 6
    keyword_degree: int = 8
    homophily: float = 0.6
    director_homophily: float = 0.6
    train_share: float = 0.08
    val_share: float = 0.04
    largest_class: float = 0.0
    seed: int = 0

    def build(self) -> HeteroDataset:
        s = self
        rng = np.random.default_rng(s.seed)
        y = class_labels(rng, s.num_movies, s.num_classes, s.largest_class)
        sizes = {"movie": s.num_movies, "director": s.num_directors, "actor": s.num_actors, "keyword": s.num_keywords}
        links = {
            "director": homophilous_links(rng, y, 1, s.director_homophily, s.num_directors, s.num_classes),
            "actor": homophilous_links(rng, y, s.actor_degree, s.homophily, s.num_actors, s.num_classes),
            "keyword": homophilous_links(rng, y, s.keyword_degree, s.homophily, s.num_keywords, s.num_classes),
        }
        return HeteroDataset(
            name="ids",
            graph=HeteroGraph(both_ways("movie", links), sizes),
            features={k: one_hot_ids(n) for k, n in sizes.items()},
            target="movie",
            labels=int64(y),
            splits=random_split(rng, s.num_movies, s.train_share, s.val_share),
            num_classes=s.num_classes,
        )
