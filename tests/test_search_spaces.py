"""experiment=tune for the heterogeneous baselines: each model with a conf/search/tune_<model>.yaml searches its own
space (replacing the RE-GNN family's), every searched key exists in the model's config, and a trial trains."""

import json

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from conftest import REPO, run_train

BASELINES = ["rgcn", "simple_hgn", "hgt", "han"]


def _compose(model: str, dataset: str = "synthetic"):
    import regnn.config  # noqa: F401  (the ${repo_root:} resolver)

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            "train", overrides=["experiment=tune", f"dataset={dataset}", f"model={model}"], return_hydra_config=True
        )


@pytest.mark.parametrize("model", BASELINES)
@pytest.mark.parametrize("dataset", ["synthetic", "dblp"])
def test_a_baseline_space_composes_and_names_only_keys_of_its_model(model, dataset):
    from regnn.tuning.space import search_space

    cfg = _compose(model, dataset)
    params = OmegaConf.to_container(cfg.hydra.sweeper.params)
    assert cfg.hydra.runtime.choices["search@_global_"] == f"tune_{model}"
    space, fixed = search_space(params, [])
    assert len(space) == len(params) >= 5 and not fixed  # every entry is a distribution Optuna can sample
    for key in params:  # a key the model lacks would make every trial fail
        assert OmegaConf.select(cfg, key, default="<absent>") != "<absent>", f"{model} has no {key}"
    assert "model.relation.scale" not in params and "model.layout" not in params  # the RE-GNN space is replaced


@pytest.mark.parametrize("model, extra", [("re_gcn", {"model.layout"}), ("gat", {"model.layout"}), ("mlp", set())])
def test_the_re_gnn_family_keeps_the_shared_space(model, extra):
    params = set(OmegaConf.to_container(_compose(model).hydra.sweeper.params))
    assert (
        params
        == {
            "optimizer.lr",
            "optimizer.weight_decay",
            "model.dropout",
            "model.hidden",
            "model.num_layers",
            "model.relation.scale",
        }
        | extra
    )


@pytest.mark.slow  # make test-all (a tune's trial per space, ~30 s each); the spaces compose in the fast suite
@pytest.mark.parametrize("model", BASELINES)
def test_one_smoke_trial_of_each_baseline_space_trains(model, tmp_path):
    sweep = tmp_path / "sweep"
    r = run_train(
        "-m",
        "experiment=tune",
        "dataset=synthetic",
        f"model={model}",
        "debug=smoke",
        "tune.trials=1",
        "tune.seeds=1",
        "tune.final_runs=0",
        "threads=1",
        f"hydra.sweep.dir={sweep}",
        timeout=600,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    res = json.loads((sweep / "trial_0" / "results.json").read_text())
    assert res["model"] == model and res["metrics"]["val_micro_f1"]["mean"] >= 0
    best = OmegaConf.load(sweep / "tuned" / "best.yaml")
    searched = OmegaConf.to_container(_compose(model).hydra.sweeper.params)
    for key in searched:  # the best setting holds a value for every key of this model's space, none of RE-GNN's
        assert OmegaConf.select(best, key, default="<absent>") != "<absent>", key
    assert OmegaConf.select(best, "model.relation", default=None) is None


@pytest.mark.parametrize("bases, decomposed", [(None, False), (0, False), (2, True), (6, False), (40, False)])
def test_rgcn_bases_at_or_above_the_relation_count_decompose_nothing(bases, decomposed):
    from regnn.models.baselines.rgcn import RGCN
    from regnn.models.stack import StackShape

    m = RGCN({"a": 4, "b": 3}, StackShape(8, 3, 2), num_relations=6, dropout=0.5, num_bases=bases)
    assert all(hasattr(c.linear_r, "coeff") == decomposed for c in m.convs)
    with pytest.raises(ValueError, match="num_bases must be >= 0"):
        RGCN({"a": 4}, StackShape(64, 3, 2), num_relations=6, dropout=0.5, num_bases=-1)


@pytest.mark.parametrize("model", BASELINES)
def test_every_value_a_baseline_space_can_draw_is_one_the_config_check_accepts(model):
    """A value the search draws but the check refuses fails that trial and stops the tune (R-GCN's num_bases 0,
    a full matrix per relation, was once refused)."""
    from optuna.distributions import CategoricalDistribution

    from regnn.config import validate
    from regnn.tuning.space import search_space

    cfg = _compose(model)
    space, _ = search_space(OmegaConf.to_container(cfg.hydra.sweeper.params), [])
    for key, dist in space.items():
        values = dist.choices if isinstance(dist, CategoricalDistribution) else (dist.low, dist.high)
        for v in values:
            trial = cfg.copy()
            OmegaConf.update(trial, key, v, merge=False)
            validate(trial)  # raises ConfigError, naming the key, where a drawn value is refused
