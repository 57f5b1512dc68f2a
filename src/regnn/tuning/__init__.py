"""Validation-based tuning: regnn's Optuna sweeper (sweeper.py, its search space in space.py and its study in
study.py; TPE, seeded) over conf/experiment/tune.yaml, made resumable (callback.py), the finalist stage
(finalists.py), the listing (report.py) and a best setting that train.py takes back (settings.py).

    python train.py -m experiment=tune dataset=counts model=re_gcn dataset.feature_norm=standard
    python -m regnn.tuning outputs/tune/counts_re_gcn --out results/tune_counts_re_gcn   (the listing, again)

Every trial trains `tune.seeds` runs and returns their mean validation Micro-F1 (train.py's return value); test
scores are only read back for the listing, never by the search. The study lives in <sweep dir>/study.db:

- on start (TuneCallback.on_multirun_start), trials a killed tune left running are marked failed, and the sweeper
  is asked only for the trials still missing (tune.trials counts the study's finished ones); the settings of a
  study are fixed by its first tune (a resumed one with other overrides or another search space is refused,
  nothing is mixed);
- trial 0 is the configured setting (what train.py would run without the tune; a key whose configured value lies
  outside its searched range is drawn instead), then TPE's; trial k trains in <sweep dir>/trial_k (k: Optuna's
  trial number, which the sweeper gives the trial's job as hydra.job.num);
- at the end (on_multirun_end) the finalists, the `tune.finalists` best trials by search score and trial 0 (always),
  are trained again with `tune.finalist_seeds` new seeds (seed + 1000, ...: none of the search's or the final runs')
  in <sweep dir>/finalist_trial_<k>, each from its trial's config.yaml; the one with the best mean validation
  Micro-F1 there is chosen (ties: the lower trial number, so trial 0 before any other), unless its gain over trial
  0 on the same seeds does not pass a one-sided paired t-test at 5%, shared among the searched finalists
  (Bonferroni): then trial 0 is kept. The best of many estimates
  from a few seeds on a small validation set is mostly a lucky one: its own score overstates it, fresh seeds do
  not. tune.finalists=0 chooses the search's best trial instead;
- the chosen setting is written to <sweep dir>/tuned/best.yaml, a conf/tuned-style file
  (`python train.py --config-dir <sweep dir> tuned=best dataset=... model=...`), then `tune.final_runs` runs are
  trained with it in <sweep dir>/final_trial_<k> (k: the chosen trial), and <sweep dir>/tune.{csv,md} lists every
  trial (the finalists first, in the order of the choice) with the finalists' scores and the final validation and
  test scores.

Finished finalists and final runs are kept when a tune is run again (resume=true), so a tune killed in its
finalist stage resumes there.
"""

import importlib

# name -> the module that defines it; imported on first use, so that Hydra's plugin scan, which imports the sweeper
# (hydra_plugins.regnn_sweeper) on every start of train.py, does not import the training pipeline with it
_EXPORTS = {
    "TuneCallback": "callback",
    **dict.fromkeys(
        (
            "DEFAULT_TRIAL",
            "FINALIST_SEED_OFFSET",
            "TUNE_ALPHA",
            "check_tune",
            "choice_order",
            "choose",
            "decided_order",
            "decision",
            "paired_gain",
            "pick_finalists",
            "read_finalists",
            "train_finalist",
        ),
        "finalists",
    ),
    **dict.fromkeys(("listing", "main", "render"), "report"),
    **dict.fromkeys(("tuned_groups", "tuned_settings", "write_best"), "settings"),
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'regnn.tuning' has no attribute {name!r}")
    return getattr(importlib.import_module(f"regnn.tuning.{_EXPORTS[name]}"), name)
