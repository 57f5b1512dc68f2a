"""Every run keeps its model (runs/run_XX/model.pt, tensors only) and predict.py uses it: reloaded weights give the
trained model's logits, the scores printed are the run's own to the last digit, every target node gets a row,
and a damaged, foreign or ill-fitting checkpoint is refused in one line."""

import json
import pickle

import pandas as pd
import pytest
import torch

from conftest import REPO, cfg, run_train
from regnn.catalog import TABLE2_MODELS
from regnn.errors import DataError
from regnn.runs import checkpoint

TABLE2 = list(TABLE2_MODELS)
FIGURE3 = ["sage", "gin", "gatv2", "mixhop", "re_sage", "re_gin", "re_gatv2", "re_mixhop"]


def predict(*overrides, timeout=300):
    import subprocess
    import sys
    import os

    return subprocess.run(
        [sys.executable, str(REPO / "predict.py"), *overrides],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HYDRA_FULL_ERROR": "0"},
    )


@pytest.mark.parametrize("model", TABLE2 + FIGURE3)
def test_a_saved_and_reloaded_model_gives_the_trained_models_logits(model, tmp_path):
    from regnn.pipeline.fullbatch import DeviceGraph

    c = cfg("dataset=synthetic", f"model={model}")
    if c.model.get("metapath") == "best":  # a cell trains one model per meta-path; each saves its own
        c = cfg("dataset=synthetic", f"model={model}", f"model.metapath={next(iter(c.dataset.metapaths))}")
    job = DeviceGraph(c, "cpu")
    trained = job.build(0)
    with torch.no_grad():  # weights unlike any initialisation
        for p in trained.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    checkpoint.save(tmp_path, trained, {"schema": checkpoint.graph_schema(job.data)})
    fresh = job.build(1)
    fresh.load_state_dict(checkpoint.load_weights(tmp_path / checkpoint.MODEL_FILE))
    for m in (trained, fresh):
        m.eval()
    with torch.no_grad():
        a, _ = trained(job.inputs, job.feats)
        b, _ = fresh(job.inputs, job.feats)
    assert torch.equal(a, b)  # the same ops on the same weights: bit for bit
    assert (
        checkpoint.schema_differences(checkpoint.load_meta(tmp_path)["schema"], checkpoint.graph_schema(job.data)) == []
    )


