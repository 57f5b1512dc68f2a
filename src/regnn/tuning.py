"""Validation-based tuning: regnn's Optuna sweeper (regnn.sweeper; TPE, seeded) over conf/experiment/tune.yaml,
made resumable, and a best setting that train.py takes back.

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
  0 on the same seeds is within two standard errors of that paired difference: then trial 0 is kept. The best of many estimates
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
from __future__ import annotations

import argparse
import json
import logging
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from regnn.runs import claim
from regnn.paths import REPO_ROOT
from regnn.errors import ConfigError
from regnn.runs import io_safe
from regnn.runs.io_safe import write_text
from regnn.reporting.collect import refuse_existing, write_table
from regnn.sweeper import matching, open_study, search_space, study_names

log = logging.getLogger("regnn")
# overrides that may change between a tune and its resumption (how long and where it runs, not what it computes)
_FREE = ("experiment=", "tune.trials=", "tune.final_runs=", "tune.finalists=", "tune.finalist_seeds=", "hydra.",
         "threads=", "workers=", "device=")
# finalist run i uses seed + FINALIST_SEED_OFFSET + i: seeds that neither the search (seed, seed + 1, ...) nor the
# final runs used, so the finalists' scores carry none of the luck that put them among the finalists
FINALIST_SEED_OFFSET = 1000
DEFAULT_TRIAL = 0  # the configured setting (enqueued first)
# a searched setting replaces the configured one only when its mean validation gain over it, paired by seed, is
# more than this many standard errors of that paired difference (about a one-sided test at 5% for 5 seeds)
PAIRED_MARGIN_SE = 2.0


def _nested(flat: dict) -> dict:
    """{"optimizer.lr": 0.01} -> {"optimizer": {"lr": 0.01}} (a searched key's +/++ prefix dropped)."""
    out: dict = {}
    for key, value in flat.items():
        *parents, leaf = key.lstrip("+").split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def tuned_groups(train_yaml: Path = REPO_ROOT / "conf" / "train.yaml") -> list[str]:
    """The config groups of tuned settings, in the order conf/train.yaml's defaults list merges them (a later one
    wins where two set the same key)."""
    groups = []
    for entry in OmegaConf.to_container(OmegaConf.load(train_yaml).defaults):
        if isinstance(entry, dict):
            group = next(iter(entry)).removeprefix("optional ").strip()
            if group == "tuned" or group.startswith("tuned/"):
                groups.append(group)
    return groups


def tuned_settings(choices, conf: Path = REPO_ROOT / "conf") -> dict:
    """The settings of the tuned files a trial composed (its Hydra choices), merged as its config merged them: the
    settings a trial starts from. A tuned file is settings only (no defaults list: tests/test_config.py)."""
    merged = OmegaConf.create()
    for group in tuned_groups(conf / "train.yaml"):
        path = conf / group / f"{choices.get(group)}.yaml"
        if choices.get(group) and path.is_file():  # the groups are optional: a missing file sets nothing
            merged = OmegaConf.merge(merged, OmegaConf.load(path))
    return OmegaConf.to_container(merged)


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def _configured(config: DictConfig, name: str):
    """The value a searched key has without the tune (a config group: its chosen option), or None."""
    key = name.lstrip("+~")
    choices = config.hydra.runtime.choices
    if key in choices:
        return choices[key]
    value = OmegaConf.select(config, key, default=None)
    return value if isinstance(value, (str, int, float, bool)) else None


def _space_json(space: dict) -> dict:
    from optuna.distributions import distribution_to_json

    return {k: distribution_to_json(d) for k, d in space.items()}


class TuneCallback(Callback):
    """Resumption before the sweep, best setting, final runs and listing after it (see the module docstring)."""

    # Hydra turns a callback's exception into a warning and carries on: a tune that must stop exits instead
    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        try:
            self._resume(config)
        except Exception as e:  # noqa: BLE001 (every failure here must stop the sweep)
            log.error("tune: %s", e)
            raise SystemExit(2) from e

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        try:
            self._finish(config)
        except Exception as e:  # noqa: BLE001
            log.error("tune: %s", e)
            raise SystemExit(1) from e

    @staticmethod
    def _resume(config: DictConfig) -> None:
        import optuna

        check_tune(config.tune)
        sweep = Path(config.hydra.sweep.dir)
        sweep.mkdir(parents=True, exist_ok=True)
        claim.acquire(sweep, CLAIM, "tuned", "wait for it to finish, or set hydra.sweep.dir to another folder")
        s = config.hydra.sweeper
        study = open_study(s.storage, s.study_name, create=True, direction=s.direction)
        fixed = sorted(o for o in config.hydra.overrides.task if not o.startswith(_FREE))
        space, _ = search_space(s.params, list(config.hydra.overrides.task))
        stored = study.user_attrs.get("overrides")
        if stored is None:
            for key, value in {"overrides": fixed, "seeds": int(config.tune.seeds),
                               "sampler_seed": s.sampler.get("seed"), "search_space": _space_json(space)}.items():
                study.set_user_attr(key, value)
            OmegaConf.save(config, sweep / "multirun.yaml")
            # trial 0 is the configured setting (conf/tuned, conf/protocol, the model's defaults): the search
            # starts from it, so its best is never below the starting point on validation
            start, drawn = {}, []
            for name, dist in space.items():
                inside, value = matching(dist, _configured(config, name))
                start.update({name: value} if inside else {})
                drawn += [] if inside else [name]
            if not study.trials and start:
                study.enqueue_trial(start)
                if drawn:
                    log.warning("tune: trial 0 draws %s (no configured value in the searched range)",
                                ", ".join(drawn))
        elif stored != fixed:
            raise ConfigError(f"{sweep} holds a study tuned with other overrides ({' '.join(stored)}; now "
                              f"{' '.join(fixed)}); resume it with the same ones, or set hydra.sweep.dir to a new "
                              "folder for a new study")
        elif study.user_attrs.get("search_space", _space_json(space)) != _space_json(space):
            old = study.user_attrs["search_space"]
            changed = sorted(k for k in {*old, *space} if old.get(k) != _space_json(space).get(k))
            raise ConfigError(f"{sweep} holds a study with another search space (changed: {', '.join(changed)}); "
                              "resume it with the same hydra.sweeper.params, or set hydra.sweep.dir to a new folder "
                              "for a new study")
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            study.tell(t.number, state=optuna.trial.TrialState.FAIL)  # left by a killed tune
            log.warning("tune: trial %d was interrupted (marked failed); it is not repeated as such", t.number)
        done = len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
        todo = max(0, int(config.tune.trials) - done)
        log.info("tune: %s, %d of %d trials finished, %d to go (study %s)", sweep, done, config.tune.trials, todo,
                 s.storage)
        with read_write(config.hydra.sweeper), open_dict(config.hydra.sweeper):
            config.hydra.sweeper.n_trials = todo
            if s.sampler.get("seed") is not None:  # a resumed sampler must not draw the first trials' settings again
                config.hydra.sweeper.sampler.seed = int(s.sampler.seed) + len(study.trials)

    @staticmethod
    def _finish(config: DictConfig) -> None:
        sweep = Path(config.hydra.sweep.dir)
        s = config.hydra.sweeper
        study = open_study(s.storage, s.study_name)
        complete = study.get_trials(deepcopy=False, states=(_complete(),))
        if not complete:
            raise ConfigError(f"{sweep}: no trial finished, nothing to choose")
        number, how = run_finalists(config, study, sweep)
        chosen = next(t for t in complete if t.number == number)
        choices = config.hydra.runtime.choices
        base = tuned_settings(choices)
        # the keys a searched layout needs (conf/layout/tune_<backbone>.yaml), for the runs with the best setting
        layout = f"tune_{choices.get('backbone')}"
        defaults = [f"/layout/{layout}"] if (REPO_ROOT / "conf" / "layout" / f"{layout}.yaml").is_file() else []
        path = write_best(sweep, chosen.params, base, how + ("; the configured setting" if number == DEFAULT_TRIAL and
                                                             finalist_stage(study) else ""), defaults)
        log.info("tune: chosen trial %d (%s): %s -> %s", number, how, chosen.params, path)
        runs = int(config.tune.final_runs)
        if runs > 0:
            # searched keys come from best.yaml (a search range given on the command line must not reach train.py)
            searched = {k.lstrip("+~") for k in chosen.params}
            keep = [o for o in config.hydra.overrides.task if not o.startswith(("experiment=", "tune.", "runs="))
                    and o.split("=", 1)[0].lstrip("+~") not in searched]  # threads, device: as the trials
            cmd = [sys.executable, str(REPO_ROOT / "train.py"), "--config-dir", str(sweep), "tuned=best", *keep,
                   f"runs={runs}", "resume=true", f"hydra.run.dir={sweep / f'final_trial_{number}'}"]
            log.info("tune: training %d runs with the chosen setting: %s", runs, " ".join(cmd[1:]))
            subprocess.run(cmd, check=True)
        frame, notes = listing(sweep)
        render(frame, notes, sweep, "tune", f"Tuning on validation: {config.dataset.name}_{config.model.name}")
        for n in notes:
            log.info("tune: %s", n)
        claim.release(sweep, CLAIM)


CLAIM = ".tune.pid"  # one tune per study: a second one would mark the first one's running trial as interrupted


def write_best(sweep: Path, params: dict, base: dict, how: str, defaults: list | None = None) -> Path:
    """<sweep>/tuned/best.yaml: the settings the trials started from (conf/tuned) with the chosen trial's on top;
    `how` (its header) says which trial it is and why it was chosen."""
    merged = OmegaConf.to_container(OmegaConf.merge(base, _nested({k: _plain(v) for k, v in params.items()})))
    if defaults:
        merged = {"defaults": [*defaults, "_self_"], **merged}
    path = sweep / "tuned" / "best.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, f"# @package _global_\n# Chosen by the tune in {sweep}: {how}.\n#   python train.py --config-dir "
                    f"{sweep} tuned=best ...   (or copy it into conf/tuned/)\n" + yaml.safe_dump(merged, sort_keys=True))
    return path


