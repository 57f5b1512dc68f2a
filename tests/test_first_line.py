"""train.py answers --help and a config it refuses before importing torch (which alone takes seconds), so that a
typo costs a second, not the time to import everything. The torch-free name tables the config check reads hold
the same names as the modules that act on them (scripts/bench/first_line.py measures the time it saves)."""

import dataclasses
import subprocess
import sys

import pytest

from conftest import run_train

IMPORTTIME = {"PYTHONPROFILEIMPORTTIME": "1"}  # python -X importtime: every module imported, on stderr


def _imported(stderr: str) -> set[str]:
    return {ln.rsplit("|", 1)[1].strip() for ln in stderr.splitlines() if ln.startswith("import time:")}


def _said(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("import time:")]


def test_the_config_modules_import_no_torch():
    code = "import sys, regnn.config, regnn.schema, regnn.names, regnn.entry; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_help_answers_without_torch():
    p = run_train("--help", env=IMPORTTIME)
    assert p.returncode == 0, p.stderr[-2000:]
    groups = dict(ln.split(": ", 1) for ln in p.stdout.splitlines() if ": " in ln and not ln.startswith(" "))
    assert "re_gcn" in groups["model"].split(", ") and "dblp" in groups["dataset"].split(", ")
    # regnn's own help: examples first, then the groups, then every key
    out = p.stdout
    assert out.index("Examples:") < out.index("== Configuration groups") < out.index("== Config (key=value)")
    assert "python train.py dataset=dblp model=re_gcn" in out and "--hydra-help" in out
    imported = _imported(p.stderr)
    assert "regnn.config" in imported and "torch" not in imported


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["dataset=dblp", "model=re_gcm"], "Could not find 'model/re_gcm'; did you mean 're_gcn'? available: appnp"),
        (["trainer.patiense=3"], "trainer.patiense is not a key of this config"),
        (["runs=0"], "runs=0 is not valid: must be >= 1"),
        (["optimizer.lr=-1"], "optimizer.lr=-1 is not valid: must be > 0"),
        (["model.relation.scale=0"], "model.relation.scale=0 is not valid: must be > 0"),
        (["dataset=custom", "dataset.path=/nonexistent/graph.yaml"], "/nonexistent/graph.yaml: no such file or folder"),
    ],
)
def test_a_refused_config_is_one_line_before_torch(tmp_path, overrides, message):
    p = run_train(*overrides, f"hydra.run.dir={tmp_path / 'run'}", env=IMPORTTIME)
    said = _said(p.stderr)
    assert p.returncode == 2, p.stderr[-2000:]
    assert len(said) == 1 and message in said[0], said
    assert "torch" not in _imported(p.stderr)
    assert not (tmp_path / "run").exists()  # nothing left behind


def test_the_backbone_table_is_the_builders_keyword_arguments():
    from regnn.models.backbones import BACKBONES
    from regnn.schema import BACKBONE_KEYS, builder_keys

    assert {b: builder_keys(f) for b, f in BACKBONES.items()} == BACKBONE_KEYS


def test_the_relation_keys_are_the_relation_settings_fields():
    from regnn.core.relation import Relation
    from regnn.schema import RELATION_KEYS

    assert tuple(f.name for f in dataclasses.fields(Relation)) == RELATION_KEYS


@pytest.mark.parametrize("fmt", ["magnn", "synthetic", "synthetic_counts", "ogb", "custom", "another"])
def test_the_dataset_key_table_is_what_the_loaders_take(fmt):
    from regnn import data, names

    assert names.dataset_keys(fmt) == data.dataset_keys(fmt)


def test_the_modules_that_act_on_a_name_use_the_same_table():
    from regnn import names
    from regnn.data import features
    from regnn.models import sampled
    from regnn.training import device, early_stopping, sampling, trainer

    assert trainer.PRECISIONS is names.PRECISIONS
    assert trainer.OPTIMIZERS is names.OPTIMIZERS
    assert trainer.LR_SCHEDULES is names.LR_SCHEDULES
    assert early_stopping.MONITORS is names.MONITORS
    assert sampling.SAMPLING_MODES is names.SAMPLING_MODES
    assert sampled.INPUT_DROPOUT is names.INPUT_DROPOUT
    assert features.FEATS_TYPES is names.FEATS_TYPES
    assert device.is_device_name is names.is_device_name


@pytest.mark.parametrize(
    "name, ok", [("auto", True), ("cpu", True), ("cuda", True), ("cuda:3", True), ("cuda:", False), ("gpu", False)]
)
def test_device_names(name, ok):
    from regnn.names import is_device_name

    assert is_device_name(name) is ok
