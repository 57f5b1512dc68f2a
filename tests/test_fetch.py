"""`make data`: copy from a mirror or URL, verify every file, never keep or overwrite a bad one."""

import shutil
import subprocess
import sys

import pytest

from conftest import REPO, real_dataset_dir
from regnn.data.fetch import fetch, main, read_sums, sha256, verify
from regnn.errors import DataError


@pytest.fixture
def mirror(tmp_path):
    """A mirror holding the real IMDB files (the smallest dataset)."""
    m = tmp_path / "mirror"
    shutil.copytree(real_dataset_dir("IMDB"), m / "IMDB")
    return m


def imdb_sums():
    return read_sums(only=["IMDB"])


def test_fetch_copies_and_verifies_then_is_a_no_op(mirror, tmp_path):
    dest = tmp_path / "data"
    assert fetch(dest, imdb_sums(), mirror=str(mirror), log=lambda *_: None) == []
    assert verify(dest, imdb_sums()) == []
    stamp = (dest / "IMDB/adjM.npz").stat().st_mtime_ns
    assert fetch(dest, imdb_sums(), mirror=str(mirror), log=lambda *_: None) == []
    assert (dest / "IMDB/adjM.npz").stat().st_mtime_ns == stamp  # verified, not copied again


def test_corrupt_mirror_file_is_not_written(mirror, tmp_path):
    (mirror / "IMDB/labels.npy").write_bytes(b"garbage")
    dest = tmp_path / "data"
    problems = fetch(dest, imdb_sums(), mirror=str(mirror), log=lambda *_: None)
    assert len(problems) == 1 and "IMDB/labels.npy has sha256" in problems[0] and "nothing was written" in problems[0]
    assert not (dest / "IMDB/labels.npy").exists() and not (dest / "IMDB/labels.npy.part").exists()
    assert (dest / "IMDB/adjM.npz").exists()  # the good files still arrive


def test_differing_local_file_is_left_untouched_unless_forced(mirror, tmp_path):
    dest = tmp_path / "data"
    fetch(dest, imdb_sums(), mirror=str(mirror), log=lambda *_: None)
    (dest / "IMDB/labels.npy").write_bytes(b"my own edits")
    problems = fetch(dest, imdb_sums(), mirror=str(mirror), log=lambda *_: None)
    assert "exists but differs" in problems[0] and "FORCE=1" in problems[0]
    assert (dest / "IMDB/labels.npy").read_bytes() == b"my own edits"
    assert fetch(dest, imdb_sums(), mirror=str(mirror), force=True, log=lambda *_: None) == []
    assert sha256(dest / "IMDB/labels.npy") == imdb_sums()["IMDB/labels.npy"]


def test_upstream_url(mirror, tmp_path):
    dest = tmp_path / "data"
    assert fetch(dest, imdb_sums(), url=mirror.as_uri(), log=lambda *_: None) == []
    assert verify(dest, imdb_sums()) == []


def test_no_source_or_missing_mirror_names_the_fix(tmp_path):
    with pytest.raises(DataError, match="set REGNN_DATA_MIRROR"):
        fetch(tmp_path, imdb_sums())
    with pytest.raises(DataError, match=r"data mirror .*nowhere does not exist"):
        fetch(tmp_path, imdb_sums(), mirror=str(tmp_path / "nowhere"))


def test_mirror_lacking_a_file(mirror, tmp_path):
    (mirror / "IMDB/features_2.npz").unlink()
    problems = fetch(tmp_path / "d", imdb_sums(), mirror=str(mirror), log=lambda *_: None)
    assert len(problems) == 1 and "features_2.npz is not in the mirror" in problems[0]


def test_cli_exit_codes(mirror, tmp_path, capsys):
    dest = tmp_path / "data"
    assert main(["--mirror", str(mirror), "--dest", str(dest), "--only", "IMDB"]) == 0
    assert main(["--dest", str(dest), "--only", "IMDB", "--verify"]) == 0
    (dest / "IMDB/adjM.npz").write_bytes(b"x")
    assert main(["--dest", str(dest), "--only", "IMDB", "--verify"]) == 1
    assert "adjM.npz differs from its pinned checksum" in capsys.readouterr().err
    r = subprocess.run(
        [sys.executable, "-m", "regnn.data.fetch", "--mirror", str(tmp_path / "none"), "--dest", str(dest)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert r.returncode == 1 and "does not exist" in r.stderr and "Traceback" not in r.stderr
