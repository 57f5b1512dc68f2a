"""Matplotlib helpers shared by the figures (headless backend, consistent style)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PLAIN, RE = "#9e9e9e", "#1f77b4"


def save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def subplots(*args, **kw):
    return plt.subplots(*args, **kw)
