"""The cells of a validation search (conf/experiment/search_baselines.yaml), best validation Micro-F1 first.

    python -m regnn.reporting.search outputs/experiments/search/imdb_rgcn
    python -m regnn.reporting.search outputs/experiments/search/dblp_re_gat --out results/search_dblp_re_gat

--out PREFIX also writes the listing as PREFIX.csv and PREFIX.md (never over an existing file).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from regnn.runs.io_safe import read_json
from regnn.reporting.collect import refuse_existing, write_table


def load_results(exp_dir) -> list[dict]:
    """Every results.json directly below exp_dir (one per grid cell), in name order."""
    out = []
    for p in sorted(Path(exp_dir).glob("*/results.json")):
        r = read_json(p)
        if r is None or (r.get("failed_runs") and not r.get("metrics")):  # cut short, or every run diverged
            continue
        r["_dir"] = str(p.parent)
        out.append(r)
    return out


def search_frame(exp_dir) -> pd.DataFrame:
    rows = []
    for r in load_results(exp_dir):
        m = r["metrics"]
        rows.append(
            {
                "cell": r["_dir"].rsplit("/", 1)[-1],
                "runs": r["runs"],
                **{
                    k: m[k]["mean"]
                    for k in ("val_micro_f1", "val_macro_f1", "test_micro_f1", "test_macro_f1", "best_epoch")
                },
                "seeds": " ".join(str(s) for s in r.get("seeds", [])),
            }
        )
    df = pd.DataFrame(rows)
    return df if df.empty else df.sort_values(["val_micro_f1", "val_macro_f1"], ascending=False).reset_index(drop=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exp_dir")
    ap.add_argument("--out", help="also write the listing to OUT.csv and OUT.md")
    a = ap.parse_args(argv)
    df = search_frame(a.exp_dir)
    if df.empty:
        print(f"error: no results.json under {a.exp_dir}")
        return 1
    if a.out:
        error = refuse_existing(a.out)
        if error:
            print(error)
            return 1
        out = Path(a.out)
        write_table(
            df,
            df.map(lambda v: f"{v:.2f}" if isinstance(v, float) else v),
            out.parent,
            out.name,
            f"Validation search: {a.exp_dir}",
            ["Cells by mean validation Micro-F1 (then Macro-F1), best first; means over the seeds listed."],
        )
    print(df.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
