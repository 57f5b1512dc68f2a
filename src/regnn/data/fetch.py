"""Fill data/ from a mirror directory or an upstream URL and check every file against SHA256SUMS.

    python -m regnn.data.fetch [--mirror DIR | --url URL] [--dest data] [--only DBLP ACM] [--verify] [--force]

A file is written only after its checksum matched (copied to `<name>.part`, checked, then renamed), so a bad
mirror never leaves a bad file behind, and an existing file that differs is reported, not replaced, unless
--force is given.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import sys
import urllib.request
from pathlib import Path

from regnn.errors import DataError
from regnn.paths import REPO_ROOT

DEFAULT_SUMS = REPO_ROOT / "data" / "SHA256SUMS"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_sums(path: Path = DEFAULT_SUMS, only: list[str] | None = None) -> dict[str, str]:
    """relative file name -> expected sha256, optionally only for the named dataset folders."""
    if not Path(path).is_file():
        raise DataError(f"checksum file {path} is missing; it is part of the repository (git checkout data/SHA256SUMS)")
    sums = {}
    for line in Path(path).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split(maxsplit=1)
            sums[name.strip().lstrip("*")] = digest
    if only:
        wanted = {o.upper() for o in only}
        sums = {k: v for k, v in sums.items() if k.split("/")[0].upper() in wanted}
    return sums


def verify(dest: Path, sums: dict[str, str]) -> list[str]:
    """Problems with the files under dest (missing or differing), as messages naming the file and the fix."""
    problems = []
    for name, digest in sums.items():
        p = Path(dest) / name
        if not p.is_file():
            problems.append(f"{p} is missing; run `make data`")
        elif sha256(p) != digest:
            problems.append(
                f"{p} differs from its pinned checksum (truncated, corrupt or another version); "
                f"run `make data FORCE=1` to replace it from the mirror"
            )
    return problems


def _source(name: str, mirror: str | None, url: str | None):
    if mirror:
        src = Path(mirror) / name
        if not src.is_file():
            raise DataError(
                f"{src} is not in the mirror {mirror}; point REGNN_DATA_MIRROR at the folder that "
                "holds DBLP/ ACM/ IMDB/ and SHA256SUMS"
            )
        return lambda out: shutil.copyfile(src, out)

    def download(out: Path) -> None:
        with urllib.request.urlopen(f"{url.rstrip('/')}/{name}", timeout=60) as r, open(out, "wb") as f:
            shutil.copyfileobj(r, f)

    return download


def fetch(
    dest: Path, sums: dict[str, str], mirror: str | None = None, url: str | None = None, force: bool = False, log=print
) -> list[str]:
    """Copies every missing file; returns the problems (empty when all files are present and verified)."""
    if not mirror and not url:
        raise DataError(
            "no data source: set REGNN_DATA_MIRROR to a directory holding DBLP/ ACM/ IMDB/ "
            "(CI: ../shared/datasets) or REGNN_DATA_URL to an upstream URL"
        )
    if mirror and not Path(mirror).is_dir():
        raise DataError(
            f"data mirror {mirror} does not exist; set REGNN_DATA_MIRROR to the folder holding "
            "DBLP/ ACM/ IMDB/ (CI: ../shared/datasets)"
        )
    Path(dest).mkdir(parents=True, exist_ok=True)
    with _held(Path(dest) / ".fetch.lock", log):
        return _fetch_all(dest, sums, mirror, url, force, log)


@contextlib.contextmanager
def _held(lock: Path, log):
    """One fetch into a folder at a time: a second (make setup in one terminal, make data in another) waits for
    the first, then finds the files there and verified."""
    import fcntl

    with open(lock, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"data: another fetch into {lock.parent} is running; waiting for it")
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _fetch_all(dest, sums, mirror, url, force, log) -> list[str]:
    problems, copied = [], 0
    for name, digest in sums.items():
        out = Path(dest) / name
        if out.is_file():
            if sha256(out) == digest:
                continue
            if not force:
                problems.append(
                    f"{out} exists but differs from its pinned checksum; it was left untouched: "
                    "delete it or run `make data FORCE=1` to replace it"
                )
                continue
        out.parent.mkdir(parents=True, exist_ok=True)
        part = out.with_name(f"{out.name}.{os.getpid()}.part")
        try:
            _source(name, mirror, url)(part)
            got = sha256(part)
            if got != digest:
                problems.append(
                    f"{mirror or url}/{name} has sha256 {got[:12]}... but {digest[:12]}... is pinned; "
                    "the source is corrupt or another version, nothing was written"
                )
                continue
            os.replace(part, out)
            copied += 1
        except DataError as e:
            problems.append(str(e))
        except OSError as e:
            problems.append(f"could not fetch {name} from {mirror or url}: {e}")
        finally:
            part.unlink(missing_ok=True)
    log(
        f"data: {copied} file(s) fetched, {len(sums) - copied - len(problems)} already present and verified, "
        f"{len(problems)} problem(s) -> {dest}"
    )
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", default=os.environ.get("REGNN_DATA_MIRROR"), help="directory with DBLP/ ACM/ IMDB/")
    ap.add_argument("--url", default=os.environ.get("REGNN_DATA_URL"), help="upstream base URL (used without mirror)")
    ap.add_argument("--dest", default=str(REPO_ROOT / "data"))
    ap.add_argument("--sums", default=str(DEFAULT_SUMS))
    ap.add_argument("--only", nargs="*", help="dataset folders to fetch (default: all)")
    ap.add_argument("--verify", action="store_true", help="only check the files already in --dest")
    ap.add_argument("--force", action="store_true", help="replace files whose checksum differs")
    a = ap.parse_args(argv)
    try:
        sums = read_sums(Path(a.sums), a.only)
        problems = verify(Path(a.dest), sums) if a.verify else fetch(Path(a.dest), sums, a.mirror, a.url, a.force)
    except DataError as e:
        problems = [str(e)]
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    if a.verify and not problems:
        print(f"data: all {len(sums)} files under {a.dest} match their checksums")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
