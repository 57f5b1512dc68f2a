"""Mini-batch runs repeat for a seed at the default thread setting: the same sampled blocks in every process."""
import json
import subprocess
import sys

from conftest import REPO, run_train

DIGEST = """
import hashlib, sys, torch, dgl
import regnn
from regnn.data import make_synthetic
from regnn.training.sampling import SampledGraph, sampled_loader
from regnn.training.seed import seed_everything
torch.set_num_threads(2)  # several OpenMP threads, as the default on a multi-core machine
d = make_synthetic(num_items=300, num_sources=150, num_tags=20, seed=0)
sg = SampledGraph(d)
seed_everything(0)
h = hashlib.sha1()
for epoch in range(3):
    for inp, out, blocks in sampled_loader(sg, sg.seeds(d.splits["train"]), [10, 10], 64, shuffle=True):
        for b in blocks:
            h.update(b.edata[dgl.EID].numpy().tobytes())
print(h.hexdigest())
"""


def test_a_seed_samples_the_same_blocks_in_every_process():
    digests = {subprocess.run([sys.executable, "-c", DIGEST], cwd=REPO, capture_output=True, text=True,
                              check=True, timeout=120).stdout.strip() for _ in range(6)}
    assert len(digests) == 1, digests


def test_two_identical_minibatch_runs_give_identical_results(tmp_path):
    args = ["dataset=synthetic", "model=re_gcn", "trainer=minibatch", "runs=1", "trainer.fanouts=[10,10]",
            "trainer.batch_size=64", "trainer.max_epochs=4", "trainer.patience=4", "trainer.log_every=0"]
    runs = []
    for i in range(2):
        p = run_train(*args, f"hydra.run.dir={tmp_path}/{i}")  # threads left at its default (null)
        assert p.returncode == 0, p.stderr
        rec = json.loads((tmp_path / str(i) / "results.json").read_text())["per_run"][0]
        runs.append({k: v for k, v in rec.items() if "time" not in k and k not in ("seeds_per_s", "sampling_share", "peak_rss_gb", "pid")})
    assert runs[0] == runs[1]
