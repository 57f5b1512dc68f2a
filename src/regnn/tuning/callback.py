"""The Hydra callback of experiment=tune: resume a killed study, then the finalists, best.yaml, the final runs and
the listing once the search ends."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from regnn.config.request import TrainRequest, kept_overrides, override_key
from regnn.runs import claim
from regnn.paths import REPO_ROOT
from regnn.errors import ConfigError
from regnn.tuning.space import matching, search_space
from regnn.tuning.study import open_study

from regnn.tuning.finalists import DEFAULT_TRIAL, complete_states, check_tune, finalist_stage, run_finalists
from regnn.tuning.report import listing, render
from regnn.tuning.settings import FREE_OVERRIDES, configured_value, space_json, tuned_settings, write_best

log = logging.getLogger("regnn")


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
        fixed = sorted(o for o in config.hydra.overrides.task if not o.startswith(FREE_OVERRIDES))
        space, _ = search_space(s.params, list(config.hydra.overrides.task))
        stored = study.user_attrs.get("overrides")
        if stored is None:
            for key, value in {
                "overrides": fixed,
                "seeds": int(config.tune.seeds),
                "sampler_seed": s.sampler.get("seed"),
                "search_space": space_json(space),
            }.items():
                study.set_user_attr(key, value)
            OmegaConf.save(config, sweep / "multirun.yaml")
            # trial 0 is the configured setting (conf/tuned, conf/protocol, the model's defaults): the search
            # starts from it, so its best is never below the starting point on validation
            start, drawn = {}, []
            for name, dist in space.items():
                inside, value = matching(dist, configured_value(config, name))
                start.update({name: value} if inside else {})
                drawn += [] if inside else [name]
            if not study.trials and start:
                study.enqueue_trial(start)
                if drawn:
                    log.warning("tune: trial 0 draws %s (no configured value in the searched range)", ", ".join(drawn))
        elif stored != fixed:
            raise ConfigError(
                f"{sweep} holds a study tuned with other overrides ({' '.join(stored)}; now "
                f"{' '.join(fixed)}); resume it with the same ones, or set hydra.sweep.dir to a new "
                "folder for a new study"
            )
        elif study.user_attrs.get("search_space", space_json(space)) != space_json(space):
            old = study.user_attrs["search_space"]
            changed = sorted(k for k in {*old, *space} if old.get(k) != space_json(space).get(k))
            raise ConfigError(
                f"{sweep} holds a study with another search space (changed: {', '.join(changed)}); "
                "resume it with the same hydra.sweeper.params, or set hydra.sweep.dir to a new folder "
                "for a new study"
            )
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            study.tell(t.number, state=optuna.trial.TrialState.FAIL)  # left by a killed tune
            log.warning("tune: trial %d was interrupted (marked failed); it is not repeated as such", t.number)
        done = len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
        todo = max(0, int(config.tune.trials) - done)
        log.info(
            "tune: %s, %d of %d trials finished, %d to go (study %s)", sweep, done, config.tune.trials, todo, s.storage
        )
        with read_write(config.hydra.sweeper), open_dict(config.hydra.sweeper):
            config.hydra.sweeper.n_trials = todo
            if s.sampler.get("seed") is not None:  # a resumed sampler must not draw the first trials' settings again
                config.hydra.sweeper.sampler.seed = int(s.sampler.seed) + len(study.trials)

    @staticmethod
    def _finish(config: DictConfig) -> None:
        sweep = Path(config.hydra.sweep.dir)
        s = config.hydra.sweeper
        study = open_study(s.storage, s.study_name)
        complete = study.get_trials(deepcopy=False, states=(complete_states(),))
        if not complete:
            raise ConfigError(f"{sweep}: no trial finished, nothing to choose")
        number, how = run_finalists(config, study, sweep)
        chosen = next(t for t in complete if t.number == number)
        choices = config.hydra.runtime.choices
        base = tuned_settings(choices)
        # the keys a searched layout needs (conf/layout/tune_<backbone>.yaml), for the runs with the best setting
        layout = f"tune_{choices.get('backbone')}"
        defaults = [f"/layout/{layout}"] if (REPO_ROOT / "conf" / "layout" / f"{layout}.yaml").is_file() else []
        path = write_best(
            sweep,
            chosen.params,
            base,
            how + ("; the configured setting" if number == DEFAULT_TRIAL and finalist_stage(study) else ""),
            defaults,
        )
        log.info("tune: chosen trial %d (%s): %s -> %s", number, how, chosen.params, path)
        runs = int(config.tune.final_runs)
        if runs > 0:
            # searched keys come from best.yaml (a search range given on the command line must not reach train.py)
            cmd = final_request(config.hydra.overrides.task, chosen.params, runs, sweep, number).command(
                REPO_ROOT / "train.py"
            )
            log.info("tune: training %d runs with the chosen setting: %s", runs, " ".join(cmd[1:]))
            subprocess.run(cmd, check=True)
        frame, notes = listing(sweep)
        render(frame, notes, sweep, "tune", f"Tuning on validation: {config.dataset.name}_{config.model.name}")
        for n in notes:
            log.info("tune: %s", n)
        claim.release(sweep, CLAIM)


def final_request(overrides, searched, runs: int, sweep: Path, number: int) -> TrainRequest:
    """train.py with the chosen setting (tuned=best from the sweep), the tune's other overrides (threads, device:
    as the trials; the searched keys come from best.yaml: a search range must not reach train.py; the final runs
    use the dataset's split, not the tune's folds)."""
    keep = kept_overrides(
        overrides, own=("experiment", "tune.", "runs", "folds"), keys={override_key(k) for k in searched}
    )
    return TrainRequest(
        keep,
        {"runs": runs, "resume": True},
        out_dir=sweep / f"final_trial_{number}",
        config_dir=sweep,
        tuned="best",
    )


CLAIM = ".tune.pid"  # one tune per study: a second one would mark the first one's running trial as interrupted
