"""The listing of a tune: every trial, the finalists' scores, how the setting was chosen and what its final runs
scored (<sweep>/tune.{csv,md}; `python -m regnn.tuning <sweep> --out PREFIX` writes it again)."""

from __future__ import annotations

import argparse
import json
import logging
import math
from pathlib import Path

import pandas as pd

from regnn.errors import ConfigError
from regnn.runs import io_safe
from regnn.reporting.collect import refuse_existing, write_table
from regnn.tuning.study import open_study, study_names

from regnn.tuning.finalists import DEFAULT_TRIAL, TUNE_ALPHA, decided_order, decision, finalist_stage, read_finalists
from regnn.tuning.settings import plain_value

log = logging.getLogger("regnn")


def listing(sweep: Path) -> tuple[pd.DataFrame, list[str]]:
    """Every trial of the study (the finalists first, in the order of the choice, then the others by search score)
    and notes with the choice and the final runs' scores."""
    storage = f"sqlite:///{(sweep / 'study.db').resolve()}"
    names = study_names(storage)
    if len(names) != 1:
        raise ConfigError(f"{sweep / 'study.db'} holds {len(names)} studies; expected the one of its tune")
    study = open_study(storage, names[0])
    stage = finalist_stage(study)
    found = read_finalists(sweep, stage["trials"]) if stage else {}
    df = pd.DataFrame([_trial_row(sweep, t, found, stage) for t in study.get_trials(deepcopy=False)])
    # ties keep trial order, as Optuna's best_trial (the first of the best) does
    rank = {n: i for i, n in enumerate(decided_order(found))}
    df["_rank"] = [rank.get(n, len(rank)) for n in df.trial]
    df["_score"] = [-v if v is not None and not math.isnan(v) else math.inf for v in df.val_micro_f1]
    df = df.sort_values(["_rank", "_score", "trial"], kind="stable").drop(columns=["_rank", "_score"])
    df = df.reset_index(drop=True)
    done = df[df.state == "complete"]
    attrs = study.user_attrs
    notes = [
        f"{len(done)} finished trials; search score: mean validation Micro-F1 over {attrs.get('seeds')} seed(s) "
        "per trial (test is only listed, never used by the search or the choice); TPE sampler, seed "
        f"{attrs.get('sampler_seed')}; overrides: {' '.join(attrs.get('overrides', []))}."
    ]
    notes += _validation_note(sweep)
    if not len(done):
        return df, notes
    try:
        number = _choice_notes(study, sweep, stage, found, notes)
    except ConfigError as e:
        if not stage:
            raise
        return df, [*notes, str(e) + "."]  # a tune stopped in its finalist stage: what there is so far
    notes += _final_note(sweep, number)
    return df, notes


def _validation_note(sweep: Path) -> list[str]:
    """How many validation nodes every score stands on (a finished trial's split sizes)."""
    for res in sorted(sweep.glob("trial_*/results.json")):
        sizes = (io_safe.read_json(res, io_safe.is_cell_summary) or {}).get("split_sizes")
        if sizes and sizes.get("val") and sizes.get("folds"):
            k, pool = sizes["folds"], sizes["train"] + sizes["val"]
            return [
                f"Every validation score averages {k} folds of the {pool} training and validation nodes (a "
                f"run validates on one fold, about {sizes['val']} nodes; a trial's {k} runs on all {pool}); "
                f"test {sizes['test']}, never used by the search."
            ]
        if sizes and sizes.get("val"):
            return [
                f"Every validation score stands on the same {sizes['val']} validation nodes (one node more or "
                f"less correct moves a run's score by {100 / sizes['val']:.2f} points); training "
                f"{sizes['train']}, test {sizes['test']}."
            ]
    return []


