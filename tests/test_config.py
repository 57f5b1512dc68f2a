"""Every dataset x model config composes; tuned settings are picked up; bad keys and values are refused."""

import inspect
import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

import regnn.config  # noqa: F401  (the repo_root resolver)
from conftest import REPO, cfg, run_train
from regnn.config import validate
from regnn.data import make_synthetic
from regnn.data.features import FEATS_TYPES
from regnn.errors import ConfigError
from regnn import catalog
from regnn.models import BACKBONES
from regnn.pipeline import arch_of, build_model, model_kwargs

CONF = str(REPO / "conf")
DATASETS = sorted(p.stem for p in (REPO / "conf/dataset").glob("*.yaml"))
# every backbone plain and RE, and the ablations of Table 5 (test_the_relation_group_... covers the other pairs)
RELATION_MODELS = [catalog.model_name(b, r) for b in catalog.backbones() for r in ("re", "plain")] + [
    catalog.model_name(b, r) for b in ("gcn", "gat") for r in ("edge", "self")
]
MODELS = sorted(RELATION_MODELS + [p.stem for p in (REPO / "conf/model").glob("*.yaml")])


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("model", MODELS)
def test_every_dataset_model_pair_composes_and_validates(dataset, model):
    c = cfg(f"dataset={dataset}", f"model={model}")
    validate(c, BACKBONES, FEATS_TYPES)
    assert c.model.name == model and c.dataset.name == dataset
    assert Path(c.dataset.get("dir", CONF)).is_absolute()


@pytest.mark.parametrize("model", MODELS)
def test_every_model_config_builds(model):
    data = make_synthetic(num_items=60, num_sources=30, num_tags=5)
    mcfg = cfg("dataset=synthetic", f"model={model}").model
    if mcfg.get("metapath") == "best":  # GCN-M/GAT-M: the pipeline resolves best; build one meta-path
        mcfg = OmegaConf.merge(mcfg, {"metapath": next(iter(mcfg.metapaths))})
    m = build_model(mcfg, data, arch_of(mcfg).prepare(data, "cpu", **model_kwargs(mcfg)))
    assert sum(p.numel() for p in m.parameters()) > 0
    re = mcfg.get("relation", {})
    n_rel_params = sum(p.numel() for n, p in m.named_parameters() if n.startswith("relations."))
    assert (n_rel_params > 0) == bool(re.get("edge_embeddings") or re.get("self_loop_embeddings"))


def test_tuned_and_protocol_settings_are_selected():
    assert cfg("dataset=dblp", "model=re_gcn").model.dropout == 0.5
    assert cfg("dataset=dblp", "model=gcn").model.dropout == 0.5  # plain shares RE-GCN's settings
    assert cfg("dataset=imdb", "model=gcn").model.dropout == 0.6
    assert cfg("dataset=dblp", "model=re_gat").model.heads == 8
    acm_gat = cfg("dataset=acm", "model=re_gat")
    assert (acm_gat.model.hidden, acm_gat.model.dropout, acm_gat.optimizer.weight_decay) == (16, 0.2, 0.005)
    assert cfg("dataset=acm", "model=re_gcn").optimizer.weight_decay == 0.005
    assert cfg("dataset=imdb", "model=gcn").optimizer.weight_decay == 0.005
    assert cfg("dataset=imdb", "model=gat").model.heads == 4  # plain GAT shares RE-GAT's settings (--no_re)
    assert cfg("dataset=imdb", "model=gat").model.dropout == cfg("dataset=imdb", "model=re_gat").model.dropout == 0.5
    # the command line wins over tuned settings
    assert cfg("dataset=dblp", "model=re_gcn", "model.dropout=0.3").model.dropout == 0.3
    assert cfg("model.relation.scale=1").model.relation.scale == 1
    # heterogeneous baselines: their papers' settings per dataset, meta-paths from the dataset config
    assert cfg("dataset=dblp", "model=gtn").model.num_layers == 3
    assert cfg("dataset=imdb", "model=rgcn").model.dropout == 0.8  # validation search
    assert cfg("dataset=acm", "model=gtn").model.select_lr_scale == 100
    assert cfg("dataset=imdb", "model=hgt").model.num_layers == 5
    assert cfg("dataset=imdb", "model=han").optimizer.weight_decay == 0.001  # over the IMDB protocol's 5e-3
    assert list(cfg("dataset=dblp", "model=gat_m").model.metapaths) == ["APA", "APTPA", "APVPA"]
    assert cfg("dataset=acm", "model=gcn_m").model.hidden == cfg("dataset=acm", "model=gcn").model.hidden


