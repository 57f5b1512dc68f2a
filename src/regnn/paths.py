"""Where the checkout is: the one place that knows, importing nothing heavy (reporting and scripts need it
without torch or the models)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
