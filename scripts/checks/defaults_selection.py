"""Choose `dataset=custom` defaults on validation: one table from several scripts/checks/defaults_check.py outputs.

Each input is a defaults_check JSON (one generated graph, one setting given as its --set overrides, one or more
models). Per model and setting: validation and test Micro-F1 on every graph, the mean validation score over the
graphs, and the runs at chance; the chosen setting has the best validation mean over every model and graph
(test scores are shown, never used). Writes <out>.md and <out>.json; refuses to overwrite them.

    python scripts/checks/defaults_check.py --models gat,re_gat --runs 3 --graph <g> --set model.residual=true --out <f>
    python scripts/checks/defaults_selection.py results/defaults_selection_gat/*.json --out results/defaults_selection_gat
"""  # noqa: E501  (usage lines kept whole, to be copied as they are)

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def setting_of(doc: dict) -> str:
    return " ".join(doc["overrides"]) or "(no overrides)"


def collect(paths: list[Path]) -> dict:
    """{model: {setting: {graph: row}}} from the defaults_check outputs."""
    table: dict = {}
    for p in paths:
        doc = json.loads(p.read_text())
        for row in doc["models"]:
            cell = table.setdefault(row["model"], {}).setdefault(setting_of(doc), {})
            graph = f"{doc['graph']['generator'].rsplit('.', 1)[-1]}({doc['graph']['kwargs']})"
            if graph in cell:
                raise SystemExit(f"{p}: {row['model']} with `{setting_of(doc)}` on {graph} is in two inputs")
            cell[graph] = row | {"source": p.name}
    return table


def choose(table: dict) -> tuple[str, dict]:
    """The setting with the best mean validation score over every model and graph it was run on (a setting
    must cover every model's graphs to compete)."""
    settings = set.intersection(*(set(by_setting) for by_setting in table.values()))
    graphs = {m: set.intersection(*(set(table[m][s]) for s in settings)) for m in table}
    score = {
        s: float(np.mean([table[m][s][g]["val_micro_f1_mean"] for m in table for g in sorted(graphs[m])]))
        for s in settings
    }
    return max(sorted(score), key=lambda s: score[s]), score


TITLE = "`dataset=custom` defaults chosen on validation"


def markdown(table: dict, chosen: str, score: dict, title: str = TITLE) -> str:
    lines = [
        f"# {title}",
        "",
        "`python scripts/checks/defaults_selection.py` over `scripts/checks/defaults_check.py` outputs (each: "
        "one generated or built-in graph, one setting, its seeds); the choice reads the validation columns only. "
        "A run is at chance when its test Micro-F1 is within 5 of the largest test class's share; s/epoch: one "
        "training step and its evaluation on one thread, median over the runs.",
        "",
    ]
    for model, by_setting in table.items():
        lines += [
            f"## {model}",
            "",
            "| setting | graph | val Micro-F1 | test Micro-F1 | runs at chance | s/epoch |",
            "|---|---|---|---|---|---|",
        ]
        for s in sorted(by_setting):
            for g, r in sorted(by_setting[s].items()):
                lines.append(
                    f"| `{s}` | `{g}` | {r['val_micro_f1_mean']:.2f} ± {r['val_micro_f1_std']:.2f} | "
                    f"{r['test_micro_f1_mean']:.2f} ± {r['test_micro_f1_std']:.2f} | "
                    f"{r['runs_at_chance']} of {r['runs']} | "
                    + (f"{r['epoch_time_s']:.3f} |" if r.get("epoch_time_s") is not None else "- |")
                )
        lines.append("")
    lines += [
        "## Mean validation Micro-F1 over every model and graph",
        "",
        "| setting | mean val Micro-F1 |",
        "|---|---|",
    ]
    for s in sorted(score, key=lambda s: -score[s]):
        lines.append(f"| `{s}`{' (chosen)' if s == chosen else ''} | {score[s]:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", type=Path, help="defaults_check JSON outputs")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--title", default=TITLE, help="the table's title")
    a = ap.parse_args(argv)
    for f in (a.out.with_suffix(".md"), a.out.with_suffix(".json")):
        if f.exists():
            raise SystemExit(f"{f} exists; move it away or pass another --out (results are never overwritten)")
    table = collect(a.inputs)
    chosen, score = choose(table)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".md").write_text(markdown(table, chosen, score, a.title))
    a.out.with_suffix(".json").write_text(
        json.dumps({"chosen": chosen, "mean_val_micro_f1": score, "inputs": [p.name for p in a.inputs]}, indent=1)
    )
    print(f"chosen: {chosen} (mean validation Micro-F1 {score[chosen]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
