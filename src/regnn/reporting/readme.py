"""Regenerate the README's "Reproduced results" section from the committed tables in results/.

    python -m regnn.reporting.readme      (also run by `make tables`)

Everything between the markers <!-- results:start --> and <!-- results:end --> is replaced by the tables and
figures found in results/ (nothing is typed by hand), in the order of SECTIONS.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from regnn.config import REPO_ROOT

START, END = "<!-- results:start -->", "<!-- results:end -->"
# (file in results/, heading); missing files are skipped
SECTIONS = [
    ("table_classification.md", None),
    ("table_clustering.md", None),
    ("table_ablation.md", None),
    ("table_backbones.md", None),
    ("fig_backbones.png", "Plain vs RE backbones (DBLP, ACM)"),
    ("table_lambda.md", None),
    ("fig_lambda.png", "First-layer relation weights per lambda (DBLP)"),
    ("fig_case_study.png", "Case study: relation weights of a 4-layer RE-GCN on DBLP"),
    ("fig_tsne.png", "t-SNE of DBLP author representations"),
    ("table_efficiency.md", None),
    ("fig_efficiency.png", "Efficiency on DBLP"),
    ("table_baselines.md", None),
    ("benchmark.md", None),
    ("scale_benchmark.md", None),
    ("scale_benchmark_epoch.md", None),  # one whole full-size epoch (RE-GAT), scripts/scale_benchmark.py --out
]


def section(results: Path) -> str:
    parts = []
    for name, heading in SECTIONS:
        p = results / name
        if not p.exists():
            continue
        if p.suffix == ".md":
            text = p.read_text().strip()
            text = re.sub(r"^# ", "### ", text, count=1)  # demote the file's title
            parts.append(text)
        else:
            parts.append(f"### {heading}\n\n![{heading}](results/{name})")
    return "\n\n".join(parts) if parts else "_No reproduced tables yet: run `make tables`._"


def update(readme: Path, results: Path) -> bool:
    text = readme.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{readme} lacks the markers {START} / {END}")
    new = text[: text.index(START) + len(START)] + "\n" + section(results) + "\n" + text[text.index(END):]
    if new != text:
        readme.write_text(new)
    return new != text


if __name__ == "__main__":
    changed = update(REPO_ROOT / "README.md", REPO_ROOT / "results")
    print("README.md results section " + ("updated" if changed else "already up to date"), file=sys.stderr)