def check_tune(tune: DictConfig) -> None:
    """Refuses tune.* values no tune can run with, in one line."""
    for key, low in (("trials", 0), ("seeds", 1), ("final_runs", 0), ("finalists", 0), ("finalist_seeds", 1)):
        value = tune.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"tune.{key}={value}: a whole number >= {low}")
    for key in ("seeds", "final_runs"):  # their seeds must stay below the finalists' (seed + 1000, ...)
        if tune[key] > FINALIST_SEED_OFFSET:
            raise ConfigError(f"tune.{key}={tune[key]}: at most {FINALIST_SEED_OFFSET}, so that its seeds stay apart "
                              f"from the finalists' (seed + {FINALIST_SEED_OFFSET}, ...)")


def _complete():
    import optuna

    return optuna.trial.TrialState.COMPLETE


def pick_finalists(scores: dict[int, float], k: int, default: int = DEFAULT_TRIAL) -> list[int]:
    """The k best trials by search score (ties: the lower number first), and `default` after them where it is not
    among them and finished ({trial: score} holds the finished trials)."""
    top = sorted(scores, key=lambda n: (-scores[n], n))[:k]
    return top + [default] if k > 0 and default in scores and default not in top else top


def choice_order(finalists: dict[int, dict]) -> list[int]:
    """The finalists, best first: runs that all finished before any that diverged, then the higher mean validation
    Micro-F1, then the lower trial number (trial 0, the configured setting, wins every tie). A finalist with no
    finished run (mean None) comes last. finalists: {trial: {"mean": float | None, "failed": int, ...}}."""
    def key(n):
        f = finalists[n]
        usable = _scored(f)
        return (not usable, f.get("failed", 0) > 0, -(f["mean"] if usable else 0.0), n)
    return sorted(finalists, key=key)