def _trial_row(sweep: Path, t, found: dict, stage) -> dict:
    res = sweep / f"trial_{t.number}" / "results.json"
    finished = res.exists() and t.state.name == "COMPLETE"  # an interrupted trial may have written its results
    test = json.loads(res.read_text())["metrics"]["test_micro_f1"]["mean"] if finished else None
    f = found.get(t.number, {})
    return {
        "trial": t.number,
        "state": t.state.name.lower(),
        "val_micro_f1": t.value,
        "test_micro_f1": test,
        **({"finalist_val_micro_f1": f.get("mean"), "finalist_val_std": f.get("std")} if stage else {}),
        **{k: plain_value(v) for k, v in t.params.items()},
    }


def _choice_notes(study, sweep: Path, stage, found: dict, notes: list[str]) -> int:
    """Appends how the setting was chosen to `notes`; returns the chosen trial (ConfigError: not chosen yet)."""
    number, how, _ = decision(study, sweep)
    if not stage:
        notes.append(f"Chosen: {how}.")
        return number
    notes.append(
        f"Finalists: the best trials by search score and trial 0 (the configured setting), "
        f"{len(stage['trials'])} in all, each trained again with {stage['seeds']} new seeds (seeds "
        f"{stage['seed']}-{stage['seed'] + stage['seeds'] - 1}); the highest mean validation Micro-F1 "
        "on those seeds is chosen (ties: the lower trial number), and replaces the configured setting "
        f"only if its gain over it, seed by seed, passes a one-sided paired t-test at {TUNE_ALPHA:g} shared "
        "among the searched finalists (Bonferroni): a tune with several finalists leaves a setting that is "
        "as good as any no more often than a tune with one."
    )
    best = study.best_trial.number
    if number == DEFAULT_TRIAL:
        said = how if how.startswith("trial 0, the configured setting") else f"the configured setting, {how}"
        notes.append(f"Chosen: {said}: no searched setting beat it on the new seeds.")
    else:
        d = found.get(DEFAULT_TRIAL)
        notes.append(
            f"Chosen: {how}"
            + (
                f"; the configured setting (trial 0) scored {d['mean']:.2f} ± {d['std']:.2f} there"
                if d and d["mean"] is not None
                else ""
            )
            + "."
        )
    if best != number and best in found and found[best]["mean"] is not None:
        notes.append(
            f"The search's best, trial {best} (search score {study.best_value:.2f}), scored "
            f"{found[best]['mean']:.2f} ± {found[best]['std']:.2f} on the new seeds."
        )
    return number


def _final_note(sweep: Path, number: int) -> list[str]:
    final = sweep / f"final_trial_{number}" / "results.json"
    if not final.exists():
        return []
    r = json.loads(final.read_text())
    m = r["metrics"]
    return [
        f"Chosen setting (trial {number}), {r['runs']} runs: validation Micro-F1 "
        f"{m['val_micro_f1']['mean']:.2f} ± {m['val_micro_f1']['std']:.2f}, test Micro-F1 "
        f"{m['test_micro_f1']['mean']:.2f} ± {m['test_micro_f1']['std']:.2f}, test Macro-F1 "
        f"{m['test_macro_f1']['mean']:.2f} ± {m['test_macro_f1']['std']:.2f}."
    ]


def render(df: pd.DataFrame, notes: list[str], out_dir: Path, name: str, title: str) -> None:
    shown = df.map(lambda v: f"{v:.4g}" if isinstance(v, float) else v)
    write_table(df, shown, out_dir, name, title, notes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep_dir")
    ap.add_argument("--out", help="also write the listing to OUT.csv and OUT.md (never over an existing file)")
    a = ap.parse_args(argv)
    sweep = Path(a.sweep_dir)
    if not (sweep / "study.db").exists():
        print(f"error: {sweep} holds no tune (study.db missing); run python train.py -m experiment=tune ...")
        return 1
    try:
        df, notes = listing(sweep)
    except ConfigError as e:
        print(f"error: {e}")
        return 1
    if a.out:
        out = Path(a.out)
        error = refuse_existing(out)
        if error:
            print(error)
            return 1
        render(df, notes, out.parent, out.name, f"Tuning on validation: {sweep.name}")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print("\n".join(notes))
    return 0
