"""scripts/device_train.py: a dataset bundle trains without DGL (as on a GPU machine without DGL's CUDA build)."""
import json
import math
import os
import subprocess
import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import device_train  # noqa: E402

SCRIPT = str(REPO / "scripts" / "device_train.py")


def _script(*args, env=None):
    e = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=REPO, env=e, capture_output=True, text=True,
                          timeout=240)


def test_a_bundle_trains_without_dgl_as_the_pipeline_does(tmp_path, set_threads):
    """export -> run with the DGL stand-in (no DGL module at all in that process): parity, training and the grid
    steps all report; the RE-GCN run from the bundle (graph from arrays, no DGL) gives the same history as the
    pipeline's own run of the same seed (graph from DGL), to the last bit."""
    bundle, report = tmp_path / "syn.pt", tmp_path / "report.json"
    p = _script("export", "--dataset", "synthetic", "--models", "re_gcn", "re_gat", "--out", str(bundle))
    assert p.returncode == 0, p.stderr[-2000:]
    p = _script("run", "--bundle", str(bundle), "--out", str(report), "--device", "cpu", "--stand-in-dgl",
                "--seeds", "0", "1", "--parity-steps", "2", "--max-epochs", "5", "--grid", "--grid-model", "re_gcn",
                "--grid-seeds", "0", "--device-sums", "sorted", env={"REGNN_KERNELS": "1"})
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(report.read_text())
    assert r["dgl"] == "stand-in (not installed)" and r["complete"] and r["parity_passed"]
    assert set(r["parity"]) == set(r["training"]) == {"re_gcn", "re_gat"}
    # RE-GAT's relation, edge-softmax and gather sums: index_add_ on the "cpu" side, sorted segments (the GPU's
    # path) on the "device" side (on a CPU both add in the same order, so they agree to the last bit)
    gat = r["parity"]["re_gat"]
    assert r["sums"] == "sorted" and max(gat["max_rel_diff_loss"], gat["max_rel_diff_params"]) <= 1e-12
    for t in r["training"].values():
        assert t["runs"] == 2 and all(1 <= run["epochs"] <= 5 for run in t["per_run"])
        assert math.isfinite(t["metrics"]["test_micro_f1"]["mean"])
    grid = r["grid"]["settings"]
    assert len(grid) == 24 and {(s["weight_decay"], s["dropout"], s["scale"]) for s in grid} == {
        (w, d, s) for w in (0.0, 5e-4, 1e-3, 5e-3) for d in (0.2, 0.5, 0.7) for s in (10.0, 100.0)}
    assert [s["val_micro_f1"]["mean"] for s in grid] == sorted((s["val_micro_f1"]["mean"] for s in grid), reverse=True)

    p = _script("sums", "--bundle", str(bundle), "--out", str(tmp_path / "sums.json"), "--device", "cpu",
                "--stand-in-dgl", "--models", "re_gat", "--epochs", "6")
    assert p.returncode == 0, p.stderr[-2000:]
    sums = json.loads((tmp_path / "sums.json").read_text())
    assert set(sums) == {"re_gat index_add", "re_gat sorted"}
    assert math.isclose(sums["re_gat index_add"]["last_val_loss"], sums["re_gat sorted"]["last_val_loss"], rel_tol=1e-4)
    with pytest.raises(SystemExit, match="--epochs must exceed"):
        device_train.main(["sums", "--bundle", str(bundle), "--out", str(tmp_path / "s2.json"), "--device", "cpu",
                           "--epochs", "5"])
    assert not (tmp_path / "s2.json").exists()

    # the same seed through the pipeline (Hydra config, DGL graph, fused kernels at one thread, as the script ran)
    from hydra import compose, initialize_config_dir

    from regnn.pipeline import arch_of, build_model, load_data, model_kwargs
    from regnn.training.seed import seed_everything
    from regnn.training.trainer import train_run
    set_threads(1)
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=["dataset=synthetic", "model=re_gcn"])
    data = load_data(cfg.dataset)
    inputs = arch_of(cfg.model).prepare(data, "cpu", **model_kwargs(cfg.model))
    seed_everything(0)
    res = train_run(build_model(cfg.model, data, inputs), inputs, data.features, data.labels, data.splits, seed=0,
                    optimizer=dict(cfg.optimizer), max_epochs=5, patience=cfg.trainer.patience)
    run0 = r["training"]["re_gcn"]["per_run"][0]
    assert run0["seed"] == 0 and run0["epochs"] == res.epochs
    assert (run0["val_loss"], run0["test_micro_f1"]) == (res.metrics["val_loss"], res.metrics["test_micro_f1"])


def test_run_names_a_missing_or_foreign_bundle(tmp_path):
    import torch
    torch.save({"dataset": "dblp"}, tmp_path / "old.pt")  # no format key: not a bundle this script wrote
    for name, message in (("none.pt", "no bundle at .*export"), ("old.pt", "export it again")):
        with pytest.raises(SystemExit, match=message):
            device_train.main(["run", "--bundle", str(tmp_path / name), "--out", str(tmp_path / "r.json"),
                               "--device", "cpu"])
    assert not (tmp_path / "r.json").exists()
