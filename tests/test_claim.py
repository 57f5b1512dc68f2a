"""The claim marker (.training.pid) exists only whole, is taken over only from a process that is gone, and is
removed only by its owner: one trainer per output directory on a host."""
import multiprocessing as mp
import os
import subprocess
import time

import pytest

from regnn.claim import MARKER, claim
from regnn.errors import CellBusy


@pytest.fixture
def other():
    """A live process that is not this one."""
    p = subprocess.Popen(["sleep", "60"])
    yield p.pid
    p.kill()
    p.wait()


def test_a_live_other_process_keeps_the_cell(tmp_path, other):
    (tmp_path / MARKER).write_text(str(other))
    with pytest.raises(CellBusy, match=f"being trained by process {other}"):
        with claim(tmp_path):
            pass
    assert (tmp_path / MARKER).read_text() == str(other)  # untouched


@pytest.mark.parametrize("content", ["", "  \n", "12x", "999999999"])
def test_an_empty_junk_or_dead_marker_is_taken_over(tmp_path, content):
    (tmp_path / MARKER).write_text(content)
    with claim(tmp_path):
        assert (tmp_path / MARKER).read_text() == str(os.getpid())
    assert not (tmp_path / MARKER).exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no temporary file left


def test_only_the_owner_removes_the_marker(tmp_path, other):
    with claim(tmp_path):
        (tmp_path / MARKER).write_text(str(other))  # taken over meanwhile (e.g. this process was thought gone)
    assert (tmp_path / MARKER).read_text() == str(other)


def test_the_marker_never_exists_empty(tmp_path, monkeypatch):
    """A kill between creating the marker and writing the pid must not leave an empty marker, which a second
    writer would take for stale."""
    class Killed(BaseException):
        pass

    def killed(*a, **k):
        raise Killed

    monkeypatch.setattr(os, "write", killed)
    monkeypatch.setattr(os, "link", killed)
    with pytest.raises(Killed):
        with claim(tmp_path):
            pass
    marker = tmp_path / MARKER
    assert not marker.exists() or marker.read_text().strip().isdigit()


def _contender(d, start, results):
    while time.time() < start:
        time.sleep(0.001)
    try:
        with claim(d):
            t0 = time.time()
            time.sleep(0.5)
            results.put(("in", t0, time.time()))
    except CellBusy:
        results.put(("busy", 0, 0))


def test_many_writers_over_a_stale_marker_let_one_in(tmp_path):
    (tmp_path / MARKER).write_text("999999999")  # a killed job's
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    start = time.time() + 0.5
    procs = [ctx.Process(target=_contender, args=(tmp_path, start, results)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(20)
    got = [results.get(timeout=5) for _ in procs]
    inside = sorted((a, b) for kind, a, b in got if kind == "in")
    assert inside and all(b1 <= a2 for (_, b1), (a2, _) in zip(inside, inside[1:]))  # never two at once
    assert not (tmp_path / MARKER).exists()
