"""scripts/setup/setup.sh's choice of Python: PYTHON wins, else the Python .venv was made with,
else the newest on PATH."""

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from conftest import REPO

BASE = getattr(sys, "_base_executable", sys.executable)


def _which(root: Path, path_dir: Path, **env) -> str:
    e = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    e |= {"PATH": f"{path_dir}:/usr/bin:/bin", **env}
    r = subprocess.run(
        ["bash", str(root / "scripts" / "setup" / "setup.sh"), "--which-python"],
        cwd=root,
        env=e,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_an_existing_venv_keeps_its_python_unless_python_is_set(tmp_path):
    root = tmp_path / "repo"
    (root / "scripts" / "setup").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup" / "setup.sh", root / "scripts" / "setup" / "setup.sh")
    shutil.copy(REPO / "requirements.lock", root / "requirements.lock")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    newest = bin_dir / "python3.13"  # what PATH offers first: a supported Python under another name
    newest.write_text(f'#!/bin/sh\nexec "{BASE}" "$@"\n')
    newest.chmod(0o755)
    ver = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert _which(root, bin_dir) == f"python3.13 ({ver})"  # no venv yet: the newest on PATH
    venv.create(root / ".venv", with_pip=False)
    chosen = _which(root, bin_dir)
    assert chosen != f"python3.13 ({ver})" and chosen.endswith(f"({ver})")  # the venv's own Python
    assert Path(chosen.rsplit(" ", 1)[0]).resolve() == Path(BASE).resolve()
    assert _which(root, bin_dir, PYTHON=str(newest)) == f"{newest} ({ver})"  # PYTHON wins
