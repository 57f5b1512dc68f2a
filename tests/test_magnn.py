"""MAGNN and MAGNN-AC: meta-path instances against a hand count, the seeded sampler, the rotation encoder's
reverse relations, training on the synthetic graph (MAGNN-AC with the target's features removed, so they must be
completed), and the configs of the three paper datasets."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from conftest import fullbatch

from regnn.data.hetero import HeteroGraph
from regnn.errors import ConfigError
from regnn.models.baselines.magnn import MetapathInstances, RotationEncoder, pad_by_end, reverse_pairs
from regnn.models.baselines.magnn_ac import CompletionInputs, featureless
from regnn.models.baselines.metapath_instances import metapath_instances
from regnn.pipeline import arch_of, build_model, check, load_data, model_kwargs
from regnn.pipeline.from_config import prepare_inputs
from regnn.training.seed import seed_everything
from regnn.training.trainer import train_run
from test_baselines import cfg

APA = ["author->paper", "paper->author"]
APTPA = ["author->paper", "paper->term", "term->paper", "paper->author"]
SMALL = ["model.hidden=16", "model.heads=2", "model.attn_vec_dim=16", "model.max_instances=20"]


def hand_graph():
    """Authors a0 a1 a2, papers p0 p1, one term t0: a0-p0, a1-p0, a1-p1, a2-p1, p0-t0, p1-t0 (a0-p0 twice)."""
    ap = torch.tensor([[0, 0], [1, 0], [1, 1], [2, 1], [0, 0]])
    pt = torch.tensor([[0, 0], [1, 0]])
    return HeteroGraph(
        {
            ("author", "author->paper", "paper"): (ap[:, 0], ap[:, 1]),
            ("paper", "paper->author", "author"): (ap[:, 1], ap[:, 0]),
            ("paper", "paper->term", "term"): (pt[:, 0], pt[:, 1]),
            ("term", "term->paper", "paper"): (pt[:, 1], pt[:, 0]),
        },
        {"author": 3, "paper": 2, "term": 1},
    )


def test_apa_instances_match_the_hand_count():
    # (first author, paper, end author), ordered by the end author; the duplicated a0-p0 edge counts once
    want = [(0, 0, 0), (1, 0, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (2, 1, 1), (1, 1, 2), (2, 1, 2)]
    assert metapath_instances(hand_graph(), APA).tolist() == [list(r) for r in want]


def test_aptpa_instances_match_the_hand_count():
    # both papers carry t0: an instance ending at author e runs a - p - t0 - p' - e with p' a paper of e and
    # a an author of p (p0: a0, a1; p1: a1, a2): 4 per paper of e, so a0: 4, a1: 8, a2: 4
    ends_at = {0: [0], 1: [0, 1], 2: [1]}  # the papers of each author
    authors = {0: [0, 1], 1: [1, 2]}
    want = [(a, p, 0, q, e) for e in range(3) for q in ends_at[e] for p in (0, 1) for a in authors[p]]
    want.sort(key=lambda r: (r[4], *r[:4]))
    got = metapath_instances(hand_graph(), APTPA)
    assert got.tolist() == [list(r) for r in want] and len(want) == 16


def test_capped_nodes_keep_all_their_instances_or_a_seeded_sample_of_them():
    g = hand_graph()
    full = {tuple(r) for r in metapath_instances(g, APTPA).tolist()}
    a = metapath_instances(g, APTPA, cap=4, seed=3)
    assert np.array_equal(a, metapath_instances(g, APTPA, cap=4, seed=3))  # the same seed, the same draw
    ends = np.bincount(a[:, -1], minlength=3)
    assert ends[0] == 4 and ends[2] == 4 and 1 <= ends[1] <= 4  # a1 has 8: 4 draws, repeats dropped
    assert {tuple(r) for r in a.tolist()} <= full
    # every instance of a1 equally likely: over 300 seeds each of its 8 is drawn in 1 - (7/8)^4 = 41% of them
    seen = {r: 0 for r in full if r[-1] == 1}
    for s in range(300):
        for r in metapath_instances(g, APTPA, cap=4, seed=s).tolist():
            if r[-1] == 1:
                seen[tuple(r)] += 1
    assert all(80 <= c <= 170 for c in seen.values()), seen


def test_padding_keeps_each_target_s_instances_and_masks_the_rest():
    inst = torch.from_numpy(metapath_instances(hand_graph(), APA))
    buckets = pad_by_end(inst, 3)  # counts 2, 4, 2: two buckets (up to 2, up to 4)
    assert [(b[0].tolist(), tuple(b[1].shape)) for b in buckets] == [([0, 2], (2, 2, 3)), ([1], (1, 4, 3))]
    got = torch.cat([p[m] for _, p, m in buckets])
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, inst.tolist()))
    assert all((p[..., -1] == ids.unsqueeze(1)).all() for ids, p, _ in buckets)  # every slot ends at its node


def test_reverse_relations_share_a_conjugated_rotation_so_symmetric_paths_leave_both_ends_unrotated():
    pairs = reverse_pairs(hand_graph())
    assert pairs["author->paper"][0] == pairs["paper->author"][0] != pairs["paper->term"][0]
    assert pairs["author->paper"][1] != pairs["paper->author"][1]
    enc = RotationEncoder(len({i for i, _ in pairs.values()}), 8)
    rots = enc.position_rotations([pairs[r] for r in APTPA])
    torch.testing.assert_close(rots[0], torch.ones_like(rots[0]))  # the first author: rotations cancel
    torch.testing.assert_close(rots[-1], torch.ones_like(rots[-1]))
    assert torch.allclose(rots[2].abs(), torch.ones(4)) and not torch.allclose(rots[2], torch.ones_like(rots[2]))


@pytest.fixture(scope="module")
def synthetic():
    return load_data(cfg("dataset=synthetic").dataset)


def _train(model, data, *overrides):
    c = cfg("dataset=synthetic", f"model={model}", *SMALL, *overrides)
    inputs = arch_of(c.model).prepare(data, "cpu", **model_kwargs(c.model))
    seed_everything(0)
    net = build_model(c.model, data, inputs)
    r = train_run(
        net,
        inputs,
        data.features,
        data.labels,
        data.splits,
        seed=0,
        options=fullbatch(max_epochs=60, patience=60, optimizer=OmegaConf.to_container(c.optimizer)),
    )
    return r, net, inputs


def test_magnn_learns_the_planted_signal_and_weighs_the_trusted_metapath_up(synthetic):
    r, net, inputs = _train("magnn", synthetic)
    majority = torch.bincount(synthetic.labels).max().item() / synthetic.labels.numel() * 100
    assert majority < 40 and r.metrics["test_micro_f1"] >= 70.0, r.metrics["test_micro_f1"]
    beta = net.relation_weights()[0]
    assert beta["ISI"] > beta["INI"]  # ISI joins items of a class, INI random ones
    logits, emb = net(inputs, synthetic.features, embed=True)
    assert emb.shape == (synthetic.labels.numel(), 16 * 2)


def test_magnn_ac_completes_the_removed_target_features_from_the_sources(synthetic):
    data = replace(synthetic, features={**synthetic.features, "item": torch.zeros(synthetic.labels.numel(), 8)})
    assert featureless(data.features["item"]) and not featureless(data.features["source"])
    r, net, inputs = _train("magnn_ac", data)
    assert inputs.sources == {"item": "source"} and inputs.rebuild_source == "source"
    assert "item" not in net.proj.lins  # a completed type has no projection of its own
    assert r.metrics["test_micro_f1"] >= 70.0, r.metrics["test_micro_f1"]
    net.train()
    net(inputs, data.features)
    assert net.auxiliary_loss() is not None and net.auxiliary_loss().item() > 0  # HGNN-AC's rebuild term
    net.eval()
    net(inputs, data.features)
    assert net.auxiliary_loss() is None


def test_magnn_ac_rebuild_term_is_the_dense_attention_over_visible_neighbours(synthetic):
    data = replace(synthetic, features={**synthetic.features, "item": torch.zeros(synthetic.labels.numel(), 8)})
    c = cfg("dataset=synthetic", "model=magnn_ac", *SMALL, "model.dropout=0")
    inputs = arch_of(c.model).prepare(data, "cpu", **model_kwargs(c.model))
    seed_everything(0)
    net = build_model(c.model, data, inputs).train()
    torch.manual_seed(3)
    h = net.project(inputs, data.features)
    s, (src, dst) = inputs.rebuild_source, inputs.rebuild
    n = h[s].shape[0]
    torch.manual_seed(3)  # the same draw of hidden nodes as project's
    hidden = torch.rand(n) < net.feats_drop_rate
    adj = torch.zeros(n, n, dtype=torch.bool)
    adj[dst, src] = True
    adj &= ~hidden.view(1, -1)  # hidden features are never read
    e = inputs.emb[s]
    heads = []
    for k in range(net.complete.u.shape[0]):
        z = e @ net.complete.u[k]  # source and destination are the same nodes here
        score = torch.nn.functional.leaky_relu(z @ net.complete.v[k] @ z.T, 0.2)
        a = torch.softmax(score.masked_fill(~adj, float("-inf")), 1).nan_to_num(0.0)
        heads.append(torch.nn.functional.elu(a @ h[s]))
    rebuilt = torch.stack(heads).mean(0)
    rows = hidden & adj.any(1)
    assert 0 < rows.sum() < n
    want = net.loss_lambda * (h[s][rows] - rebuilt[rows]).norm(dim=1).mean()
    assert torch.allclose(net.auxiliary_loss(), want, atol=1e-5), (net.auxiliary_loss(), want)


def test_one_hot_ids_and_zeros_count_as_featureless():
    from regnn.data.features import one_hot_ids

    assert featureless(one_hot_ids(5)) and featureless(torch.zeros(4, 10))
    assert not featureless(torch.eye(4)[:, :3].to_sparse()) and not featureless(torch.ones(3, 2))


@pytest.mark.parametrize(
    "dataset,metapaths", [("dblp", ["APA", "APTPA", "APVPA"]), ("acm", ["PAP", "PSP"]), ("imdb", ["MDM", "MAM"])]
)
@pytest.mark.parametrize("model", ["magnn", "magnn_ac"])
def test_configs_compose_with_the_papers_settings(dataset, metapaths, model):
    c = cfg(f"dataset={dataset}", f"model={model}")
    check(c)
    assert list(c.model.metapaths) == metapaths and c.model.arch == model
    assert (c.model.hidden, c.model.heads, c.model.attn_vec_dim, c.model.dropout) == (64, 8, 128, 0.5)
    assert (c.optimizer.lr, c.optimizer.weight_decay) == (0.005, 0.001)
    assert c.model.max_instances == 100


def test_bad_max_instances_is_refused_in_one_line(synthetic):
    c = cfg("dataset=synthetic", "model=magnn", "model.max_instances=0")
    with pytest.raises(ValueError, match="model.max_instances=0 is not valid"):
        MetapathInstances.build(synthetic, "cpu", **model_kwargs(c.model))
    with pytest.raises(ConfigError, match="^model.max_instances=0 is not valid"):
        prepare_inputs(c.model, synthetic, "cpu")
    with pytest.raises(Exception, match="hiden"):
        cfg("dataset=synthetic", "model=magnn", "model.hiden=3")


def test_completion_inputs_are_built_for_acm_like_one_hot_types(synthetic):
    from regnn.data.features import one_hot_ids

    data = replace(synthetic, features={**synthetic.features, "source": one_hot_ids(150)})
    inputs = CompletionInputs.build(data, "cpu", metapaths={"ISI": ["item->source", "source->item"]})
    assert inputs.sources == {"source": "item"} and inputs.projected_types() == ["item"]
    assert inputs.emb["source"].shape == (150, 64) and inputs.graphs["source"].indices.numel() > 0
