"""Formatting and writing of tables (CSV as data, markdown for reading)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def fmt(mean, std=None, digits: int = 2) -> str:
    if mean is None or pd.isna(mean):
        return "–"
    return f"{mean:.{digits}f}" if std is None or pd.isna(std) else f"{mean:.{digits}f} ± {std:.{digits}f}"


def markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured markdown table (pandas' to_markdown needs the extra package tabulate)."""
    cols = [str(c) for c in df.columns]
    rows = [[str(v) for v in r] for r in df.itertuples(index=False)]
    return "\n".join(
        ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
        + ["| " + " | ".join(r) + " |" for r in rows]
    )


def runs_text(runs: list[int]) -> str:
    """[0, 1, 2, 5] -> 'runs 0-2, 5'."""
    spans, start = [], None
    for i, r in enumerate(runs):
        start = r if start is None else start
        if i + 1 == len(runs) or runs[i + 1] != r + 1:
            spans.append(f"{start}" if start == r else f"{start}-{r}")
            start = None
    return ("run " if len(runs) == 1 else "runs ") + ", ".join(spans)


def device_note(devices: dict[str, dict[str, list[int]]]) -> str | None:
    """A note naming the cells (and runs) trained elsewhere than on the CPU, or None when every run was."""
    parts = []
    for cell, by_device in sorted(devices.items()):
        for device, runs in by_device.items():
            if device != "cpu":
                whole = len(by_device) == 1
                parts.append(f"{cell} ({'all runs' if whole else runs_text(sorted(runs))} on {device})")
    if not parts:
        return None
    return (
        "Trained on another device than the CPU: " + "; ".join(parts) + ". Every other run was trained on the "
        "CPU, with the same settings and seeds; the two devices sum in another order, so a seed's scores "
        "differ between them within the spread of the runs."
    )


def write_table(
    df: pd.DataFrame,
    md: pd.DataFrame,
    out: Path,
    name: str,
    title: str,
    notes: list[str],
    missing: list[str] = (),
    devices: dict | None = None,
) -> None:
    """<out>/<name>.csv (data) and <out>/<name>.md (rendering with a title and notes, the cells that were not
    trained yet when rendering a partial pool, and the runs trained on a GPU)."""
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / f"{name}.csv", index=False, float_format="%.4f")
    if devices and (note := device_note(devices)):
        notes = list(notes) + [note]
    if missing:
        notes = list(notes) + [f"Not trained yet, so not in this table: {', '.join(missing)}."]
    lines = [f"# {title}", "", markdown(md), ""] + [f"- {n}" for n in notes]
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")


def refuse_existing(prefix) -> str | None:
    """An error line when PREFIX.csv or PREFIX.md exists (a listing is never written over), else None."""
    taken = [str(p) for p in (Path(f"{prefix}.csv"), Path(f"{prefix}.md")) if p.exists()]
    return f"error: {', '.join(taken)} already exists; move it away or pick another --out" if taken else None
