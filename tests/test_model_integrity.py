"""A saved model is what trained, or it is refused; predict only reads a run. One small cell is trained once for the
module; each test works on a copy, in process but where Hydra or a second process is the point."""

import hashlib
import json
import random
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from omegaconf import OmegaConf

from conftest import REPO, cfg
from test_predict import predict as predict_py
from regnn.errors import ConfigError, DataError, RegnnError
from regnn.pipeline import predict_guard
from regnn.pipeline.predict import predict
from regnn.runs import checkpoint

KEYS = ("test_micro_f1", "test_macro_f1", "val_micro_f1", "val_macro_f1")


def train(out, *overrides):
    """A cell trained in this process (as train.py trains it, without a second interpreter's start-up)."""
    import regnn.pipeline as pipeline

    pipeline.train(cfg(*overrides, "threads=1"), out)
    assert (out / "results.json").is_file()
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    cell = tmp_path_factory.mktemp("integrity") / "cell"
    return train(cell, "dataset=synthetic", "model=re_gcn", "runs=2", "trainer.max_epochs=12", "trainer.patience=12")


@pytest.fixture
def cell(trained, tmp_path):
    c = tmp_path / "cell"
    shutil.copytree(trained, c)
    return c


def pcfg(run, **kw):
    base = {"run": str(run), "ensemble": False, "embeddings": False, "dataset_path": None, "inference": "auto"}
    return OmegaConf.create({**base, "device": "cpu", "threads": 1, "check_scores": True, "allow_missing": False, **kw})


def best_run(cell):
    recs = json.loads((cell / "results.json").read_text())["per_run"]
    return max(recs, key=lambda r: (r["val_micro_f1"], -r["run"]))


def hashes(folder):
    files = [p for p in folder.rglob("*") if p.is_file()]
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def tensor_regions(path):
    """(name of the zip entry, offset, size) of every tensor's bytes in a torch.save file (stored uncompressed)."""
    out = []
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        for info in z.infolist():
            if "/data/" not in info.filename or info.file_size == 0:
                continue
            f.seek(info.header_offset)
            head = f.read(30)
            start = (
                info.header_offset + 30 + int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")
            )
            out.append((info.filename, start, info.file_size))
    return out


def test_a_flipped_bit_in_any_tensor_is_refused_or_predicts_the_recorded_scores(cell, tmp_path):
    run = cell / "runs" / f"run_{best_run(cell)['run']:02d}"
    path = run / checkpoint.MODEL_FILE
    good = path.read_bytes()
    regions = tensor_regions(path)
    assert len(regions) == len(torch.load(path, weights_only=True))
    rng = random.Random(0)
    for k, (name, start, size) in enumerate(regions):
        bad = bytearray(good)
        bit = rng.randrange(size * 8)
        bad[start + bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(bad))
        try:
            res = predict(pcfg(cell), tmp_path / f"p{k}")
        except DataError as e:
            assert "model.pt" in str(e) and "\n" not in str(e), (name, str(e))
            continue
        rec = json.loads((run / "results.json").read_text())
        assert all(res["runs"][run.name][x] == rec[x] for x in KEYS), name  # only a flip that changes nothing
    path.write_bytes(good)
    res = predict(pcfg(cell), tmp_path / "ok")
    rec = best_run(cell)
    assert all(res["runs"][run.name][x] == rec[x] for x in KEYS)


@pytest.mark.parametrize("bad", ["nan", "inf", "int", "swapped", "missing key", "renamed key"])
def test_edited_weights_are_refused_naming_what_is_wrong(cell, tmp_path, bad):
    run = cell / "runs" / f"run_{best_run(cell)['run']:02d}"
    path = run / checkpoint.MODEL_FILE
    state = torch.load(path, weights_only=True)
    name = next(k for k, v in state.items() if v.is_floating_point() and v.numel() > 1)
    if bad == "nan":
        state[name].view(-1)[0] = float("nan")
    elif bad == "inf":
        state[name].view(-1)[-1] = float("inf")
    elif bad == "int":
        state[name] = state[name].round().long()
    elif bad == "swapped":
        a, b = next(
            (a, b)
            for a in state
            for b in state
            if a < b and state[a].shape == state[b].shape and not torch.equal(state[a], state[b])
        )
        state[a], state[b] = state[b], state[a]
    elif bad == "missing key":
        del state[name]
    else:
        state[name + "_old"] = state.pop(name)
    torch.save(state, path)
    with pytest.raises(DataError) as e:
        predict(pcfg(cell), tmp_path / "p")
    msg = str(e.value)
    assert "\n" not in msg and "model.pt" in msg
    expect = {"nan": "NaN or inf", "inf": "NaN or inf", "int": "torch.int64", "swapped": "sha256"}
    assert expect.get(bad, name) in msg and (bad == "swapped" or name in msg), msg
    if bad == "renamed key":
        assert name + "_old" in msg
    assert not (tmp_path / "p" / "predictions.csv").exists()


