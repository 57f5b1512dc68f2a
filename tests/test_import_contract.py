"""The import contracts of pyproject.toml hold for the package as it is, and break when a layer reaches up or
across (models/ into training/ or back, the science into the pipeline, reporting into the pipeline) or a module
below the pipeline imports omegaconf or hydra."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"


def _lint(root):
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run([sys.executable, "-c", LINT], cwd=root, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(REPO / "src" / "regnn", root / "src" / "regnn", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root)
    return root


def test_the_package_keeps_its_layers(copy):
    r = _lint(copy)
    assert r.returncode == 0 and "3 kept, 0 broken" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize(
    "into, line",
    [
        ("models/regnn.py", "from regnn.training.trainer import RunResult"),
        ("training/trainer.py", "from regnn.models.regnn import REGNN"),
        ("core/relation.py", "import regnn.pipeline"),
        ("reporting/cells.py", "from regnn.pipeline import train"),
        ("runs/store.py", "import regnn.pipeline.fullbatch"),
        # below the pipeline the config is plain data
        ("runs/identity.py", "import omegaconf"),
        ("models/regnn.py", "from omegaconf import DictConfig"),
        ("data/tables.py", "from hydra import compose"),
    ],
)
def test_an_import_across_the_layers_breaks_the_contract(copy, into, line):
    path = copy / "src" / "regnn" / into
    original = path.read_text()
    try:
        path.write_text(original + f"\n{line}  # noqa: E402,F401\n")
        r = _lint(copy)
    finally:
        path.write_text(original)
    assert r.returncode != 0 and "BROKEN" in r.stdout, r.stdout + r.stderr
