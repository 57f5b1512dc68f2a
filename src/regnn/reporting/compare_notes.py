"""What experiment=compare's table says beside the scores: which runs the epoch cap cut off, and whether the
winner's lead over the runner-up is more than the spread of their runs (a one-sided paired t-test over the seeds
both trained, as the tune's finalists are compared: regnn.evaluation.paired)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from regnn.evaluation.paired import ALPHA, beyond_noise, paired_gain, required_t


def max_epochs_of(cell: dict) -> int | None:
    """The cell's trainer.max_epochs (its config.yaml), None where it has none or cannot be read."""
    import yaml

    f = Path(cell["dir"]) / "config.yaml" if cell.get("dir") else None
    try:
        cap = ((yaml.safe_load(f.read_text()) or {}).get("trainer") or {}).get("max_epochs") if f else None
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    return int(cap) if isinstance(cap, int) and not isinstance(cap, bool) else None


def capped(cell: dict) -> dict:
    """How many of the cell's finished runs trained every allowed epoch: the cap, not early stopping, ended them."""
    cap = max_epochs_of(cell)
    runs = [r for r in cell.get("per_run", []) if "failed" not in r]
    n = None if cap is None else sum(1 for r in runs if r.get("epochs", 0) >= cap)
    return {"capped_runs": n, "max_epochs": cap}


def cap_notes(df: pd.DataFrame) -> list[str]:
    out = []
    for _, r in df[df.capped_runs.fillna(0) > 0].iterrows():
        out.append(
            f"Epoch cap: {r.label}: {int(r.capped_runs)} of {int(r.runs)} runs trained all {int(r.max_epochs)} "
            "allowed epochs: the cap ended them, not early stopping, so their scores may be short of what the "
            "model reaches (a larger trainer.max_epochs, or the model's own settings, may score higher)."
        )
    return out


def per_seed(cell: dict) -> dict:
    return {r["seed"]: r["val_micro_f1"] for r in cell.get("per_run", []) if "failed" not in r and "seed" in r}


def lead(df: pd.DataFrame, cells: dict[str, dict]) -> tuple[str | None, bool | None]:
    """(the note on the winner's lead over the runner-up, whether it is more than the runs' spread)."""
    scored = df[df.val_micro_f1_mean.notna()].sort_values("val_micro_f1_mean", ascending=False, kind="stable")
    if len(scored) < 2:
        return None, None
    first, second = scored.iloc[0], scored.iloc[1]
    gain = paired_gain(per_seed(cells.get(first.model, {})), per_seed(cells.get(second.model, {})))
    if gain is None:
        return f"Lead: {first.label} over {second.label}: no seed trained by both, so not tested.", None
    mean, se, n = gain
    beyond = beyond_noise(gain)
    verdict = (
        "more than the spread of the runs"
        if beyond
        else "within the spread of the runs: on this graph the two are not told apart"
    )
    t = "inf" if se == 0 else f"{mean / se:.2f}" if se != float("inf") else "n/a"
    return (
        f"Lead: {first.label} over the runner-up {second.label}: {mean:+.2f} validation Micro-F1, paired over "
        f"{n} seed{'s' * (n != 1)} (t {t}; a one-sided paired t-test at {ALPHA:g} needs "
        f"{required_t(n):.2f}): {verdict}.",
        beyond,
    )


SEPARATION = "separation.json"  # <sweep>/: what compare.until_separated did (regnn.experiments.separate)


def separation_note(sweep) -> list[str]:
    """The table's line on the seeds compare.until_separated added (none without it)."""
    f = Path(sweep) / SEPARATION
    if not f.exists():
        return []
    outcome = json.loads(f.read_text())
    left, limit = outcome["unseparated"], outcome["limit"]
    did = (
        f"seeds were added in {outcome['rounds']} round(s), up to {limit} runs"
        if outcome["rounds"]
        else "no seeds were needed beyond the cells' own"
    )
    told = f"still not separated from the best: {', '.join(left)}" if left else "every model is separated from the best"
    return [f"compare.until_separated={limit}: {did}; {told} (val vs best, paired)."]


def protocol_note(conf: dict) -> list[str]:
    """Which protocol made the table (the sweep's multirun.yaml: compare.tune and its budget); none where the sweep
    is unknown (a pool rendered on its own)."""
    compare = conf.get("compare")
    if not compare:
        return []
    tune = compare.get("tune")
    if not tune:
        return [
            "Protocol: every model with its defaults, untuned (compare.tune=light or true tunes each on validation)."
        ]
    light = str(tune) == "light"
    b = compare.get("light", {}) if light else conf.get("tune", {})
    name = "light tune (compare.tune=light, the same budget for every model)" if light else "tuned (compare.tune=true)"
    return [
        f"Protocol: {name}: each model searched over {b.get('trials')} configurations of {b.get('seeds')} seed(s) "
        f"on validation, its defaults among them; the best {b.get('finalists')} and the defaults trained again on "
        f"{b.get('finalist_seeds')} new seeds and the best of those kept; then the runs above with it."
    ]
