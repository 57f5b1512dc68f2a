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
- at the end (on_multirun_end) the best trial's setting is written to <sweep dir>/tuned/best.yaml, a
  conf/tuned-style file (`python train.py --config-dir <sweep dir> tuned=best dataset=... model=...`), then
  `tune.final_runs` runs are trained with it in <sweep dir>/final_trial_<k> (k: the best trial), and
  <sweep dir>/tune.{csv,md} lists every trial with the final validation and test scores.
"""
from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from regnn import claim
from regnn.config import REPO_ROOT
from regnn.errors import ConfigError
from regnn.io_safe import write_text
from regnn.reporting.collect import refuse_existing, write_table
from regnn.sweeper import matching, open_study, search_space, study_names

log = logging.getLogger("regnn")
# overrides that may change between a tune and its resumption (how long and where it runs, not what it computes)
_FREE = ("experiment=", "tune.trials=", "tune.final_runs=", "hydra.", "threads=", "workers=", "device=")


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


def tuned_settings(name: str, tuned_dir: Path = REPO_ROOT / "conf" / "tuned") -> dict:
    """conf/tuned/<name>.yaml with its defaults list merged in (the settings a trial starts from), or {}."""
    path = tuned_dir / f"{name}.yaml"
    if not path.is_file():
        return {}
    own = OmegaConf.load(path)
    order = list(own.pop("defaults", [])) or ["_self_"]
    if "_self_" not in order:
        order.append("_self_")
    merged = OmegaConf.create()
    for entry in order:
        part = own if entry == "_self_" else OmegaConf.create(tuned_settings(str(entry), tuned_dir))
        merged = OmegaConf.merge(merged, part)
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
        best = open_study(s.storage, s.study_name).best_trial
        choices = config.hydra.runtime.choices
        base: dict = {}
        for group in ("tuned/backbone", "tuned/relation", "tuned"):  # the order of conf/train.yaml
            if choices.get(group):
                base = OmegaConf.to_container(OmegaConf.merge(base, tuned_settings(
                    choices[group], REPO_ROOT / "conf" / group)))
        # the keys a searched layout needs (conf/layout/tune_<backbone>.yaml), for the runs with the best setting
        layout = f"tune_{choices.get('backbone')}"
        defaults = [f"/layout/{layout}"] if (REPO_ROOT / "conf" / "layout" / f"{layout}.yaml").is_file() else []
        path = write_best(sweep, best.params, base, best.value, best.number, defaults)
        log.info("tune: best trial %d, validation Micro-F1 %.2f: %s -> %s", best.number, best.value,
                 best.params, path)
        runs = int(config.tune.final_runs)
        if runs > 0:
            # searched keys come from best.yaml (a search range given on the command line must not reach train.py)
            searched = {k.lstrip("+~") for k in best.params}
            keep = [o for o in config.hydra.overrides.task if not o.startswith(("experiment=", "tune.", "runs="))
                    and o.split("=", 1)[0].lstrip("+~") not in searched]  # threads, device: as the trials
            cmd = [sys.executable, str(REPO_ROOT / "train.py"), "--config-dir", str(sweep), "tuned=best", *keep,
                   f"runs={runs}", "resume=true", f"hydra.run.dir={sweep / f'final_trial_{best.number}'}"]
            log.info("tune: training %d runs with the best setting: %s", runs, " ".join(cmd[1:]))
            subprocess.run(cmd, check=True)
        frame, notes = listing(sweep)
        render(frame, notes, sweep, "tune", f"Tuning on validation: {config.dataset.name}_{config.model.name}")
        for n in notes:
            log.info("tune: %s", n)
        claim.release(sweep, CLAIM)


CLAIM = ".tune.pid"  # one tune per study: a second one would mark the first one's running trial as interrupted


def write_best(sweep: Path, params: dict, base: dict, value: float, number: int, defaults: list | None = None) -> Path:
    """<sweep>/tuned/best.yaml: the settings the trials started from (conf/tuned) with the best trial's on top."""
    merged = OmegaConf.to_container(OmegaConf.merge(base, _nested({k: _plain(v) for k, v in params.items()})))
    if defaults:
        merged = {"defaults": [*defaults, "_self_"], **merged}
    path = sweep / "tuned" / "best.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, f"# @package _global_\n# Best of the tune in {sweep} by mean validation Micro-F1 ({value:.2f}, "
                    f"trial {number}).\n#   python train.py --config-dir {sweep} tuned=best ...   (or copy it into "
                    "conf/tuned/)\n" + yaml.safe_dump(merged, sort_keys=True))
    return path


def listing(sweep: Path) -> tuple[pd.DataFrame, list[str]]:
    """Every trial of the study (best validation first) and notes with the final runs' scores."""
    storage = f"sqlite:///{(sweep / 'study.db').resolve()}"
    names = study_names(storage)
    if len(names) != 1:
        raise ConfigError(f"{sweep / 'study.db'} holds {len(names)} studies; expected the one of its tune")
    study = open_study(storage, names[0])
    rows = []
    for t in study.get_trials(deepcopy=False):
        res = sweep / f"trial_{t.number}" / "results.json"
        finished = res.exists() and t.state.name == "COMPLETE"  # an interrupted trial may have written its results
        test = json.loads(res.read_text())["metrics"]["test_micro_f1"]["mean"] if finished else None
        rows.append({"trial": t.number, "state": t.state.name.lower(), "val_micro_f1": t.value,
                     "test_micro_f1": test, **{k: _plain(v) for k, v in t.params.items()}})
    # ties keep trial order, as Optuna's best_trial (the first of the best) does
    df = pd.DataFrame(rows).sort_values("val_micro_f1", ascending=False, na_position="last", kind="stable")
    df = df.reset_index(drop=True)
    done = df[df.state == "complete"]
    attrs = study.user_attrs
    notes = [f"{len(done)} finished trials; objective: mean validation Micro-F1 over {attrs.get('seeds')} seed(s) "
             "per trial (test is only listed, never used by the search); TPE sampler, seed "
             f"{attrs.get('sampler_seed')}; overrides: {' '.join(attrs.get('overrides', []))}."]
    best = study.best_trial.number if len(done) else None
    final = sweep / f"final_trial_{best}" / "results.json"
    if final.exists():
        m = json.loads(final.read_text())["metrics"]
        runs = json.loads(final.read_text())["runs"]
        notes.append(f"Best setting (trial {best}), {runs} runs: validation Micro-F1 "
                     f"{m['val_micro_f1']['mean']:.2f} ± {m['val_micro_f1']['std']:.2f}, test Micro-F1 "
                     f"{m['test_micro_f1']['mean']:.2f} ± {m['test_micro_f1']['std']:.2f}, test Macro-F1 "
                     f"{m['test_macro_f1']['mean']:.2f} ± {m['test_macro_f1']['std']:.2f}.")
    return df, notes


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
