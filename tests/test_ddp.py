"""Two CPU processes under torchrun (gloo) train one model with DDP and finish with identical parameters."""

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO

pytestmark = pytest.mark.serial  # make test runs it alone, after the parallel part


@pytest.mark.parametrize(
    "featureless",
    [
        "mean",
        # sparse embedding gradients: gloo all-gathers them; Dist.close drains them first so that exit cannot hang
        pytest.param("learnable", marks=pytest.mark.slow),
    ],
)
def test_two_processes_finish_with_identical_parameters(mag_root, tmp_path, featureless):
    run = tmp_path / "ddp"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(REPO / "train.py"),
        "dataset=ogbn_mag",
        "trainer=minibatch",
        "model=re_gcn",
        f"dataset.dir={mag_root}",
        "model.hidden=32",
        "trainer.batch_size=128",
        "trainer.fanouts=[5,5]",
        "trainer.max_epochs=3",
        "trainer.patience=3",
        "trainer.log_every=0",
        "runs=1",
        f"dataset.featureless={featureless}",
        "trainer.embed_dim=16",
        "threads=1",
        f"hydra.run.dir={run}",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HYDRA_FULL_ERROR": "0"}
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads((run / "results.json").read_text())
    ddp = r["per_run"][0]["ddp"]
    assert ddp["world_size"] == 2 and ddp["backend"] == "gloo" and r["environment"]["processes"] == 2
    assert len(ddp["param_digests"]) == 2 and ddp["param_digests"][0] == ddp["param_digests"][1]
    hist = pd.read_csv(run / "runs" / "run_00" / "history.csv")
    # each process trained on its half of the seeds (DGL pads the shorter shard): together one epoch
    n_train = len(pd.read_csv(mag_root / "ogbn_mag" / "split" / "time" / "paper" / "train.csv.gz", header=None))
    assert hist["seeds"].tolist() == [2 * math.ceil(n_train / 2)] * 3
    assert hist["train_loss"].iloc[-1] < hist["train_loss"].iloc[0]  # the replicas learnt, in step
    assert p.stderr.count("test accuracy") == 2  # rank 0 alone reports (run line + summary line)
    assert math.isfinite(r["metrics"]["test_acc"]["mean"])
