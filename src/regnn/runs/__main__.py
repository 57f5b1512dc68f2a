"""Past cells: python -m regnn.runs list [--root outputs] [--graph NAME] [--model NAME] [--json]
             python -m regnn.runs best [--root outputs] [--graph NAME] [--json]

list: every finished cell with its graph, model, date, runs, validation and test Micro-F1 (mean ± std);
best: per graph, the cell with the highest mean validation Micro-F1 (test never chooses).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from regnn.paths import REPO_ROOT
from regnn.runs.listing import best, cells, table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m regnn.runs", description=__doc__.split("\n\n")[-1])
    ap.add_argument("what", choices=("list", "best"))
    ap.add_argument("--root", default=str(REPO_ROOT / "outputs"), help="where to look (default: outputs/)")
    ap.add_argument("--graph", help="only this graph's cells")
    ap.add_argument("--model", help="only this model's cells")
    ap.add_argument("--json", action="store_true", help="the rows as JSON instead of a table")
    a = ap.parse_args(argv)
    root = Path(a.root).resolve()
    if not root.is_dir():
        print(f"error: --root {root} is not a folder; give the outputs folder train.py wrote", file=sys.stderr)
        return 2
    found, unreadable = cells(root)
    found = [c for c in found if (a.graph in (None, c.graph)) and (a.model in (None, c.model))]
    if a.what == "best":
        found = list(best(found).values())
    if a.json:
        print(json.dumps([asdict(c) | {"folder": str(c.folder)} for c in found], indent=1))
    elif found:
        print(table(found, root))
    if not found:
        print(f"no finished cell under {root}" + (f" for {a.graph or ''} {a.model or ''}".rstrip()), file=sys.stderr)
    if unreadable:
        print(f"{unreadable} results.json under {root} could not be read as a cell's summary", file=sys.stderr)
    return 0 if found else 1


if __name__ == "__main__":
    raise SystemExit(main())