def _scored(finalist: dict) -> bool:
    """Whether a finalist has a mean validation score (some run finished)."""
    return finalist["mean"] is not None and not math.isnan(finalist["mean"])


def decided_order(finalists: dict[int, dict]) -> list[int]:
    """choice_order with the chosen finalist first (the configured setting where choose keeps it)."""
    order, chosen = choice_order(finalists), choose(finalists)
    return order if chosen is None else [chosen, *(n for n in order if n != chosen)]


def paired_gain(a: dict, b: dict) -> tuple[float, float, int] | None:
    """(mean, standard error, seeds) of finalist a's validation score minus b's over the seeds both finished
    (their "per_seed" scores); None where they share no seed or either lacks per-seed scores."""
    pa, pb = a.get("per_seed"), b.get("per_seed")
    if not pa or not pb:
        return None
    d = [pa[s] - pb[s] for s in pa if s in pb]
    if not d:
        return None
    mean = sum(d) / len(d)
    se = math.inf if len(d) < 2 else math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d))
    return mean, se, len(d)


def beats_default(best: dict, default: dict) -> bool:
    """Whether a searched setting's gain over the configured one on the same seeds exceeds its noise: the mean
    paired difference above PAIRED_MARGIN_SE standard errors of it (one seed: never). Without per-seed scores,
    the higher mean."""
    gain = paired_gain(best, default)
    if gain is None:
        return best["mean"] > default["mean"]
    mean, se, _ = gain
    return mean > 0 and mean > PAIRED_MARGIN_SE * se


