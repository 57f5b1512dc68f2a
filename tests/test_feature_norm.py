"""dataset.feature_norm (row / standard per node type), the scale warning, and the features-only MLP baseline."""

import logging

import numpy as np
import pytest
import torch

import regnn.config  # noqa: F401  (the repo_root resolver)
from conftest import REPO, cfg, real_dataset_dir
from regnn.data import load_dataset, make_count_graph
from regnn.data.features import one_hot_ids, to_tensor
from regnn.data.scaling import apply_feature_norm, far_outside, scale_matrix
from regnn.pipeline import train

X = np.array([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0], [2.0, 2.0, 4.0], [-1.0, 0.0, 1.0]], dtype=np.float32)


@pytest.mark.parametrize("sparse", [False, True])
def test_row_divides_every_row_by_its_absolute_sum_and_keeps_zero_rows(sparse):
    import scipy.sparse as sp

    x = to_tensor(sp.csr_matrix(X) if sparse else X)
    out = scale_matrix(x, "row")[0]
    assert out.is_sparse == sparse
    expected = X / np.maximum(np.abs(X).sum(1, keepdims=True), 1e-12)
    np.testing.assert_allclose(out.to_dense().numpy(), expected, rtol=1e-6)
    assert not out.to_dense()[1].any()


def test_standard_gives_zero_mean_unit_variance_columns_dense_and_unit_variance_sparse():
    import scipy.sparse as sp

    dense = scale_matrix(torch.from_numpy(X), "standard")[0].numpy()
    np.testing.assert_allclose(dense, (X - X.mean(0)) / X.std(0), rtol=1e-5, atol=1e-6)
    sparse = scale_matrix(to_tensor(sp.csr_matrix(X)), "standard")[0]
    assert sparse.is_sparse  # not centred: a bag-of-words stays sparse
    np.testing.assert_allclose(sparse.to_dense().numpy(), X / X.std(0), rtol=1e-5)


def test_a_mapping_scales_only_the_named_types_and_one_hot_ids_are_left_alone():
    raw = make_count_graph(num_items=90, num_users=30, num_tags=6)
    data = make_count_graph(num_items=90, num_users=30, num_tags=6)
    apply_feature_norm(data, {"item": "row", "user": "standard"})
    np.testing.assert_allclose(data.features["item"].sum(1).numpy(), 1.0, rtol=1e-5)
    for t in ("user", "tag"):  # one-hot ids (no features of their own) are never rescaled
        assert torch.equal(data.features[t].to_dense(), raw.features[t].to_dense())
    with pytest.raises(ValueError, match="movie"):
        apply_feature_norm(data, {"movie": "row"})
    with pytest.raises(ValueError, match="use one of"):
        apply_feature_norm(data, "minmax")


def test_the_scale_warning_fires_on_raw_counts_and_names_the_option(caplog):
    with caplog.at_level(logging.WARNING, logger="regnn"):
        load_dataset("counts", format="synthetic_counts")
    hits = [r.getMessage() for r in caplog.records if "far outside" in r.getMessage()]
    assert len(hits) == 1 and "'item'" in hits[0] and "dataset.feature_norm=row or standard" in hits[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="regnn"):
        data = load_dataset("counts", format="synthetic_counts", feature_norm="standard")
    assert not [r for r in caplog.records if "far outside" in r.getMessage()]
    assert abs(float(data.features["item"].mean())) < 1e-4  # standardised
    assert not far_outside(one_hot_ids(50)) and not far_outside(torch.zeros(5, 10))


def test_auto_standardises_only_the_types_far_outside_the_usual_scale(caplog):
    raw = make_count_graph(num_items=90, num_users=30, num_tags=6)
    data = make_count_graph(num_items=90, num_users=30, num_tags=6)
    assert far_outside(raw.features["item"])
    with caplog.at_level(logging.INFO, logger="regnn"):
        apply_feature_norm(data, "auto")
    want = scale_matrix(raw.features["item"], "standard")[0].numpy()
    np.testing.assert_allclose(data.features["item"].numpy(), want)
    assert not [r for r in caplog.records if "far outside" in r.getMessage() and r.levelno >= logging.WARNING]
    assert any("standardised" in r.getMessage() for r in caplog.records)
    for t in ("user", "tag"):  # one-hot ids stay as they are
        assert torch.equal(data.features[t].to_dense(), raw.features[t].to_dense())
    small = make_count_graph(num_items=90, num_users=30, num_tags=6)
    small.features["item"] = small.features["item"] / 100  # within the usual scale: left as stored
    kept = small.features["item"].clone()
    apply_feature_norm(small, "auto")
    assert torch.equal(small.features["item"], kept)


