"""Summaries and configs are written whole: a kill or a full disk at any write leaves nothing that blocks the
cell; a re-run completes it with every run trained once and every JSON readable."""

import errno
import json
import os
from pathlib import Path

import pytest

import regnn.runs.io_safe as io_safe
import regnn.pipeline as pipeline
from regnn.pipeline.job import CellJob
from conftest import REPO, cfg, run_train
from regnn.runs.io_safe import OutputError, read_json, write_text

SYN = ["dataset=synthetic", "model=re_gcn", "runs=2", "threads=1", "trainer.max_epochs=4", "trainer.patience=4"]
MINI = [
    "trainer=minibatch",
    "trainer.default_fanout=5",
    "trainer.batch_size=100",
    "trainer.max_epochs=2",
    "trainer.patience=2",
    "trainer.log_every=0",
]


class Killed(BaseException):
    """Stands for SIGKILL: nothing in the pipeline catches it."""


def count_writes(monkeypatch, kill_at=None) -> list[str]:
    """Records every write of the pipeline (all go through io_safe.write_text); at write number kill_at the
    process 'dies' after half the temporary file is written."""
    seen, original = [], io_safe.write_text

    def write(path, text):
        seen.append(Path(path).name)
        if len(seen) == kill_at:
            Path(path).with_name(f".{Path(path).name}.{os.getpid()}.tmp").write_text(text[: len(text) // 2])
            raise Killed(path)
        original(path, text)

    monkeypatch.setattr(io_safe, "write_text", write)  # the cell store writes through io_safe at call time
    return seen


def trained_runs(monkeypatch) -> list[int]:
    """The runs trained from here on, by either trainer's job, in order."""
    runs, original = [], CellJob.train_one

    def one(self, run):
        runs.append(run)
        return original(self, run)

    monkeypatch.setattr(CellJob, "train_one", one)
    return runs


def readable(out: Path) -> None:
    for p in out.rglob("*.json"):
        json.loads(p.read_text())  # raises on an empty or cut file


def test_write_text_is_whole_or_absent(tmp_path, monkeypatch):
    p = tmp_path / "results.json"
    write_text(p, "old\n")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io_safe.os, "fsync", full)
    with pytest.raises(OutputError, match=r"cannot write .*results.json \(No space left on device\); free disk space"):
        write_text(p, "new\n")
    assert p.read_text() == "old\n" and [x.name for x in tmp_path.iterdir()] == ["results.json"]


def test_empty_or_cut_summaries_count_as_absent(tmp_path):
    (tmp_path / "a.json").write_text("")
    (tmp_path / "b.json").write_text('{"metrics": {')
    assert read_json(tmp_path / "a.json") is None and read_json(tmp_path / "b.json") is None
    assert read_json(tmp_path / "none.json") is None


@pytest.mark.onepython
@pytest.mark.parametrize("trainer", [[], MINI], ids=["fullbatch", "minibatch"])
def test_a_kill_at_every_write_is_recovered(tmp_path, monkeypatch, trainer):
    overrides = [*SYN, *trainer]
    writes = count_writes(monkeypatch)
    clean = pipeline.train(cfg(*overrides), tmp_path / "clean")
    assert writes[0] == "config.yaml" and writes[-1] == "results.json" and len(writes) >= 7
    for k in range(1, len(writes) + 1):
        out = tmp_path / f"kill{k}"
        count_writes(monkeypatch, kill_at=k)
        before = trained_runs(monkeypatch)
        with pytest.raises(Killed):
            pipeline.train(cfg(*overrides), out)
        done = {r for r in range(2) if read_json(out / "runs" / f"run_{r:02d}" / "results.json")}
        count_writes(monkeypatch)
        again = trained_runs(monkeypatch)
        summary = pipeline.train(cfg(*overrides, "resume=true"), out)
        assert sorted(again) == sorted(set(range(2)) - done), (k, writes[k - 1])  # finished runs not retrained
        assert len(before) >= len(done)
        assert [r["run"] for r in summary["per_run"]] == [0, 1]
        scores = lambda s: {k: v for k, v in s["metrics"].items() if "time" not in k}  # noqa: E731
        assert scores(summary) == scores(clean) or trainer  # full-batch runs repeat exactly
        readable(out)
        assert not (out / ".training.pid").exists()


@pytest.mark.onepython
def test_an_empty_results_json_or_config_yaml_does_not_block_the_cell(tmp_path):
    out = tmp_path / "cell"
    out.mkdir()
    (out / "config.yaml").write_text("")
    (out / "results.json").write_text("")
    p = run_train(*SYN, "resume=true", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr
    assert json.loads((out / "results.json").read_text())["runs"] == 2


def test_full_disk_gives_one_line_and_a_non_zero_exit(tmp_path):
    launcher = tmp_path / "full_disk.py"
    launcher.write_text(
        "import errno, os, runpy, sys\n"
        "import regnn.runs.io_safe as s\n"
        "def full(fd):\n"
        "    raise OSError(errno.ENOSPC, 'No space left on device')\n"
        "s.os.fsync = full\n"
        f"sys.argv = ['train.py', *sys.argv[1:]]\n"
        f"runpy.run_path({str(REPO / 'train.py')!r}, run_name='__main__')\n"
    )
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, str(launcher), *SYN, f"hydra.run.dir={tmp_path}/out"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 2, p.stderr
    assert "No space left on device" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "out" / "config.yaml").exists()
