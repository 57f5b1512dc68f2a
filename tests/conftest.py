import dataclasses
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import regnn  # noqa: F401  (first: silences ogb's network check before dgl imports it)

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("REGNN_DATA_DIR", REPO / "data"))

if os.environ.get("PYTEST_XDIST_WORKER"):  # make test runs one worker per core: one thread each, subprocesses too
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


def cfg(*overrides: str):
    """conf/train.yaml composed with these overrides, as train.py composes it."""
    from hydra import compose, initialize_config_dir
    import regnn.config  # noqa: F401  (as train.py: the schemas, the generated model names and the resolvers)

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose("train", overrides=list(overrides))


@functools.lru_cache(maxsize=None)
def _re_relation():
    from regnn.spec import relation_of

    return relation_of(cfg("model=re_gcn").model.relation)


def relation(**changes):
    """RE-GCN's relation settings as its config composes them (lambda, tau's slope, both parts learnt), with
    `changes` (dataclasses.replace): tests build models with the config's values, not values of their own."""
    return dataclasses.replace(_re_relation(), **changes)


@functools.lru_cache(maxsize=None)
def _trainer_options(trainer: str):
    from regnn.spec import training_of

    return training_of(cfg(f"trainer={trainer}"))


def fullbatch(**changes):
    """The full-batch trainer's settings as conf/train.yaml composes them (DBLP's protocol: 200 epochs, patience
    50 on the validation loss, constant lr, fp32), with `changes`."""
    return dataclasses.replace(_trainer_options("fullbatch"), **changes)


def minibatch(**changes):
    """The mini-batch trainer's settings as trainer=minibatch composes them, with `changes` (new fanouts are also
    the evaluation's unless given, as eval_fanouts: null means)."""
    if "fanouts" in changes:
        changes = {"eval_fanouts": tuple(changes["fanouts"]), **changes, "fanouts": tuple(changes["fanouts"])}
    return dataclasses.replace(_trainer_options("minibatch"), **changes)


@pytest.fixture(params=["kernels", "torch"])
def backend(request):
    """Every aggregation test runs on the fused C++ kernels and on the pure-torch path: the backend to build
    its adjacencies with."""
    from regnn.core.backend import TORCH, choose_backend

    if request.param == "torch":
        return TORCH
    b = choose_backend("cpu", kernels=True)
    if b.kernels is None:
        pytest.skip("the fused kernels could not be built here (no C++ compiler?)")
    return b


def real_dataset_dir(name: str) -> Path:
    """The fetched dataset folder; a clear failure (not a skip) when `make data` has not run."""
    d = DATA / name
    if not (d / "adjM.npz").is_file():
        pytest.fail(f"{d} is missing: run `make data` (REGNN_DATA_MIRROR=../shared/datasets) before the tests")
    return d


@pytest.fixture
def set_threads():
    """set_threads(n) sets torch's (and the fused kernels') thread count for the test; restored afterwards."""
    import torch

    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


@pytest.fixture
def imdb_copy(tmp_path) -> Path:
    """A private copy of the IMDB files that a test may damage."""
    dst = tmp_path / "IMDB"
    shutil.copytree(real_dataset_dir("IMDB"), dst)
    return dst


# make's arguments for a target run from a test: the suite runs inside the venv `make test` has just set up, so the
# target's set-up prerequisites (~7 s each time: the venv, import and data checks) are taken as done
SET_UP = ["-o", "setup", "-o", "venv", "-o", "data"]


def pytest_collection_modifyitems(config, items):
    """CI (.ci/run) spreads the tests marked onepython over the Pythons it tests: with REGNN_ONEPYTHON_SHARE=k/n
    this Python runs every n-th of them in name order from the k-th, so each runs on exactly one Python. Unset
    (make test, make test-all): all of them."""
    share = os.environ.get("REGNN_ONEPYTHON_SHARE")
    if not share:
        return
    try:
        k, n = (int(x) for x in share.split("/"))
        assert 0 <= k < n
    except (ValueError, AssertionError):
        raise pytest.UsageError(f"REGNN_ONEPYTHON_SHARE={share!r}: expected k/n with 0 <= k < n, e.g. 0/3")
    one = sorted(it.nodeid for it in items if it.get_closest_marker("onepython"))
    mine = set(one[k::n])
    keep = [it for it in items if it.nodeid in mine or not it.get_closest_marker("onepython")]
    if len(keep) < len(items):
        kept = {it.nodeid for it in keep}
        config.hook.pytest_deselected(items=[it for it in items if it.nodeid not in kept])
        items[:] = keep