def test_re_gat_search_ties_attention_dropout_to_dropout_and_names_cells_by_grid_values():
    search = cfg("experiment=search_re_gat", "dataset=acm", "model=re_gat", "model.dropout=0.5")
    assert search.model.attn_dropout == 0.5 and search.runs == 2 and search.resume  # ACM's tuned 0.2 gives way
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        hydra = compose(
            "train", overrides=["experiment=search_re_gat", "dataset=dblp", "model=re_gat"], return_hydra_config=True
        ).hydra
    assert hydra.mode.name == "MULTIRUN" and set(hydra.sweeper.params) == {"model.dropout", "optimizer.weight_decay"}
    assert "dataset" in hydra.job.config.override_dirname.exclude_keys
    assert cfg("experiment=search_re_gat", "dataset=dblp", "model=re_gat").model.heads == 8  # tuned layout kept


def test_unknown_key_and_unknown_option_are_refused():
    with pytest.raises(ConfigCompositionException, match="model.hiden"):
        cfg("model.hiden=32")
    with pytest.raises(ConfigCompositionException, match="dataset"):
        cfg("dataset=cora")


@pytest.mark.parametrize("model", ["re_gcn", "gat", "rgcn"])
def test_an_appended_model_key_is_refused_at_validation(model):
    """`+model.<key>` bypasses the composition check: validation names the key the model does not take."""
    with pytest.raises(ConfigError, match=r"model\.hiden=32 is not valid: .* has no such key"):
        validate(cfg("dataset=dblp", f"model={model}", "+model.hiden=32"), BACKBONES, FEATS_TYPES)


@pytest.mark.parametrize(
    "override,message",
    [
        ("model.dropout=1.5", "model.dropout=1.5 is not valid: must be < 1"),
        ("model.relation.scale=0", "model.relation.scale=0 is not valid: must be > 0"),
        ("runs=0", "runs=0 is not valid: must be >= 1"),
        ("optimizer.lr=-1", "optimizer.lr=-1 is not valid: must be > 0"),
        ("model.hidden=abc", "model.hidden='abc' is not valid: must be an integer"),
        ("dataset.feats_type=all", "dataset.feats_type='all' is not valid"),
        ("device=tpu", "device='tpu' is not valid"),
        ("model=re_gat model.attn_init=ones", "model.attn_init='ones' is not valid: use one of ['xavier', 'zeros']"),
        ("workers=0", "workers=0 is not valid: use auto or a whole number from 1 to 1024"),
        ("workers=many", "workers='many' is not valid"),
        ("workers=2 logger=csv", "workers=2 is not valid: the csv logger follows one process"),
        ("trainer.stop_on=[val_acc]", "trainer.stop_on=['val_acc'] is not valid: must be a list of one or more of"),
        ("trainer.stop_on=[]", "trainer.stop_on=[] is not valid"),
        (
            "trainer.lr_schedule=step",
            "trainer.lr_schedule='step' is not valid: use one of ['constant', 'cosine', 'onecycle']",
        ),
    ],
)
def test_bad_values_are_refused_with_the_rule(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate(cfg(*override.split()), BACKBONES, FEATS_TYPES)


@pytest.mark.parametrize(
    "override,expect",
    [
        ("model.dropout=1.5", "model.dropout=1.5 is not valid"),
        ("model.hiden=3", "Could not override 'model.hiden'"),
        ("dataset=cora", "Could not find 'dataset/cora'"),
    ],
)
def test_train_py_rejects_bad_config_without_a_traceback(tmp_path, override, expect):
    r = run_train("dataset=synthetic", override, f"hydra.run.dir={tmp_path}/run")
    assert r.returncode != 0
    assert expect in r.stderr + r.stdout
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "run" / "results.json").exists()


