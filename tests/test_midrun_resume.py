"""A run stopped mid-way (SIGTERM at epoch k) writes a checkpoint and continues from it with resume=true: the same
history and scores as the run that was never stopped; a checkpoint of another run is refused in one line."""

import json
import shutil
import signal
import subprocess

import pandas as pd
import pytest
import torch

from conftest import run_train, start_held, wait_for_file

RUN = [
    "dataset=synthetic",
    "model=re_gcn",
    "runs=1",
    "threads=1",
    "workers=1",
    "trainer.max_epochs=25",
    "trainer.patience=25",
    "model.dropout=0.3",
]
# mini-batch: batches of 64 (several per epoch), sampled neighbours, learnable embeddings of the feature-less type
MINIBATCH = [
    "trainer=minibatch",
    "trainer.batch_size=64",
    "trainer.default_fanout=5",
    "trainer.max_epochs=8",
    "trainer.patience=8",
    "trainer.min_steps=0",
    "trainer.patience_steps=0",
]
TRAINERS = {"fullbatch": [], "minibatch": MINIBATCH}


def timing(key: str) -> bool:
    """Seconds, rates and memory: what a machine measures, not what the run computes."""
    return key.endswith("_s") or key in ("pid", "finished_at", "sampling_share", "peak_rss_gb")


def record(cell):
    rec = json.loads((cell / "runs" / "run_00" / "results.json").read_text())
    return {k: v for k, v in rec.items() if not timing(k)}


def history(cell):
    df = pd.read_csv(cell / "runs" / "run_00" / "history.csv")
    return df.drop(columns=[c for c in df.columns if timing(c)])


@pytest.fixture(scope="module", params=list(TRAINERS))
def whole(request, tmp_path_factory):
    cell = tmp_path_factory.mktemp("whole") / "cell"
    r = run_train(*RUN, *TRAINERS[request.param], f"hydra.run.dir={cell}")
    assert r.returncode == 0, r.stderr[-3000:]
    return request.param, cell


def stopped_at_epoch(tmp_path, k: int, trainer: str = "fullbatch", every: str = "0"):
    """The run, held before epoch k (a checkpoint after every epoch: the first one appears after epoch 0), then
    SIGTERM: it writes its checkpoint and stops."""
    cell = tmp_path / "cell"
    p = start_held(
        [*RUN, *TRAINERS[trainer], f"hydra.run.dir={cell}", f"checkpoint_every_s={every}"],
        cell / "runs" / "run_00" / "checkpoint.pt",
        tmp_path / "held",
        skip=k - 1,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_for_file(tmp_path / "held", p)
    p.send_signal(signal.SIGTERM)
    log, _ = p.communicate(timeout=120)
    assert p.returncode == 128 + signal.SIGTERM, log[-3000:]
    assert (
        f"checkpoint of epoch {k} written (stopped)" in log and not (cell / "runs" / "run_00" / "results.json").exists()
    )
    return cell


def test_a_run_stopped_at_epoch_k_and_resumed_equals_the_run_never_stopped(whole, tmp_path):
    trainer, whole = whole
    k = 7 if trainer == "fullbatch" else 3
    cell = stopped_at_epoch(tmp_path, k, trainer)
    again = run_train(*RUN, *TRAINERS[trainer], f"hydra.run.dir={cell}", "checkpoint_every_s=0", "resume=true")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "run continues from" in again.stderr and f"at epoch {k}" in again.stderr
    pd.testing.assert_frame_equal(history(cell), history(whole))  # every epoch's losses and scores, bit for bit
    assert record(cell) == record(whole)
    assert not (cell / "runs" / "run_00" / "checkpoint.pt").exists()  # removed once the run finished
    a = torch.load(cell / "runs" / "run_00" / "model.pt", weights_only=True)
    b = torch.load(whole / "runs" / "run_00" / "model.pt", weights_only=True)
    assert all(torch.equal(a[k], b[k]) for k in b)


@pytest.mark.onepython
def test_a_checkpoint_of_another_run_is_refused_in_one_line(tmp_path):
    cell = stopped_at_epoch(tmp_path, 3)
    other = tmp_path / "other"
    shutil.copytree(cell, other)
    r = run_train(*RUN, "seed=5", f"hydra.run.dir={other}", "resume=true")  # other settings: the store refuses
    assert r.returncode == 2 and "other settings" in r.stderr
    (other / "config.yaml").unlink()  # without the cell's config, the checkpoint's own identity still refuses it
    r = run_train(*RUN, "seed=5", f"hydra.run.dir={other}", "resume=true")
    lines = [ln for ln in r.stderr.splitlines() if "written by another run" in ln]
    assert r.returncode == 2 and len(lines) == 1 and "config, seed differs" in lines[0] and "Traceback" not in r.stderr