def choose(finalists: dict[int, dict]) -> int | None:
    """The chosen finalist, or None where none finished a run: the first of choice_order, unless the configured
    setting (trial 0) is a finalist whose runs all finished and that one's paired gain over it is within the noise
    (beats_default): then the configured setting is kept."""
    order = choice_order(finalists)
    if not order or not _scored(finalists[order[0]]):
        return None
    best, default = order[0], finalists.get(DEFAULT_TRIAL)
    if best != DEFAULT_TRIAL and default is not None and _scored(default) and not default.get("failed"):
        if not beats_default(finalists[best], default):
            return DEFAULT_TRIAL
    return best


def finalist_dir(sweep: Path, number: int) -> Path:
    return sweep / f"finalist_trial_{number}"


def read_finalists(sweep: Path, numbers: list[int]) -> dict[int, dict]:
    """{trial: {"mean", "std", "runs", "failed"}} of the finalists whose runs finished (results.json written)."""
    out = {}
    for n in numbers:
        path = finalist_dir(sweep, n) / "results.json"
        if not path.is_file():
            continue
        res = json.loads(path.read_text())
        val = res["metrics"].get("val_micro_f1")  # absent where every run diverged
        out[n] = {"mean": val["mean"] if val else None, "std": val["std"] if val else None,
                  "runs": res["runs"], "failed": res.get("failed_runs", 0),
                  "per_seed": {r["seed"]: r["val_micro_f1"] for r in res.get("per_run", [])
                               if r.get("val_micro_f1") is not None and "failed" not in r}}
    return out