@pytest.mark.parametrize("dataset", catalog.FIGURE3_DATASETS)
@pytest.mark.parametrize("backbone", catalog.FIGURE3_BACKBONES)
def test_plain_and_re_backbones_share_their_settings(dataset, backbone):
    """A fair comparison: plain and RE versions differ only in the relation switches (the authors ran both
    from one script), except plain MixHop on DBLP, which the authors' script tunes separately."""
    plain, re = cfg(f"dataset={dataset}", f"model={backbone}"), cfg(f"dataset={dataset}", f"model=re_{backbone}")
    differing = {
        k
        for k in ("model", "optimizer", "trainer")
        if {**plain[k], "name": "", "relation": None} != {**re[k], "name": "", "relation": None}
    }
    if (dataset, backbone) == ("dblp", "mixhop"):
        assert differing  # the documented exception
    else:
        assert not differing
    assert not plain.model.relation.edge_embeddings and re.model.relation.edge_embeddings


@pytest.mark.parametrize("dataset", ["dblp", "acm"])
def test_the_relation_group_composes_the_same_config_as_the_model_names(dataset):
    """model=gcn relation=re is model=re_gcn (settings, tuned settings and cell name), for every backbone."""
    for backbone, relation in itertools.product(catalog.backbones(), catalog.RELATIONS):
        name = catalog.model_name(backbone, relation)
        by_name = cfg(f"dataset={dataset}", f"model={name}")
        by_group = cfg(f"dataset={dataset}", f"model={backbone}", f"relation={relation}")
        assert by_group.model.name == by_name.model.name == name
        assert OmegaConf.to_container(by_group, resolve=True) == OmegaConf.to_container(by_name, resolve=True), name


def test_a_misspelt_key_in_a_model_yaml_fails_at_composition(tmp_path):
    conf = shutil.copytree(CONF, tmp_path / "conf")
    gin = conf / "backbone" / "gin.yaml"
    gin.write_text(gin.read_text().replace("\nhidden: 64", "\nhiden: 64"))
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        with pytest.raises(ConfigCompositionException, match="Key 'hiden' not in 'gin'"):
            compose("train", overrides=["model=re_gin"])
        compose("train", overrides=["model=re_gcn"])  # the other models still compose


@pytest.mark.parametrize("backbone", sorted(BACKBONES))
def test_builders_take_exactly_the_config_keys_with_the_config_defaults(backbone):
    """No builder swallows unknown keys (**_), and a builder's default equals its YAML value (ogbn_mag: a dataset
    without tuned settings)."""
    params = inspect.signature(BACKBONES[backbone]).parameters
    assert not any(p.kind is p.VAR_KEYWORD for p in params.values())
    model = "mlp" if backbone == "mlp" else backbone
    m = OmegaConf.to_container(cfg("dataset=ogbn_mag", f"model={model}").model)
    for key, p in params.items():
        if p.default is not p.empty and key in m:
            want = list(p.default) if isinstance(p.default, tuple) else p.default
            assert m[key] == want, f"{backbone}: {key} is {m[key]} in the YAML, {p.default} in the builder"


def test_the_attention_slope_is_the_authors_in_yaml_and_code():
    # the authors' run_regnn.py passes negative_slope 0.01 to REGAT (at 2e297ef)
    assert cfg("model=re_gat").model.attn_negative_slope == 0.01
    assert inspect.signature(BACKBONES["gat"]).parameters["attn_negative_slope"].default == 0.01


def test_tuned_settings_have_no_pointer_files():
    files = sorted((REPO / "conf" / "tuned").rglob("*.yaml"))
    assert files and not [f for f in files if "defaults" in (OmegaConf.load(f) or {})]


def test_experiment_sweeps_read_the_catalog():
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        params = compose("train", overrides=["experiment=fig_backbones"], return_hydra_config=True).hydra.sweeper.params
    assert params.dataset.split(",") == list(catalog.FIGURE3_DATASETS)
    assert params.model.split(",") == catalog.models("plain+re")
    assert params.model.split(",")[:2] == ["gcn", "re_gcn"]


