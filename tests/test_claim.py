"""The claim marker (.training.pid) exists only whole, is taken over only from a process that is gone (this host)
or whose lease has expired (another host), and is removed only by its owner: one trainer per output directory."""

import multiprocessing as mp
import os
import subprocess
import time

import contextlib
import json

import pytest

from regnn.runs import claim as claim_module
from regnn.runs.claim import MARKER, claim, read_marker
from regnn.errors import CellBusy, ConfigError


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
        owner = read_marker(tmp_path / MARKER)
        assert owner["pid"] == os.getpid() and owner["host"] == claim_module.host_id()
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
    assert not marker.exists() or read_marker(marker)["pid"] > 0


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


@pytest.mark.parametrize("flock", [True, False], ids=["flock", "no-flock"])
@pytest.mark.parametrize("stale", ["999999999", "expired"])
def test_many_writers_over_a_stale_marker_let_one_in(tmp_path, monkeypatch, stale, flock):
    """A killed job's marker (this host), or another host's with an expired lease; without the directory flock
    (NFS) the link/rename protocol alone lets one writer in at a time."""
    if not flock:
        monkeypatch.setattr(claim_module, "_dir_lock", lambda d: contextlib.nullcontext())
    (tmp_path / MARKER).write_text(stale if stale != "expired" else json.dumps(other_host(time.time() - 700)))
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


def other_host(renewed, pid=None, lease_s=600.0):
    return {
        "host": "another-node",
        "pid": os.getpid() if pid is None else pid,
        "token": "t0",
        "renewed": renewed,
        "lease_s": lease_s,
    }


def test_another_hosts_fresh_lease_is_respected_whatever_its_pid(tmp_path):
    """Its pid means nothing here (this very process's pid, here): only the lease counts."""
    marker = tmp_path / MARKER
    marker.write_text(json.dumps(other_host(time.time() - 30)))
    before = marker.read_text()
    with pytest.raises(CellBusy, match=f"process {os.getpid()} on host another-node .lease expires in 5[67]"):
        with claim(tmp_path):
            pass
    assert marker.read_text() == before  # untouched


def test_another_hosts_expired_lease_is_taken_over(tmp_path):
    marker = tmp_path / MARKER
    marker.write_text(json.dumps(other_host(time.time() - 601, pid=1)))
    with claim(tmp_path):
        owner = read_marker(marker)
        assert owner["host"] == claim_module.host_id() and owner["pid"] == os.getpid()
        assert owner["lease_s"] == 600.0 and abs(owner["renewed"] - time.time()) < 5
    assert not marker.exists() and list(tmp_path.iterdir()) == []


def test_another_hosts_marker_without_a_lease_is_taken_over(tmp_path):
    (tmp_path / MARKER).write_text(json.dumps({"host": "another-node", "pid": 1}))
    with claim(tmp_path):
        assert read_marker(tmp_path / MARKER)["pid"] == os.getpid()


def test_the_heartbeat_renews_the_lease_and_stops_with_the_claim(tmp_path, monkeypatch):
    monkeypatch.setenv("REGNN_CLAIM_LEASE_S", "2")
    monkeypatch.setenv("REGNN_CLAIM_HEARTBEAT_S", "0.05")
    marker = tmp_path / MARKER
    with claim(tmp_path):
        first = later = read_marker(marker)
        deadline = time.monotonic() + 60  # a renewal is due every 0.05 s; a loaded machine only delays it
        while later["renewed"] == first["renewed"] and time.monotonic() < deadline:
            time.sleep(0.05)
            later = read_marker(marker) or first
        assert later["token"] == first["token"] and later["renewed"] > first["renewed"] and later["lease_s"] == 2
    assert not marker.exists()
    assert not claim_module._BEATS and all(
        not t.name.startswith("claim heartbeat") for t in __import__("threading").enumerate()
    )


def test_a_claim_taken_over_meanwhile_is_not_renewed_or_removed(tmp_path, monkeypatch):
    """This process stalled past its lease and another host took the cell: its marker stays."""
    monkeypatch.setenv("REGNN_CLAIM_HEARTBEAT_S", "0.05")
    marker = tmp_path / MARKER
    theirs = json.dumps(other_host(time.time()))
    with claim(tmp_path):
        marker.write_text(theirs)
        beat = claim_module._BEATS[marker]
        beat._thread.join(timeout=60)  # its next beat finds the other owner and ends the heartbeat
        assert not beat._thread.is_alive()
    assert marker.read_text() == theirs


@pytest.mark.parametrize(
    "env",
    [
        {"REGNN_CLAIM_LEASE_S": "ten"},
        {"REGNN_CLAIM_HEARTBEAT_S": "-1"},
        {"REGNN_CLAIM_LEASE_S": "60", "REGNN_CLAIM_HEARTBEAT_S": "60"},
    ],
)
def test_a_bad_lease_setting_is_refused_in_one_line(tmp_path, monkeypatch, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError, match="REGNN_CLAIM_"):
        with claim(tmp_path):
            pass
    assert not (tmp_path / MARKER).exists()