def train_finalist(config: DictConfig, sweep: Path, number: int, seed: int, runs: int) -> dict:
    """Trains trial `number`'s setting again, exactly as its trial did (its config.yaml) but with `runs` runs from
    `seed`, in finalist_trial_<number>; a finished one is kept (resume), a partly trained one completed."""
    from regnn.pipeline import train

    source = sweep / f"trial_{number}" / "config.yaml"
    if not source.is_file():
        raise ConfigError(f"{source} is missing, so finalist trial {number} cannot be trained again with its setting; "
                          "restore that folder, or set hydra.sweep.dir to a new folder for a new study")
    cfg = OmegaConf.load(source)
    with open_dict(cfg):
        cfg.seed, cfg.runs, cfg.resume = seed, runs, True
        for key in ("threads", "workers", "device"):  # how it runs: as this tune says, like its trials
            cfg[key] = config.get(key)
    return train(cfg, finalist_dir(sweep, number))


def finalist_stage(study) -> dict | None:
    """The finalist stage of a study's last tune ({"trials", "seed", "seeds"}), or None where it had none."""
    stage = study.user_attrs.get("finalists")
    return stage if stage and stage.get("trials") else None


def decision(study, sweep: Path) -> tuple[int, str, dict[int, dict]]:
    """(chosen trial, how it was chosen in words, the finalists' scores) for a study whose finalists trained."""
    best = study.best_trial
    seeds = study.user_attrs.get("seeds")
    searched = f"mean validation Micro-F1 {best.value:.2f} over its {seeds} search seed(s)"
    stage = finalist_stage(study)
    if stage is None:
        return best.number, f"trial {best.number}, the search's best ({searched}; no finalist stage)", {}
    scores = read_finalists(sweep, stage["trials"])
    missing = [n for n in stage["trials"] if n not in scores]
    if missing:
        raise ConfigError(f"{sweep}: finalist trial(s) {', '.join(map(str, missing))} not trained yet; run the tune "
                          "again with the same command to finish them")
    number = choose(scores)
    if number is None:
        log.warning("tune: every finalist run diverged; the search's best trial is chosen")
        return best.number, f"trial {best.number}, the search's best ({searched}; every finalist run diverged)", scores
    f = scores[number]
    how = (f"trial {number}, mean validation Micro-F1 {f['mean']:.2f} ± {f['std']:.2f} over {f['runs']} new seeds "
           f"(seeds {stage['seed']}-{stage['seed'] + stage['seeds'] - 1}), the best of {len(scores)} finalists")
    top = choice_order(scores)[0]
    if number == DEFAULT_TRIAL and top != DEFAULT_TRIAL:
        gain = paired_gain(scores[top], f)
        said = (f"+{gain[0]:.2f} ± {gain[1]:.2f} (standard error) over {gain[2]} seeds" if gain
                else "not measured on shared seeds")
        how = (f"trial 0, the configured setting, kept: the best finalist, trial {top}, gained {said} on the same "
               f"seeds, not more than {PAIRED_MARGIN_SE:g} standard errors")
    return number, how, scores


def run_finalists(config: DictConfig, study, sweep: Path) -> tuple[int, str]:
    """Trains the finalists (tune.finalists > 0) and returns (chosen trial, how it was chosen)."""
    k, runs = int(config.tune.finalists), int(config.tune.finalist_seeds)
    scores = {t.number: t.value for t in study.get_trials(deepcopy=False, states=(_complete(),))}
    numbers = pick_finalists(scores, k)
    seed = int(config.seed) + FINALIST_SEED_OFFSET
    study.set_user_attr("finalists", {"trials": numbers, "seed": seed, "seeds": runs if numbers else 0})
    for i, n in enumerate(numbers):
        log.info("tune: finalist %d of %d: trial %d (search score %.2f), %d runs from seed %d", i + 1, len(numbers),
                 n, scores[n], runs, seed)
        train_finalist(config, sweep, n, seed, runs)
    number, how, found = decision(study, sweep)
    for n in decided_order(found):
        f = found[n]
        shown = "no finished run" if f["mean"] is None else f"{f['mean']:.2f} ± {f['std']:.2f}"
        log.info("tune: finalist trial %d%s: validation Micro-F1 %s over %d new seeds (search score %.2f)", n,
                 " (configured setting)" if n == DEFAULT_TRIAL else "", shown, f["runs"], scores[n])
    if found and number == DEFAULT_TRIAL:
        log.info("tune: chosen: %s", how)
    return number, how


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
    notes = [f"{len(done)} finished trials; search score: mean validation Micro-F1 over {attrs.get('seeds')} seed(s) "
             "per trial (test is only listed, never used by the search or the choice); TPE sampler, seed "
             f"{attrs.get('sampler_seed')}; overrides: {' '.join(attrs.get('overrides', []))}."]
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
        if sizes and sizes.get("val"):
            return [f"Every validation score stands on the same {sizes['val']} validation nodes (one node more or "
                    f"less correct moves a run's score by {100 / sizes['val']:.2f} points); training "
                    f"{sizes['train']}, test {sizes['test']}."]
    return []


