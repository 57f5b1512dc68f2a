"""A cell knows its graph: experiment=compare on two custom graphs never mixes them, a cell is never reused for
another graph or for files changed in place (refused in one line), and the fingerprint is computed once per file."""

import json
import re

import numpy as np
import pytest

from conftest import run_train
from custom_data import npz_arrays
from regnn.data import fingerprint as fp
from regnn.description import graph_name

COMPARE = [
    "experiment=compare",
    "dataset=custom",
    "hydra.sweeper.params.model=mlp",
    "runs=2",
    "threads=1",
    "trainer.max_epochs=3",
    "trainer.patience=3",
]


def write_graph(folder, name=None, seed=0):
    """A custom npz graph (tests/custom_data.py's shops graph) in folder, named `name` in its description."""
    folder.mkdir(parents=True)
    np.savez(folder / "shops.npz", **npz_arrays(seed))
    (folder / "dataset.yaml").write_text(
        "format: npz\ngraph: shops.npz\ntarget: customer\n" + (f"name: {name}\n" if name else "")
    )
    return folder


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("REGNN_CACHE", str(tmp_path / "cache"))


@pytest.mark.onepython
def test_two_graphs_compared_with_the_default_folder_each_train_their_own_cells_and_name_their_graph(tmp_path):
    a, b = write_graph(tmp_path / "graph_a", seed=0), write_graph(tmp_path / "graph_b", name="shops_b", seed=1)
    out = tmp_path / "outputs"
    logs = {}
    for g in (a, b):
        r = run_train(*COMPARE, f"dataset.path={g}", f"paths.output_dir={out}", timeout=600)
        logs[g.name] = r.stdout + r.stderr
        assert r.returncode == 0, logs[g.name][-3000:]
    assert "skipped" not in logs["graph_b"]
    # the folder is the graph's own name: the description's, else its folder's
    assert sorted(p.name for p in (out / "compare").iterdir()) == ["graph_a", "shops_b"]
    for folder, name, g in (("graph_a", "graph_a", a), ("shops_b", "shops_b", b)):
        sweep = out / "compare" / folder
        assert f"Every model on {name}" in (sweep / "compare.md").read_text()
        data = json.loads((sweep / "custom_mlp" / "data.json").read_text())
        assert data["graph"] == name and data["path"] == str(g.resolve())
    digests = {
        json.loads((out / "compare" / f / "custom_mlp" / "data.json").read_text())["fingerprint"]["digest"]
        for f in ("graph_a", "shops_b")
    }
    assert len(digests) == 2
    a_scores = json.loads((out / "compare" / "graph_a" / "custom_mlp" / "results.json").read_text())["per_run"]
    b_scores = json.loads((out / "compare" / "shops_b" / "custom_mlp" / "results.json").read_text())["per_run"]
    assert [r["test_micro_f1"] for r in a_scores] != [r["test_micro_f1"] for r in b_scores]


@pytest.mark.onepython
def test_a_folder_that_holds_another_graphs_cells_is_refused_in_one_line(tmp_path):
    a, b = write_graph(tmp_path / "a" / "shops", seed=0), write_graph(tmp_path / "b" / "shops", seed=1)
    sweep = tmp_path / "sweep"
    first = run_train(*COMPARE, f"dataset.path={a}", f"hydra.sweep.dir={sweep}", timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]

    def ours():  # the sweep's files, Hydra's own .hydra/ and log aside
        return {
            p: p.read_bytes()
            for p in sweep.rglob("*")
            if p.is_file() and ".hydra" not in p.parts and p.name not in ("train.log", "multirun.yaml")
        }

    before = ours()
    second = run_train(*COMPARE, f"dataset.path={b}", f"hydra.sweep.dir={sweep}", timeout=600)
    lines = [ln for ln in second.stderr.splitlines() if "another graph" in ln]
    assert second.returncode == 2 and len(lines) == 1 and "Traceback" not in second.stderr, second.stderr[-3000:]
    assert str(a.resolve()) in lines[0] and str(b.resolve()) in lines[0]  # names both
    assert ours() == before  # results, config, data.json and the table: nothing touched


@pytest.mark.onepython
def test_a_graph_changed_in_place_is_not_reused_and_the_changed_file_is_named(tmp_path):
    g = write_graph(tmp_path / "shops")
    cell = tmp_path / "cell"
    args = [
        "dataset=custom",
        f"dataset.path={g}",
        "model=mlp",
        "runs=1",
        "trainer.max_epochs=2",
        "trainer.patience=2",
        f"hydra.run.dir={cell}",
        "resume=true",
    ]
    assert run_train(*args).returncode == 0
    again = run_train(*args)
    assert again.returncode == 0 and "skipped (resume=true)" in again.stderr  # the same files: reused
    z = npz_arrays(0)
    z["labels"] = np.roll(z["labels"], 1)
    np.savez(g / "shops.npz", **z)
    changed = run_train(*args)
    assert changed.returncode == 2 and re.search(r"another graph .*shops\.npz.* differ", changed.stderr), (
        changed.stderr[-2000:]
    )


@pytest.mark.onepython
def test_a_cell_from_before_data_json_is_checked_by_its_stored_path(tmp_path):
    a, b = write_graph(tmp_path / "a"), write_graph(tmp_path / "b")
    cell = tmp_path / "cell"
    common = [
        "dataset=custom",
        "model=mlp",
        "runs=1",
        "trainer.max_epochs=2",
        "trainer.patience=2",
        f"hydra.run.dir={cell}",
        "resume=true",
    ]
    assert run_train(*common, f"dataset.path={a}").returncode == 0
    (cell / "data.json").unlink()
    assert run_train(*common, f"dataset.path={a}").returncode == 0  # its own path: reused
    other = run_train(*common, f"dataset.path={b}")
    assert other.returncode == 2 and "another graph" in other.stderr


def test_the_fingerprint_hashes_a_file_once_and_again_only_when_it_changes(tmp_path, monkeypatch):
    g = write_graph(tmp_path / "shops")
    ds = {"format": "custom", "path": str(g), "name": "custom"}
    hashed = []
    real = fp._sha256
    monkeypatch.setattr(fp, "_sha256", lambda p: hashed.append(p.name) or real(p))
    first = fp.fingerprint(ds)
    assert sorted(first["files"]) == ["dataset.yaml", "shops.npz"] and sorted(hashed) == ["dataset.yaml", "shops.npz"]
    hashed.clear()
    assert fp.fingerprint(ds) == first and hashed == []  # cached
    (g / "dataset.yaml").write_text((g / "dataset.yaml").read_text() + "name: renamed\n")
    second = fp.fingerprint(ds)
    assert hashed == ["dataset.yaml"] and second["digest"] != first["digest"]
    assert graph_name(ds) == "renamed"
    assert fp.fingerprint({"name": "synthetic", "format": "synthetic"}) is None  # generated: its config is its identity