@pytest.mark.parametrize("name", ["dblp", "acm", "imdb"])
def test_the_scale_warning_stays_silent_on_the_builtin_datasets(name, caplog):
    from omegaconf import OmegaConf

    feats_type = OmegaConf.load(REPO / f"conf/dataset/{name}.yaml").feats_type
    with caplog.at_level(logging.WARNING, logger="regnn"):
        data = load_dataset(name, dir=real_dataset_dir(name.upper()), feats_type=feats_type)
    assert not [r for r in caplog.records if "far outside" in r.getMessage()]
    assert data.features  # loaded, untouched: feature_norm defaults to none


def test_builtin_dataset_configs_default_to_no_scaling_and_a_mapping_is_accepted():
    for name in ("dblp", "acm", "imdb", "synthetic", "counts"):
        assert cfg(f"dataset={name}").dataset.feature_norm == "none"
    assert cfg("dataset=custom").dataset.feature_norm == "auto"  # a user's graph: raw counts are standardised
    assert dict(cfg("dataset=counts", "dataset.feature_norm={item: row}").dataset.feature_norm) == {"item": "row"}


def test_mlp_trains_on_the_count_graph_and_beats_chance_by_far(tmp_path):
    summary = train(
        cfg(
            "dataset=counts",
            "model=mlp",
            "dataset.feature_norm=standard",
            "runs=2",
            "trainer.max_epochs=60",
            "trainer.patience=60",
            "optimizer.lr=0.01",
        ),
        tmp_path,
    )
    assert summary["relation_names"] and summary["num_parameters"] > 0
    # 3 balanced classes: chance is ~33%; the counts carry most of the signal (logistic regression: ~88%)
    assert summary["metrics"]["val_micro_f1"]["mean"] > 75 and summary["metrics"]["test_micro_f1"]["mean"] > 75


def test_mlp_ignores_the_graph():
    from regnn.models import REGNN, RelationInputs
    from regnn.pipeline import model_kwargs

    data = make_count_graph(num_items=60, num_users=20, num_tags=4)
    mcfg = cfg("dataset=counts", "model=mlp").model
    inputs = RelationInputs.build(data)
    torch.manual_seed(0)
    model = REGNN.from_inputs(inputs, data.in_dims, data.num_classes, **model_kwargs(mcfg)).eval()
    other = make_count_graph(num_items=60, num_users=20, num_tags=4, homophily=0.9, seed=1)
    other.features = data.features  # same features, other links
    a, _ = model(inputs, data.features)
    b, _ = model(RelationInputs.build(other), data.features)
    assert torch.equal(a, b) and not list(model.relations.parameters())


@pytest.mark.parametrize("norm", ["auto", "standard", "row", {"item": "standard", "user": "row"}])
def test_stored_scaling_gives_the_same_bits_and_is_never_refitted_on_another_graph(norm):
    trained = make_count_graph(num_items=90, num_users=30, num_tags=6)
    apply_feature_norm(trained, norm)
    again = make_count_graph(num_items=90, num_users=30, num_tags=6)
    apply_feature_norm(again, "none", fitted=trained.feature_scaling)
    for t in trained.features:
        assert torch.equal(again.features[t].to_dense(), trained.features[t].to_dense()), t
    grown = make_count_graph(num_items=90, num_users=30, num_tags=6)
    grown.features["item"] = grown.features["item"] * 3  # another graph: its own column statistics differ
    refit = make_count_graph(num_items=90, num_users=30, num_tags=6)
    refit.features["item"] = refit.features["item"] * 3
    apply_feature_norm(grown, "none", fitted=trained.feature_scaling)
    apply_feature_norm(refit, norm)
    if trained.feature_scaling.get("item", {}).get("method") == "standard":
        stats = trained.feature_scaling["item"]
        raw = make_count_graph(num_items=90, num_users=30, num_tags=6).features["item"].to_dense().double() * 3
        expect = (raw - torch.from_numpy(stats["mean"])) / torch.from_numpy(stats["scale"])
        torch.testing.assert_close(grown.features["item"].to_dense().double(), expect, rtol=1e-5, atol=1e-5)
        assert not torch.allclose(grown.features["item"].to_dense(), refit.features["item"].to_dense())
