"""Where the checkout is, importing nothing heavy (reporting and scripts need it without torch or the models).
The other modules take REPO_ROOT from here."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def repo_relative(p: Path) -> str:
    """p relative to the checkout where it lies inside it, else whole: reports name no machine's folders."""
    p = Path(p).resolve()
    return str(p.relative_to(REPO_ROOT)) if p.is_relative_to(REPO_ROOT) else str(p)