def run_train(*overrides: str, cwd: Path = REPO, env: dict | None = None, timeout: int = 300):
    """Runs `python train.py overrides...` in a subprocess; returns the CompletedProcess."""
    e = {**os.environ, "HYDRA_FULL_ERROR": "0", **(env or {})}
    return subprocess.run(
        [sys.executable, str(REPO / "train.py"), *overrides],
        cwd=cwd,
        env=e,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# train.py in a process that, at its first stop-signal check once a path matching $REGNN_TEST_HOLD_AFTER exists (a
# glob: a finished run's record, a trial's folder), writes $REGNN_TEST_HOLD_READY and waits there for a stop signal.
# A test that signals or kills the job once that file appears does so at a known point of the job, however slowly
# the machine runs it, instead of racing it with a polling loop.
HOLD = r"""
import glob, os, runpy, sys, time
import regnn.runtime.interrupt as interrupt
after, ready, check = os.environ["REGNN_TEST_HOLD_AFTER"], os.environ["REGNN_TEST_HOLD_READY"], interrupt.check
skip = [int(os.environ.get("REGNN_TEST_HOLD_SKIP", "0"))]  # checks to let pass once the file exists
parent = os.getppid()
def held(where=""):
    if not glob.glob(after) or os.path.exists(ready):
        return check(where)
    if skip[0] > 0:
        skip[0] -= 1
    else:
        open(ready, "w").close()
        while interrupt._received is None:  # SIGTERM/SIGUSR1 end the wait (SIGKILL ends the process)
            if os.getppid() != parent:  # the test that started it is gone: never wait as an orphan
                os._exit(1)
            time.sleep(0.05)
    check(where)
interrupt.check = held
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def start_held(args: list[str], hold_after: Path | str, ready: Path, env: dict | None = None, skip: int = 0, **popen):
    """Starts `python train.py args...` under HOLD (above), held at the check `skip` checks after the first one
    that finds `hold_after`; the caller waits for `ready` (wait_for_file)."""
    e = {
        **os.environ,
        "HYDRA_FULL_ERROR": "0",
        **(env or {}),
        "REGNN_TEST_HOLD_AFTER": str(hold_after),
        "REGNN_TEST_HOLD_READY": str(ready),
        "REGNN_TEST_HOLD_SKIP": str(skip),
    }
    return subprocess.Popen([sys.executable, "-c", HOLD, str(REPO / "train.py"), *args], cwd=REPO, env=e, **popen)


def wait_for_file(path: Path, p: subprocess.Popen, timeout: float = 600):
    """Waits until `path` exists; fails if the process ends first (or after `timeout` s, a hang, not a race)."""
    import time

    deadline = time.monotonic() + timeout
    while not path.exists():
        assert p.poll() is None, f"the job ended (status {p.returncode}) before {path} appeared"
        assert time.monotonic() < deadline, f"no {path} after {timeout} s"
        time.sleep(0.05)


@pytest.fixture(scope="session")
def mag_root(tmp_path_factory) -> Path:
    """A tiny graph with OGBN-MAG's schema in OGB's on-disk layout (read by ogb's own loader); 5 venues used."""
    from regnn.data.ogb_format import write_ogb_mag_like

    root = tmp_path_factory.mktemp("ogb")
    write_ogb_mag_like(root, scale=0.002, num_label_classes=5, seed=0)
    return root


@pytest.fixture(scope="session")
def imdb_relation_graph():
    """The Adjacency of IMDB's relation graph (typed self-loops included), as RE-GNN builds it."""
    from regnn.data import load_dataset
    from regnn.models import RelationInputs

    return RelationInputs.build(load_dataset("imdb", dir=real_dataset_dir("IMDB"))).adj


def trained_cell(folder: Path, *overrides: str) -> Path:
    """A cell train.py trained into folder/cell with these overrides (a test module's shared fixture)."""
    out = folder / "cell"
    r = run_train(*overrides, f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def assert_scored_on_the_test_nodes(results: dict, key: str = "test_micro_f1") -> None:
    """Each run's test score is an accuracy over the cell's test nodes (a whole number of them right, on the
    split_sizes it records), and the cell's mean is the mean of its runs': a score computed elsewhere, on other
    nodes, or averaged wrongly fails, where a range check would not."""
    import numpy as np

    n = results["split_sizes"]["test"]
    runs = [r[key] for r in results["per_run"] if "failed" not in r]
    assert runs and n > 0
    for s in runs:
        right = s * n / 100
        assert abs(right - round(right)) < 1e-6 * n and 0 <= round(right) <= n, (s, n)
    assert results["metrics"][key]["mean"] == pytest.approx(float(np.mean(runs)))
