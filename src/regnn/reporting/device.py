"""Markdown for the JSON results of the GPU scripts (scripts/device_check.py, scripts/device_train.py), as
docs/gpu.md shows them (regnn.reporting.readme)."""
from __future__ import annotations

import json
from pathlib import Path

from regnn.reporting.collect import fmt
from regnn.reporting.common import label

# the models whose GPU training the docs show; the files hold every model the script trained
MODELS = ("gcn", "re_gcn")


def _environment(r: dict) -> str:
    return f"{r['device']}, torch {r['torch']}, CUDA {r['cuda']}, DGL: {r['dgl']}"


def device_check(r: dict) -> str:
    err = max(r["max_relative_error_float64"].values())
    t = r["timing_dblp_size_float32"]
    return "\n".join([
        f"{_environment(r)}. Outputs and gradients against a dense float64 reference: largest relative error "
        f"{err:.1e} (tolerance {r['tolerance']:.0e}, {'passed' if r['passed'] else 'FAILED'}).",
        "",
        "| aggregation step at DBLP's size, float32 | forward + backward, ms |",
        "|---|---|",
        f"| plain | {t['plain_fwd_bwd_ms']:.2f} |",
        f"| relation-weighted | {t['relation_weighted_fwd_bwd_ms']:.2f} |",
    ])


def device_train(r: dict) -> str:
    rows = ["| model | runs | test Micro-F1 | test Macro-F1 | ms per epoch (median) |", "|---|---|---|---|---|"]
    for m in MODELS:
        t = (r.get("training") or {}).get(m)
        if not t:
            continue
        x = t["metrics"]
        rows.append(f"| {label(m)} | {t['runs']} | {fmt(x['test_micro_f1']['mean'], x['test_micro_f1']['std'])} | "
                    f"{fmt(x['test_macro_f1']['mean'], x['test_macro_f1']['std'])} | "
                    f"{1000 * x['median_epoch_s']['mean']:.1f} |")
    parity = max((p["max_rel_diff_params"] for p in (r.get("parity") or {}).values()), default=float("nan"))
    return "\n".join([f"{_environment(r)}; {r['dataset'].upper()}, seeds {r['seeds'][0]}-{r['seeds'][-1]}, "
                      "float32, the configured trainer.", "", *rows, "",
                      f"CPU vs GPU, float64 without dropout, {next(iter(r['parity'].values()))['steps']} Adam steps "
                      f"from the same weights: parameters differ by at most {parity:.1e} (relative)."])


def epoch_sums(r: dict) -> str:
    rows = ["| model | sums by index_add_, ms per epoch | sums over sorted segments, ms per epoch |", "|---|---|---|"]
    for m in MODELS:
        if f"{m} sorted" in r:
            rows.append(f"| {label(m)} | {r[f'{m} index_add']['ms_per_epoch']:.1f} | "
                        f"{r[f'{m} sorted']['ms_per_epoch']:.1f} |")
    return "\n".join(rows)


def render_json(path: Path) -> str:
    r = json.loads(Path(path).read_text())
    if "timing_dblp_size_float32" in r:
        return device_check(r)
    if "training" in r:
        return device_train(r)
    return epoch_sums(r)
