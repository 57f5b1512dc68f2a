"""Collect the results.json files of an experiment directory into one table."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


def load_results(exp_dir: str | Path) -> list[dict]:
    """Every results.json directly below exp_dir (one per sweep cell), in name order."""
    out = []
    for p in sorted(Path(exp_dir).glob("*/results.json")):
        r = json.loads(p.read_text())
        r["_dir"] = str(p.parent)
        out.append(r)
    return out


def fmt(mean, std=None, digits: int = 2) -> str:
    if mean is None or pd.isna(mean):
        return "–"
    return f"{mean:.{digits}f}" if std is None or pd.isna(std) else f"{mean:.{digits}f} ± {std:.{digits}f}"


def markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured markdown table (pandas' to_markdown needs the extra package tabulate)."""
    cols = [str(c) for c in df.columns]
    rows = [[str(v) for v in r] for r in df.itertuples(index=False)]
    return "\n".join(["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
                     + ["| " + " | ".join(r) + " |" for r in rows])


def write_table(df: pd.DataFrame, md: pd.DataFrame, out: Path, name: str, title: str, notes: list[str]) -> None:
    """results/<name>.csv (data) and results/<name>.md (rendering with a title and notes)."""
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / f"{name}.csv", index=False, float_format="%.4f")
    lines = [f"# {title}", "", markdown(md), ""] + [f"- {n}" for n in notes]
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