def _trial_row(sweep: Path, t, found: dict, stage) -> dict:
    res = sweep / f"trial_{t.number}" / "results.json"
    finished = res.exists() and t.state.name == "COMPLETE"  # an interrupted trial may have written its results
    test = json.loads(res.read_text())["metrics"]["test_micro_f1"]["mean"] if finished else None
    f = found.get(t.number, {})
    return {"trial": t.number, "state": t.state.name.lower(), "val_micro_f1": t.value, "test_micro_f1": test,
            **({"finalist_val_micro_f1": f.get("mean"), "finalist_val_std": f.get("std")} if stage else {}),
            **{k: _plain(v) for k, v in t.params.items()}}


def _choice_notes(study, sweep: Path, stage, found: dict, notes: list[str]) -> int:
    """Appends how the setting was chosen to `notes`; returns the chosen trial (ConfigError: not chosen yet)."""
    number, how, _ = decision(study, sweep)
    if not stage:
        notes.append(f"Chosen: {how}.")
        return number
    notes.append(f"Finalists: the best trials by search score and trial 0 (the configured setting), "
                 f"{len(stage['trials'])} in all, each trained again with {stage['seeds']} new seeds (seeds "
                 f"{stage['seed']}-{stage['seed'] + stage['seeds'] - 1}); the highest mean validation Micro-F1 "
                 "on those seeds is chosen (ties: the lower trial number), and replaces the configured setting "
                 f"only if its gain over it, seed by seed, exceeds {PAIRED_MARGIN_SE:g} standard errors.")
    best = study.best_trial.number
    if number == DEFAULT_TRIAL:
        notes.append(f"Chosen: the configured setting, {how}: no searched setting beat it on the new seeds.")
    else:
        d = found.get(DEFAULT_TRIAL)
        notes.append(f"Chosen: {how}" + (f"; the configured setting (trial 0) scored {d['mean']:.2f} ± "
                                         f"{d['std']:.2f} there" if d and d["mean"] is not None else "") + ".")
    if best != number and best in found and found[best]["mean"] is not None:
        notes.append(f"The search's best, trial {best} (search score {study.best_value:.2f}), scored "
                     f"{found[best]['mean']:.2f} ± {found[best]['std']:.2f} on the new seeds.")
    return number


def _final_note(sweep: Path, number: int) -> list[str]:
    final = sweep / f"final_trial_{number}" / "results.json"
    if not final.exists():
        return []
    r = json.loads(final.read_text())
    m = r["metrics"]
    return [f"Chosen setting (trial {number}), {r['runs']} runs: validation Micro-F1 "
            f"{m['val_micro_f1']['mean']:.2f} ± {m['val_micro_f1']['std']:.2f}, test Micro-F1 "
            f"{m['test_micro_f1']['mean']:.2f} ± {m['test_micro_f1']['std']:.2f}, test Macro-F1 "
            f"{m['test_macro_f1']['mean']:.2f} ± {m['test_macro_f1']['std']:.2f}."]


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


if __name__ == "__main__":
    raise SystemExit(main())