@pytest.mark.parametrize(
    "key,value", [("model.relation.scale", 0.5), ("model.activation", "relu"), ("model.norm", "right")]
)
def test_a_config_edit_that_keeps_the_shapes_is_refused_naming_the_key(cell, tmp_path, key, value):
    cfg = yaml.safe_load((cell / "config.yaml").read_text())
    node = cfg
    *path, last = key.split(".")
    for k in path:
        node = node[k]
    assert node[last] != value
    node[last] = value
    (cell / "config.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(DataError, match="config.yaml was edited since training") as e:
        predict(pcfg(cell), tmp_path / "p")
    assert key in str(e.value)


def test_recorded_scores_that_the_model_does_not_reproduce_are_refused(cell, tmp_path):
    run = cell / "runs" / f"run_{best_run(cell)['run']:02d}"
    rec = json.loads((run / "results.json").read_text())
    rec["test_micro_f1"] += 0.5
    (run / "results.json").write_text(json.dumps(rec))
    with pytest.raises(DataError, match="does not reproduce the run's scores.*test_micro_f1"):
        predict(pcfg(cell), tmp_path / "p")
    assert predict(pcfg(cell, check_scores=False), tmp_path / "q")["runs"][run.name]


def test_predict_leaves_the_cell_byte_identical_and_never_writes_into_it(cell, tmp_path):
    other = cell / "runs" / f"run_{1 - best_run(cell)['run']:02d}"
    (other / "results.json").write_text("{not json")  # read, never set aside
    (other / checkpoint.META_FILE).write_text("[]")
    before = hashes(cell)
    assert predict(pcfg(cell), tmp_path / "p")["runs"]
    assert predict(pcfg(cell, ensemble=True, allow_missing=True), tmp_path / "e")["runs"]
    refused = predict_py(f"run={cell}", f"hydra.run.dir={cell / 'runs' / 'run_00'}")
    assert refused.returncode == 2 and "never writes into a run" in refused.stderr
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    for inside in (cell, cell / "preds"):  # what predict.py reads before Hydra writes into the folder
        assert "never writes into a run" in predict_guard.argv_refusal([f"run={cell}", f"hydra.run.dir={inside}"])
    assert predict_guard.argv_refusal([f"run={cell}", f"hydra.run.dir={tmp_path / 'q'}"]) is None
    for subdir in (cell / "hy", "../hy"):  # Hydra's own files must stay in the prediction's folder too
        assert "hydra.output_subdir" in predict_guard.argv_refusal([f"run={cell}", f"hydra.output_subdir={subdir}"])
    assert hashes(cell) == before and not (cell / "preds").exists()
    with pytest.raises(ConfigError, match="never writes into a run"):  # in process too
        predict(pcfg(cell / "runs" / "run_00"), cell / "runs")


def test_an_output_folder_is_held_by_one_prediction(cell, tmp_path):
    out = tmp_path / "p"
    with predict_guard.held(out):
        r = predict_py(f"run={cell}", f"hydra.run.dir={out}")  # another process
    assert r.returncode == 2 and "being written by process" in r.stderr and "Traceback" not in r.stderr
    assert not (out / "predictions.csv").exists()
    assert predict(pcfg(cell), out)  # released: the folder can be written again


def test_the_default_output_folder_is_one_per_invocation():
    import importlib.util

    from hydra import compose, initialize_config_dir

    lines = [
        f"import importlib.util; s = importlib.util.spec_from_file_location('entry', {str(REPO / 'predict.py')!r})",
        "s.loader.exec_module(importlib.util.module_from_spec(s))",
        "from hydra import compose, initialize_config_dir",
        f"with initialize_config_dir(config_dir={str(REPO / 'conf')!r}, version_base='1.3'):",
        "    print(compose('predict', ['run=x'], return_hydra_config=True).hydra.run.dir)",
    ]
    r = subprocess.run([sys.executable, "-c", "\n".join(lines)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    spec = importlib.util.spec_from_file_location("entry", REPO / "predict.py")
    spec.loader.exec_module(importlib.util.module_from_spec(spec))  # registers this process's folder name
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        here = compose("predict", ["run=x"], return_hydra_config=True).hydra.run.dir
    there = r.stdout.strip().splitlines()[-1]
    assert here != there and "/predict/" in here and "/predict/" in there  # even when started within one second


def test_missing_models_are_refused_not_replaced(cell, tmp_path):
    best = best_run(cell)["run"]
    (cell / "runs" / f"run_{best:02d}" / checkpoint.MODEL_FILE).unlink()
    with pytest.raises(DataError, match=f"run_{best:02d}, the best run by validation Micro-F1, has no model.pt"):
        predict(pcfg(cell), tmp_path / "a")
    with pytest.raises(DataError, match=f"runs run_{best:02d} have no model.pt; the ensemble would be of 1 runs"):
        predict(pcfg(cell, ensemble=True), tmp_path / "b")
    res = predict(pcfg(cell, allow_missing=True), tmp_path / "c")
    assert list(res["runs"]) == [f"run_{1 - best:02d}"]
    assert list(predict(pcfg(cell, ensemble=True, allow_missing=True), tmp_path / "d")["runs"]) == [
        f"run_{1 - best:02d}"
    ]


def test_malformed_files_and_options_are_refused_in_one_line(cell, tmp_path):
    run = cell / "runs" / "run_00"
    with pytest.raises(ConfigError, match=r"takes no dataset \(given with \+dataset="):
        predict(OmegaConf.merge(pcfg(run), {"dataset": {"name": "dblp"}}), tmp_path / "p")
    meta = (run / checkpoint.META_FILE).read_text()
    (run / checkpoint.META_FILE).write_text(json.dumps({"schema": {"target": 3}}))
    with pytest.raises(DataError, match="model.json is missing, unreadable or not the record"):
        predict(pcfg(run), tmp_path / "p")
    assert (run / checkpoint.META_FILE).exists()  # left as it is
    (run / checkpoint.META_FILE).write_text(meta)
    (cell / "config.yaml").write_text("model: [unclosed\n")
    with pytest.raises(DataError, match="config.yaml is not readable YAML"):
        predict(pcfg(run), tmp_path / "p")
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    with pytest.raises(RegnnError) as e:
        predict(pcfg(loop), tmp_path / "p")
    assert "\n" not in str(e.value)
    assert not (tmp_path / "p" / "predictions.csv").exists()


@pytest.mark.onepython
def test_a_graph_without_any_label_gets_a_prediction_for_every_node(tmp_path):
    from custom_data import edit_npz, write_npz

    graph = write_npz(tmp_path / "shops").parent
    cell = train(tmp_path / "cell", "dataset=custom", f"dataset.path={graph}", "model=re_gcn", "runs=1")
    new = tmp_path / "new"
    shutil.copytree(graph, new)

    def unlabel(z):
        z["labels"] = -np.ones_like(z["labels"])
        z["train"] = np.zeros(0, dtype=np.int64)
        z["val"] = np.zeros_like(z["val"])
        z["test"] = np.zeros_like(z["test"])

    edit_npz(new, unlabel)
    rec_file = cell / "runs" / "run_00" / "results.json"
    rec = json.loads(rec_file.read_text())
    rec["val_micro_f1"] += 1.0  # scores the model does not reproduce: compared on the graph it trained on only
    rec_file.write_text(json.dumps(rec))
    with pytest.raises(DataError, match="does not reproduce"):
        predict(pcfg(cell, dataset_path=str(graph)), tmp_path / "same")
    res = predict(pcfg(cell, dataset_path=str(new)), tmp_path / "p")
    df = pd.read_csv(tmp_path / "p" / "predictions.csv")
    assert len(df) == len(np.load(new / "graph.npz")["labels"]) and set(df.split) == {"unlabelled"}
    assert (df.label == -1).all() and res["runs"]["run_00"] == {}
    probs = df[[c for c in df.columns if c.startswith("p_")]]
    assert probs.shape[1] == 3 and ((probs.sum(axis=1) - 1).abs() < 1e-5).all()
    with pytest.raises(DataError, match="split 'train' is empty"):  # training still refuses such a graph
        from regnn.pipeline.from_config import load_data

        load_data(OmegaConf.create({"name": "custom", "format": "custom", "path": str(new), "feature_norm": "none"}))


def test_a_model_saved_without_digests_still_predicts_with_a_warning(cell, tmp_path, caplog):
    run = cell / "runs" / f"run_{best_run(cell)['run']:02d}"
    meta = json.loads((run / checkpoint.META_FILE).read_text())
    del meta["integrity"]
    (run / checkpoint.META_FILE).write_text(json.dumps(meta))
    with caplog.at_level("WARNING", logger="regnn"):
        res = predict(pcfg(cell), tmp_path / "p")
    assert all(res["runs"][run.name][k] == best_run(cell)[k] for k in KEYS)
    assert "cannot be checked" in caplog.text and "no config digest" in caplog.text
