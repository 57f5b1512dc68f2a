"""Mini-batch runs repeat for a seed at the default thread setting (that every process and thread count samples the
same blocks for a seed: tests/test_sampler.py)."""

import json

import pytest

from conftest import run_train


@pytest.mark.slow  # make test-all: the blocks of both modes are compared directly in tests/test_sampler.py
def test_two_minibatch_runs_give_identical_results_whether_batches_are_sampled_in_line_or_ahead(tmp_path):
    args = [
        "dataset=synthetic",
        "model=re_gcn",
        "trainer=minibatch",
        "runs=1",
        "trainer.default_fanout=10",
        "trainer.batch_size=64",
        "trainer.max_epochs=4",
        "trainer.patience=4",
        "trainer.log_every=0",
    ]
    runs = []
    for i, mode in enumerate(["deterministic", "parallel"]):
        p = run_train(*args, f"trainer.sampling={mode}", f"hydra.run.dir={tmp_path}/{i}")  # threads: default (null)
        assert p.returncode == 0, p.stderr
        rec = json.loads((tmp_path / str(i) / "results.json").read_text())["per_run"][0]
        runs.append(
            {
                k: v
                for k, v in rec.items()
                if "time" not in k and k not in ("seeds_per_s", "sampling_share", "peak_rss_gb", "pid")
            }
        )
    assert runs[0] == runs[1]