@pytest.mark.parametrize(
    "overrides,pending,edges,expect",
    [
        (["runs=10", "threads=2"], 10, 50_000, (2, 1)),  # two one-thread runs side by side
        (["runs=10", "threads=8"], 10, 50_000, (4, 2)),  # at most 4 workers; the budget split between them
        (["runs=10", "threads=2"], 1, 50_000, (1, 1)),  # a resumed cell's last run: one process, the same threads
        (["runs=1", "threads=2"], 1, 50_000, (1, 2)),  # a single run keeps every thread
        (["runs=10", "threads=2"], 10, 5_000, (1, 2)),  # a toy graph: runs in turn
        (["runs=10", "threads=2", "logger=csv"], 10, 50_000, (1, 2)),
        (["runs=10", "threads=1"], 10, 50_000, (1, 1)),  # a sweep's one-thread cells
        (["runs=10", "threads=2", "workers=1"], 10, 50_000, (1, 2)),
    ],
)
def test_auto_workers_split_the_thread_budget(overrides, pending, edges, expect):
    from regnn.runs.executor import plan_workers
    from regnn.runs.jobspec import JobSpec

    c = JobSpec.from_config(cfg("dataset=synthetic", *overrides))
    assert plan_workers(c, "cpu", pending, int(c.threads), edges) == expect
    assert plan_workers(c, "cuda", pending, int(c.threads), edges)[0] == (expect[0] if c.workers != "auto" else 1)


def test_importing_regnn_and_ogb_starts_no_pypi_version_check():
    """ogb (dataset=ogbn_mag) and the `outdated` package each start a thread that asks PyPI for versions; with
    regnn imported first, `outdated` is an offline stand-in: ogb's thread gets "up to date" at once and no thread
    is left waiting on the network. The stand-in keeps the package's public names."""
    code = (
        "import regnn, ogb, threading, sys, importlib.util; import outdated; "
        "from outdated import OutdatedPackageWarning, warn_if_outdated; "
        "assert importlib.util.find_spec('outdated') is not None and issubclass(OutdatedPackageWarning, Warning); "
        "print(len(threading.enumerate()), outdated.check_outdated('ogb', '1.3.6'))"
    )
    p = _python(code)
    assert p.stdout.split() == ["1", "(False,", "'1.3.6')"], p.stdout
    assert "Failed to check for latest version" not in p.stderr


def test_outdated_imported_before_regnn_keeps_the_package_and_gets_offline_checks():
    """When something imported `outdated` first (a module stands in for it here: the real one would ask PyPI),
    regnn keeps that module and only makes its checks offline."""
    code = (
        "import sys, types; m = types.ModuleType('outdated'); m.marker = 1; "
        "m.check_outdated = lambda *a: 1 / 0; m.warn_if_outdated = lambda *a: 1 / 0; sys.modules['outdated'] = m; "
        "import regnn, outdated; assert outdated is m and outdated.marker == 1; "
        "print(outdated.check_outdated('ogb', '1.3.6'), outdated.warn_if_outdated('ogb', '1.3.6'))"
    )
    assert _python(code).stdout.strip() == "(False, '1.3.6') None"


def _python(code: str) -> subprocess.CompletedProcess:
    """`python -c code` in a fresh process (what it imports first matters here); it must succeed."""
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p


def test_a_job_under_slurm_trains_on_the_cpus_slurm_gave_it(monkeypatch):
    """threads=null: SLURM_CPUS_PER_TASK where SLURM sets it (torch would otherwise take every core of the node),
    else torch's default; threads= wins."""
    from regnn.runs.executor import job_threads
    from regnn.runs.jobspec import JobSpec

    unset = JobSpec(runs=1, seed=0, threads=None)
    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
    assert job_threads(unset) is None
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "3")
    assert job_threads(unset) == 3 and job_threads(JobSpec(runs=1, seed=0, threads=2)) == 2
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "")
    assert job_threads(unset) is None
