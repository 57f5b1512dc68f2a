"""regnn.run trains from Python what train.py trains from the command line (the same config, the same scores),
and a cell's relation weights draw as the case-study figure on any graph."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO, run_train

SETTINGS = [
    "dataset=synthetic",
    "model=re_gcn",
    "runs=2",
    "trainer.max_epochs=12",
    "trainer.patience=12",
    "threads=1",
    "workers=1",
]


@pytest.mark.onepython
def test_regnn_run_trains_what_train_py_trains_and_returns_its_summary(tmp_path):
    code = (
        "import json, sys, regnn\n"
        f"out = regnn.run({SETTINGS!r}, run_dir=sys.argv[1])\n"
        "print(json.dumps({'dir': str(out.run_dir), 'f1': [r['test_micro_f1'] for r in out.summary['per_run']]}))"
    )
    # from another folder than the repository: the configs are found all the same
    p = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "api")], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert (
        got["dir"] == str((tmp_path / "api").resolve()) and (tmp_path / "api" / "runs" / "run_01" / "model.pt").exists()
    )
    assert "run 2/2 seed 1" in (tmp_path / "api" / "train.log").read_text()
    r = run_train(*SETTINGS, f"hydra.run.dir={tmp_path / 'cli'}")
    assert r.returncode == 0, r.stderr[-3000:]
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert got["f1"] == [x["test_micro_f1"] for x in cli["per_run"]]
    drawn = subprocess.run(
        [
            sys.executable,
            "-m",
            "regnn.reporting.case_study",
            "--cell",
            str(tmp_path / "cli"),
            "--out",
            str(tmp_path / "w"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert drawn.returncode == 0, drawn.stderr[-3000:]
    w = pd.read_csv(tmp_path / "w" / "relation_weights.csv", index_col=0)
    assert len(w) == len(json.loads((tmp_path / "cli" / "relation_weights.json").read_text())[0]["layers"])
    assert "self:item" in w.columns and (tmp_path / "w" / "relation_weights.png").stat().st_size > 0
    no_cell = subprocess.run(
        [sys.executable, "-m", "regnn.reporting.case_study", "--cell", str(tmp_path), "--out", str(tmp_path / "w2")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert no_cell.returncode == 1 and "holds no finished results.json" in no_cell.stderr


@pytest.mark.onepython
def test_a_cell_gives_its_predictions_scores_embeddings_weights_and_model_as_python_objects(tmp_path):
    """regnn.run's result and regnn.predict of the same folder hold what predict.py writes, without files: the
    predictions' own test Micro-F1 is the scores', the model gives predict.py's probabilities."""
    import numpy as np
    import torch

    import regnn

    out = regnn.run([*SETTINGS[:2], "runs=2", *SETTINGS[3:]], run_dir=tmp_path / "cell")
    df = out.predictions()
    assert len(df) == 300 and list(df.columns[:3]) == ["split", "label", "predicted"]  # every item, labelled or not
    test = df[df.split == "test"]
    assert 100 * (test.label == test.predicted).mean() == pytest.approx(out.scores["test_micro_f1"], abs=1e-9)
    best = max(out.summary["per_run"], key=lambda r: (r["val_micro_f1"], -r["run"]))
    assert out.scores["test_micro_f1"] == pytest.approx(best["test_micro_f1"], abs=1e-6)  # the run it recorded
    again = regnn.predict(out.run_dir)
    pd.testing.assert_frame_equal(again.predictions(), df)
    emb = out.embeddings()
    assert emb.shape[0] == 300 and (emb.index == df.index).all()
    w = out.relation_weights()
    assert set(w.columns) == {"run", "layer", "relation", "source", "destination", "weight"}
    assert w.layer.nunique() == 4 and (w[w.relation == "item->noise"].source == "item").all()
    assert set(w.destination[w.relation.str.startswith("self:")]) <= set(w.source)
    with torch.no_grad():
        logits, _ = out.model()(*out.model_inputs())
    probs = df[[c for c in df.columns if c.startswith("p_")]].to_numpy()
    assert np.allclose(logits.softmax(1).numpy(), probs, atol=1e-6)
    cli = subprocess.run(
        [sys.executable, str(REPO / "predict.py"), f"run={out.run_dir}", f"hydra.run.dir={tmp_path / 'p'}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr[-2000:]
    written = pd.read_csv(tmp_path / "p" / "predictions.csv").set_index("node")
    assert np.allclose(written[[c for c in written.columns if c.startswith("p_")]].to_numpy(), probs, atol=1e-6)
    with pytest.raises(TypeError, match="unknown option"):
        regnn.predict(out.run_dir, ensembel=True)
