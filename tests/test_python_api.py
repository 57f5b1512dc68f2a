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
