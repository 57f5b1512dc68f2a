"""scripts/checks/trainers_table.py: full batch against mini-batch, every cell through train.py, the table as data."""

import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO


@pytest.mark.onepython
def test_the_table_holds_each_trainer_and_its_difference_from_full_batch_and_is_never_overwritten(tmp_path):
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "checks" / "trainers_table.py"),
        "--graphs",
        "synthetic",
        "--runs",
        "2",
        "--work",
        str(tmp_path / "work"),
        "--out",
        str(tmp_path / "trainers"),
        "trainer.max_epochs=3",
        "trainer.patience=3",
        "threads=1",
    ]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    df = pd.read_csv(tmp_path / "trainers.csv")
    assert list(df.setting) == ["fullbatch", "sampled", "every neighbour"] and set(df.runs) == {2}
    assert list(df.fanouts.fillna("")) == ["", "20 20 20 20", "-1 -1 -1 -1"]  # one per layer of the 4-layer model
    full = df.iloc[0]
    assert pd.isna(full.test_diff)
    for r in df.iloc[1:].itertuples():
        assert r.test_diff == pytest.approx(r.test_micro_f1 - full.test_micro_f1)
    assert "| synthetic | re_gcn | sampled | 20 20 20 20 |" in (tmp_path / "trainers.md").read_text()
    assert (tmp_path / "work" / "graphs" / "synthetic" / "graph.npz").exists()  # trained as a user's graph
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert again.returncode != 0 and "never overwritten" in again.stderr
