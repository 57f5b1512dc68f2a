"""K-Means scores of Table 3: each repeat keeps the best of n_init starts, as scikit-learn 1.0.2's default did."""

import numpy as np
import pytest
from omegaconf import OmegaConf
from sklearn.cluster import KMeans

from regnn.evaluation.clustering import cluster_scores


def _blobs(seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(6, 4))
    labels = np.repeat(np.arange(6), 40)
    return centres[labels] + rng.normal(size=(240, 4)), labels


def test_each_repeat_is_the_best_of_n_init_starts():
    x, y = _blobs()
    got = cluster_scores(x, y, 6, repeats=3, n_init=10, seed=5)
    from sklearn.metrics import normalized_mutual_info_score

    want = [
        100 * normalized_mutual_info_score(y, KMeans(6, n_init=10, random_state=5 + r).fit_predict(x)) for r in range(3)
    ]
    assert got["nmi"] == pytest.approx(np.mean(want)) and got["nmi_std"] == pytest.approx(np.std(want))


def test_more_starts_never_end_at_a_worse_inertia_and_steady_the_scores():
    x, y = _blobs(1)
    one = [KMeans(6, n_init=1, random_state=r).fit(x).inertia_ for r in range(10)]
    ten = [KMeans(6, n_init=10, random_state=r).fit(x).inertia_ for r in range(10)]
    assert all(t <= o + 1e-9 for t, o in zip(ten, one))
    s1 = cluster_scores(x, y, 6, repeats=10, n_init=1, seed=0)
    s10 = cluster_scores(x, y, 6, repeats=10, n_init=10, seed=0)
    assert s10["nmi_std"] <= s1["nmi_std"] and s10["nmi"] >= s1["nmi"] - 1e-9


@pytest.mark.parametrize("override", ["clustering.n_init=0", "clustering.n_init=2.5", "clustering.repeats=0"])
def test_bad_clustering_settings_are_refused(override):
    from conftest import cfg

    from regnn.config import validate
    from regnn.errors import ConfigError
    from regnn.models.backbones import BACKBONES

    with pytest.raises(ConfigError, match=override.split("=")[0]):
        validate(cfg("dataset=synthetic", "clustering.enabled=true", override), BACKBONES, {})


def test_the_table_names_cells_clustered_with_fewer_starts_than_the_config_default():
    from conftest import cfg

    from regnn.reporting.clustering import N_INIT, starts

    assert cfg("dataset=synthetic").clustering.n_init == N_INIT
    old = {"per_run": [{"nmi": 50.0}, {"nmi": 40.0}]}
    new = {"per_run": [{"nmi": 50.0, "kmeans_starts": 10}, {"failed": True}]}
    assert starts(old) == 1 and starts(new) == 10


def test_recluster_gives_what_training_with_the_new_starts_gives(tmp_path):
    """A cell clustered with one start, re-clustered from its saved representations, equals the same cell trained
    with ten starts; its config then resumes under the ten-start default."""
    from conftest import cfg

    from regnn.runs import io_safe
    from regnn.pipeline import train
    from regnn.pipeline.recluster import main
    from regnn.runs.computation import check_same_computation

    base = [
        "dataset=synthetic",
        "model=re_gcn",
        "runs=2",
        "workers=1",
        "threads=1",
        "trainer.max_epochs=3",
        "clustering.enabled=true",
        "clustering.repeats=2",
        "save_embeddings=true",
    ]
    train(cfg(*base, "clustering.n_init=1"), tmp_path / "old")
    train(cfg(*base, "clustering.n_init=10"), tmp_path / "new")
    assert main([str(tmp_path / "old"), "--n-init", "10"]) == 0
    old, new = (io_safe.read_json(tmp_path / d / "results.json") for d in ("old", "new"))
    for k in ("nmi", "ari", "test_micro_f1"):
        assert old["metrics"][k] == new["metrics"][k]
    assert [r["kmeans_starts"] for r in old["per_run"]] == [10, 10]
    assert io_safe.read_json(tmp_path / "old" / "runs" / "run_01" / "results.json")["nmi"] == new["per_run"][1]["nmi"]
    now = OmegaConf.to_container(cfg(*base, "resume=true"), resolve=True)
    check_same_computation(now, tmp_path / "old")  # raises where the settings differ


def test_recluster_refuses_a_cell_without_representations(tmp_path):
    from conftest import cfg

    from regnn.pipeline import train
    from regnn.pipeline.recluster import main

    train(
        cfg(
            "dataset=synthetic",
            "model=re_gcn",
            "runs=1",
            "workers=1",
            "threads=1",
            "trainer.max_epochs=2",
            "clustering.enabled=true",
            "clustering.repeats=2",
        ),
        tmp_path / "c",
    )
    with pytest.raises(SystemExit, match="kept no embeddings.npz; retrain"):
        main([str(tmp_path / "c")])
