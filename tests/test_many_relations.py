"""regnn.data.many_relations: the feature-less many-relation graph has the relations, labels and splits it says."""

import numpy as np

from regnn.data.many_relations import ManyRelationGraph


def test_the_graph_has_its_relations_its_imbalance_and_few_labels():
    d = ManyRelationGraph(num_entities=800, num_others=400, largest_class=0.56, labelled=100).build()
    assert len(d.graph.canonical_etypes) == 80
    assert all(d.is_id_only(t) for t in d.graph.ntypes)
    share = float((d.labels == 0).float().mean())
    assert 0.5 < share < 0.62
    sizes = {s: len(i) for s, i in d.splits.items()}
    assert sizes == {"train": 60, "val": 15, "test": 25}
    assert len(d.unlabelled) == 700 and not np.intersect1d(d.unlabelled, d.splits["train"]).size


def test_only_the_informative_relations_say_the_class():
    g = ManyRelationGraph(num_entities=2000, num_others=2000, degree=20, homophily=0.9)
    d = g.build()
    y = d.labels.numpy()

    def agreement(k):  # the share of relation k's links that reach a node of the entity's class
        src, dst = (
            x.numpy() for x in d.graph.edges(etype=next(c for c in d.graph.canonical_etypes if c[1] == f"r{k}"))
        )
        return float((y[src] == dst % g.num_classes).mean())

    assert agreement(0) > 0.85 and agreement(39) > 0.85  # informative: the first and the last kinds
    assert abs(agreement(1) - 1 / g.num_classes) < 0.05  # a random kind: chance
