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


def _reads(path, key: str) -> bool:
    """Whether a module names `key` in code: an attribute, a keyword, a name or a string (a config lookup);
    comments and docstrings do not count."""
    import ast

    tree = ast.parse(path.read_text())
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body and isinstance(n.body[0], ast.Expr)
    }
    for n in ast.walk(tree):
        if (
            (isinstance(n, ast.Attribute) and n.attr == key)
            or (isinstance(n, ast.keyword) and n.arg == key)
            or (isinstance(n, (ast.Name, ast.arg)) and getattr(n, "id", getattr(n, "arg", None)) == key)
            or (isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == key)
            or (isinstance(n, ast.Constant) and n.value in (key, f"trainer.{key}") and id(n) not in docs)
        ):
            return True
    return False


def test_the_patience_route_is_the_one_the_architecture_page_names():
    """docs/architecture.md lists the files that read trainer.patience; the code reads it in those and no others."""
    import re

    doc = (REPO / "docs" / "architecture.md").read_text()
    paragraph = doc[doc.index("Python files read it on that route", doc.index("`trainer.patience`")) :]
    named = set(re.findall(r"`([a-z_/]+\.py)`", paragraph[: paragraph.index("\n\n")]))
    src = REPO / "src" / "regnn"
    reading = {str(p.relative_to(src)) for p in src.rglob("*.py") if _reads(p, "patience")}
    assert reading == named and len(named) <= 6, (sorted(reading), sorted(named))