@pytest.fixture(scope="module")
def trained_cell(tmp_path_factory):
    cell = tmp_path_factory.mktemp("cell") / "cell"
    r = run_train(
        "dataset=synthetic",
        "model=re_gcn",
        "runs=3",
        "threads=1",
        "trainer.max_epochs=30",
        "trainer.patience=10",
        f"hydra.run.dir={cell}",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return cell


@pytest.mark.onepython
def test_predict_on_a_cell_prints_its_best_runs_scores_and_writes_every_target_node(trained_cell, tmp_path):
    out = tmp_path / "pred"
    r = predict(f"run={trained_cell}", "ensemble=true", f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads((trained_cell / "results.json").read_text())
    scores = json.loads((out / "scores.json").read_text())
    for rec in summary["per_run"]:  # every run's scores, to the last digit
        got = scores["runs"][f"run_{rec['run']:02d}"]
        assert all(got[k] == rec[k] for k in ("test_micro_f1", "test_macro_f1", "val_micro_f1", "val_macro_f1"))
        assert f"test Micro-F1 {rec['test_micro_f1']:.4f}" in r.stderr
    assert "ensemble of 3 runs: test Micro-F1" in r.stderr and "test_micro_f1" in scores["ensemble"]
    df = pd.read_csv(out / "predictions.csv")
    from regnn.pipeline.from_config import load_data

    d = load_data(cfg("dataset=synthetic").dataset)
    assert len(df) == d.graph.num_nodes(d.target) and list(df.node) == list(range(len(df)))
    for s in ("train", "val", "test"):
        assert sorted(df.node[df.split == s]) == sorted(d.splits[s].tolist())
    probs = df[[c for c in df.columns if c.startswith("p_")]]
    assert ((probs.sum(axis=1) - 1).abs() < 1e-5).all() and (probs.values.argmax(1) == df.predicted).all()
    # one run: the one with the best validation Micro-F1 (ties: the earlier)
    best = max(summary["per_run"], key=lambda rec: (rec["val_micro_f1"], -rec["run"]))
    one = predict(f"run={trained_cell}", f"hydra.run.dir={tmp_path / 'one'}")
    assert one.returncode == 0
    assert f"run_{best['run']:02d}, run {best['run'] + 1} of the cell (best validation" in one.stderr


@pytest.mark.parametrize("damage", ["pickled object", "truncated", "missing"])
def test_a_damaged_or_foreign_checkpoint_is_refused_in_one_line_and_nothing_is_written(trained_cell, tmp_path, damage):
    import shutil

    cell = tmp_path / "cell"
    shutil.copytree(trained_cell, cell)
    path = cell / "runs" / "run_00" / checkpoint.MODEL_FILE
    if damage == "pickled object":
        torch.save({"weight": torch.zeros(2), "payload": pd.DataFrame({"a": [1]})}, path)
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        path.unlink()
    out = tmp_path / "pred"
    r = predict(f"run={cell / 'runs' / 'run_00'}", f"hydra.run.dir={out}")
    errors = [ln for ln in r.stderr.splitlines() if "model.pt" in ln]
    assert r.returncode == 2 and len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert not out.exists()


class Payload:
    """Any object a pickle would rebuild by running code."""


def test_load_weights_refuses_what_is_not_a_state_dict(tmp_path):
    p = tmp_path / "x.pt"
    with open(p, "wb") as f:
        pickle.dump(Payload(), f)
    with pytest.raises(DataError, match="holds more than tensors|damaged"):
        checkpoint.load_weights(p)
    torch.save([torch.zeros(1)], p)
    with pytest.raises(DataError, match="not a model's state dict"):
        checkpoint.load_weights(p)


def test_a_graph_of_another_schema_is_refused_naming_what_differs():
    trained = {
        "target": "item",
        "relations": [["item", "a", "tag"], ["tag", "b", "item"]],
        "feature_widths": {"item": 8, "tag": 4},
        "num_classes": 3,
        "node_types": {"item": 10, "tag": 4},
    }
    grown = {**trained, "node_types": {"item": 60, "tag": 9}}
    assert checkpoint.schema_differences(trained, grown) == []  # more nodes of the same schema: fits
    other = {**trained, "relations": [["item", "a", "tag"]], "feature_widths": {"item": 8, "tag": 9}}
    diff = checkpoint.schema_differences(trained, other)
    assert any("missing ['b']" in d for d in diff) and any("tag features 4 wide when trained, 9 now" in d for d in diff)


def grow(z, new_customers=50, new_shops=10, seed=3):
    """50 new customers (unlabelled, in no split) and 10 new shops, joined only to each other: the old nodes'
    neighbourhoods are unchanged."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n_c, n_s = z["features:customer"].shape[0], z["features:shop"].shape[0]
    for key, n_new in (("features:customer", new_customers), ("features:shop", new_shops)):
        z[key] = np.concatenate([z[key], rng.random((n_new, z[key].shape[1])).astype(z[key].dtype)])
    for rel in [k for k in z if k.startswith("edges:customer:") and k.endswith(":shop")]:
        u = rng.integers(n_c, n_c + new_customers, 120)
        z[rel] = np.concatenate([z[rel], np.stack([u, rng.integers(n_s, n_s + new_shops, 120)])], axis=1)
    z["labels"] = np.concatenate([z["labels"], -np.ones(new_customers, dtype=z["labels"].dtype)])
    for s in ("val", "test"):
        z[s] = np.concatenate([z[s], np.zeros(new_customers, dtype=bool)])


@pytest.mark.onepython
def test_unlabelled_nodes_get_predictions_and_so_do_new_nodes_once_the_graph_grows(tmp_path):
    import numpy as np
    from custom_data import edit_npz, write_npz

    def unlabel(z):  # a fifth of the target nodes taken out of the test split, label -1
        test = np.flatnonzero(z["test"])
        out = test[: len(z["labels"]) // 5]
        z["test"][out] = False
        z["labels"][out] = -1

    graph = write_npz(tmp_path / "shops", change=unlabel).parent
    cell = tmp_path / "cell"
    # standardised features: the grown graph's inputs must be scaled with the statistics of the trained one
    r = run_train(
        "dataset=custom",
        f"dataset.path={graph}",
        "model=re_gcn",
        "runs=1",
        "trainer.max_epochs=20",
        "trainer.patience=20",
        "dataset.feature_norm=standard",
        f"hydra.run.dir={cell}",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    meta = json.loads((cell / "runs" / "run_00" / checkpoint.META_FILE).read_text())
    assert set(meta["feature_scaling"].values()) == {"standard"}
    assert (cell / "runs" / "run_00" / checkpoint.SCALING_FILE).is_file()
    first = predict(f"run={cell}", f"hydra.run.dir={tmp_path / 'p1'}")
    assert first.returncode == 0, first.stderr[-3000:]
    before = pd.read_csv(tmp_path / "p1" / "predictions.csv")
    with np.load(graph / "graph.npz") as f:
        labels = f["labels"]
    unlabelled = np.flatnonzero(labels == -1)
    assert len(unlabelled) > 0.15 * len(labels) and set(before.node[before.split == "unlabelled"]) == set(unlabelled)
    assert (before.label[before.split == "unlabelled"] == -1).all()  # no label shown where the data has none
    assert (before.label[before.split != "unlabelled"].values == labels[before.split != "unlabelled"]).all()
    grown = tmp_path / "shops_v2"
    import shutil

    shutil.copytree(graph, grown)
    edit_npz(grown, grow)
    refused = predict(f"run={cell}", f"dataset_path={grown}", f"hydra.run.dir={tmp_path / 'p2'}")
    assert refused.returncode == 2 and "50 new customer nodes; 10 new shop nodes" in refused.stderr
    assert "changed_graph=true" in refused.stderr and not (tmp_path / "p2").exists()
    second = predict(f"run={cell}", f"dataset_path={grown}", "changed_graph=true", f"hydra.run.dir={tmp_path / 'p2'}")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "customer nodes: 50 new, 0 removed" in second.stderr
    after = pd.read_csv(tmp_path / "p2" / "predictions.csv")
    assert len(after) == len(before) + 50 and set(after.split[len(before) :]) == {"unlabelled"}
    assert after.new_node.tolist() == [False] * len(before) + [True] * 50
    assert json.loads((tmp_path / "p2" / "scores.json").read_text())["graph"]["new"] == {"customer": 50, "shop": 10}
    old = after.iloc[: len(before)]
    assert (old.predicted.values == before.predicted.values).all()
    probs = [c for c in before.columns if c.startswith("p_")]
    assert np.allclose(old[probs].values, before[probs].values, atol=1e-5)
    # another schema: a relation gone
    other = tmp_path / "other"
    shutil.copytree(graph, other)
    edit_npz(other, lambda z: z.pop(next(k for k in z if k.startswith("edges:customer:"))))
    refused = predict(f"run={cell}", f"dataset_path={other}", f"hydra.run.dir={tmp_path / 'p3'}")
    assert refused.returncode == 2 and "does not fit the model" in refused.stderr and "relations" in refused.stderr
    assert not (tmp_path / "p3").exists()


def test_a_minibatch_run_predicts_layer_by_layer_with_its_own_scores(tmp_path):
    cell = tmp_path / "cell"
    import numpy as np

    r = run_train(
        "dataset=synthetic",
        "model=re_gcn",
        "trainer=minibatch",
        "trainer.eval=layerwise",
        "runs=1",
        "threads=1",
        "trainer.max_epochs=4",
        "trainer.patience=4",
        "save_embeddings=true",
        f"hydra.run.dir={cell}",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "pred"
    p = predict(f"run={cell}", "embeddings=true", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-3000:]
    saved, predicted = np.load(cell / "runs" / "run_00" / "embeddings.npz"), np.load(out / "embeddings.npz")
    n = len(pd.read_csv(out / "predictions.csv"))
    assert saved["embeddings"].shape[0] == predicted["embeddings"].shape[0] == n  # every target node
    assert np.allclose(saved["embeddings"], predicted["embeddings"], atol=1e-5)
    assert {"train", "val", "test"} <= set(saved["split"].tolist()) <= {"train", "val", "test", "unlabelled"}
    rec = json.loads((cell / "runs" / "run_00" / "results.json").read_text())
    got = json.loads((out / "scores.json").read_text())["runs"]["run_00"]
    assert all(got[k] == pytest.approx(rec[k], abs=1e-9) for k in ("test_micro_f1", "test_macro_f1", "val_micro_f1"))
    weights = json.loads((out / "relation_weights.json").read_text())["run_00"]
    assert weights == rec["relation_weights"]  # the layers' relation weights, as the run recorded them
    whole = predict(f"run={cell}", "inference=fullbatch", f"hydra.run.dir={tmp_path / 'whole'}")
    assert whole.returncode == 0, whole.stderr[-3000:]
    got = json.loads((tmp_path / "whole" / "scores.json").read_text())["runs"]["run_00"]
    assert all(got[k] == pytest.approx(rec[k], abs=1e-9) for k in ("test_micro_f1", "test_macro_f1", "val_micro_f1"))


@pytest.mark.parametrize("dataset,model", [("synthetic", "re_gcn"), ("synthetic", "re_gat"), ("counts", "re_gcn")])
def test_either_trainers_checkpoint_predicts_through_either_path_with_equal_logits(dataset, model, tmp_path):
    """One model, two trainers: a full-batch run's weights give the same scores layer by layer on blocks as on the
    whole graph, and a mini-batch run's the same on the whole graph as on blocks (counts: feature-less types,
    one-hot ids through the input projection in both)."""
    from regnn.pipeline.fullbatch import DeviceGraph
    from regnn.pipeline.from_config import build_sampled
    from regnn.pipeline.trained_model import model_logits
    from regnn.training.sampling import SampledGraph
    from regnn.config import whole_graph_degrees

    c = cfg(f"dataset={dataset}", f"model={model}", "trainer=minibatch")
    job = DeviceGraph(c, "cpu")
    sg = SampledGraph(job.data, whole_graph_degrees=whole_graph_degrees(c.model))
    for trained, model_ in (("fullbatch", job.build(0)), ("minibatch", build_sampled(c.model, job.data, sg, None))):
        torch.manual_seed(1)
        with torch.no_grad():  # weights unlike any initialisation
            for p in model_.parameters():
                p.add_(torch.randn_like(p) * 0.1)
        run_dir = tmp_path / trained
        checkpoint.save(run_dir, model_, {"seed": 0, "trainer": trained, "schema": checkpoint.graph_schema(job.data)})
        whole, emb_w, rel_w = model_logits(job, c, run_dir, "fullbatch")
        blocks, emb_b, rel_b = model_logits(job, c, run_dir, "minibatch")
        assert whole.shape == blocks.shape == (job.data.graph.num_nodes(job.data.target), job.data.num_classes)
        assert torch.allclose(whole, blocks, atol=1e-4), (trained, (whole - blocks).abs().max())
        assert whole.std() > 0.1  # scores that differ between nodes, not a constant that equals trivially
        assert rel_w == rel_b
        auto, _, _ = model_logits(job, c, run_dir, "auto")
        assert torch.equal(auto, whole if trained == "fullbatch" else blocks)


def test_sparse_embeddings_of_a_minibatch_run_are_read_only_through_blocks(tmp_path):
    from regnn.errors import ConfigError
    from regnn.pipeline.fullbatch import DeviceGraph
    from regnn.pipeline.from_config import build_sampled
    from regnn.pipeline.trained_model import model_logits
    from regnn.training.sampling import SampledGraph

    c = cfg("dataset=counts", "model=re_gcn", "trainer=minibatch", "trainer.embed_dim=8")
    job = DeviceGraph(c, "cpu")
    m = build_sampled(c.model, job.data, SampledGraph(job.data), 8)
    checkpoint.save(tmp_path, m, {"seed": 0, "trainer": "minibatch", "schema": checkpoint.graph_schema(job.data)})
    assert model_logits(job, c, tmp_path, "auto")[0].shape[0] == job.data.graph.num_nodes(job.data.target)
    with pytest.raises(ConfigError, match="sparse embeddings.*inference=minibatch"):
        model_logits(job, c, tmp_path, "fullbatch")
    with pytest.raises(ConfigError, match="inference='blocks'"):
        model_logits(job, c, tmp_path, "blocks")


def test_predict_help_lists_its_own_options_not_the_training_groups():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, str(REPO / "predict.py"), "--help"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    for key in ("run: ???", "ensemble: false", "dataset_path: null", "check_scores: true", "allow_missing: false"):
        assert key in p.stdout
    assert "Configuration groups" not in p.stdout and "backbone" not in p.stdout and "optimizer" not in p.stdout


@pytest.mark.onepython
def test_features_the_run_scaled_are_not_called_unscaled_and_an_ensemble_says_how_far_it_is(tmp_path):
    """counts' raw features are far outside the usual scale; a run that standardised them predicts without the
    warning to scale them (predict applies the run's statistics), one that kept them raw still gets it."""
    for norm in ("standard", "none"):
        cell = tmp_path / norm
        args = ["dataset=counts", "model=re_gcn", "runs=2", "trainer.max_epochs=3", "threads=1"]
        r = run_train(*args, f"dataset.feature_norm={norm}", f"hydra.run.dir={cell}")
        assert r.returncode == 0, r.stderr[-3000:]
        p = predict(f"run={cell}", "ensemble=true", f"hydra.run.dir={tmp_path / ('p_' + norm)}")
        assert p.returncode == 0, p.stderr[-3000:]
        assert ("far outside the usual scale" in p.stderr) == (norm == "none")
        assert "predict: run_00 (1/2, left ~" in p.stderr and "predict: run_01 (2/2, left ~0:00)" in p.stderr
