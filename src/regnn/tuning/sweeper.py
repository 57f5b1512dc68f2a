"""A Hydra sweeper on Optuna's own API: a seeded sampler, a study in a storage (SQLite), trials launched through the
configured Hydra launcher. Selected by `override /hydra/sweeper: optuna_study` (conf/hydra/sweeper/optuna_study.yaml;
the class Hydra instantiates is hydra_plugins.regnn_sweeper.OptunaStudySweeper, since Hydra only instantiates
sweepers found under the hydra_plugins package).

    python train.py -m experiment=tune dataset=acm model=re_gcn 'model.hidden=choice(64,256)'

The search space is hydra.sweeper.params, then the command line's overrides, in Hydra's override grammar
(regnn.tuning.space lists how each sweep becomes an Optuna distribution).

Each trial is a study.ask() (an enqueued trial first), launched in batches of n_jobs through hydra/launcher=...
(basic, joblib, submitit), then told the job's return value; a job that raised, or returned something that is no
number, fails its trial (and stops the sweep beyond max_failure_rate), a NaN return fails it quietly. A trial's job
number (hydra.job.num) is its Optuna trial number, so `hydra.sweep.subdir: trial_${hydra.job.num}` names its folder
after the trial, the same across resumptions of the study.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from regnn.errors import ConfigError
from regnn.tuning.space import override_value, search_space
from regnn.tuning.study import make_sampler, open_study

log = logging.getLogger(__name__)


class OptunaSweeper(Sweeper):
    """The sweep loop (see the module docstring); hydra_plugins.regnn_sweeper registers it with Hydra."""

    def __init__(
        self,
        sampler: Any = None,
        direction: str = "minimize",
        storage: str | None = None,
        study_name: str | None = None,
        n_trials: int = 20,
        n_jobs: int = 1,
        max_failure_rate: float = 0.0,
        params: Any = None,
    ) -> None:
        if direction not in ("minimize", "maximize"):
            raise ConfigError(f"hydra.sweeper.direction={direction}: minimize or maximize")
        if int(n_jobs) < 1 or int(n_trials) < 0 or not 0.0 <= float(max_failure_rate) <= 1.0:
            raise ConfigError(
                f"hydra.sweeper: n_jobs={n_jobs} (>= 1), n_trials={n_trials} (>= 0), "
                f"max_failure_rate={max_failure_rate} (0 to 1)"
            )
        self.sampler_config, self.direction, self.storage, self.study_name = sampler, direction, storage, study_name
        self.n_trials, self.n_jobs, self.max_failure_rate = int(n_trials), int(n_jobs), float(max_failure_rate)
        self.params = params
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.launcher = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context = config, hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            config=config, hydra_context=hydra_context, task_function=task_function
        )

    def sweep(self, arguments: list[str]) -> list:
        import optuna

        space, fixed = search_space(self.params, arguments)
        Path(self.config.hydra.sweep.dir).mkdir(parents=True, exist_ok=True)
        if str(self.storage or "").startswith("sqlite:///"):  # SQLite creates the file, not its folder
            Path(self.storage.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        study = open_study(
            self.storage,
            self.study_name,
            create=True,
            direction=self.direction,
            sampler=make_sampler(self.sampler_config),
        )
        log.info(
            "Optuna study %s in %s: %d trials to run, %d at a time; searching %s",
            study.study_name,
            self.storage,
            self.n_trials,
            self.n_jobs,
            ", ".join(space) or "nothing",
        )
        returns, left = [], self.n_trials
        while left > 0:
            trials = [study.ask(space) for _ in range(min(self.n_jobs, left))]
            left -= len(trials)
            failures = []
            for group in _consecutive(trials):
                batch = [(*fixed, *(f"{k}={override_value(t.params[k])}" for k in space)) for t in group]
                try:
                    self.validate_batch_is_legal(batch)
                    # job number = trial number: trial k's folder is trial_k whatever ran before
                    rets = self.launcher.launch(batch, initial_job_idx=group[0].number)
                except BaseException as e:  # a bad override, an interrupt: the trials not told yet failed
                    for t in trials:
                        study.tell(t, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
                    log.error(
                        "trials %s stopped (%s): marked failed",
                        ", ".join(str(t.number) for t in group),
                        type(e).__name__,
                    )
                    raise
                returns.append(rets)
                failures += _tell(study, group, rets)
            if failures and len(failures) / len(trials) > self.max_failure_rate:
                log.error(
                    "%d of %d trials of the batch failed (max_failure_rate=%s)",
                    len(failures),
                    len(trials),
                    self.max_failure_rate,
                )
                failures[0][0].return_value  # re-raises the first failure with its own traceback
                raise failures[0][1]  # a return value that is no number
        complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if complete:
            best = study.best_trial
            log.info("best of %d finished trials: trial %d, %s %s", len(complete), best.number, best.value, best.params)
        return returns


def _tell(study, group: list, rets: list) -> list[tuple]:
    """Tells the study each trial's value, or that it failed; returns the failures as (job return, exception)."""
    import optuna

    failures = []
    for t, ret in zip(group, rets):
        try:
            value = float(ret.return_value)  # a failed job raises its exception here
        except Exception as e:  # noqa: BLE001
            study.tell(t, state=optuna.trial.TrialState.FAIL)
            log.warning("trial %d failed: %s: %s", t.number, type(e).__name__, e)
            failures.append((ret, e))
            continue
        done = study.tell(t, value)
        log.info("trial %d: %s %s", t.number, done.state.name.lower(), value)
    return failures


def _consecutive(trials: list) -> list[list]:
    """The trials in runs of consecutive numbers (one launch each, so that a job's number is its trial's)."""
    groups: list[list] = []
    for t in sorted(trials, key=lambda t: t.number):
        if groups and t.number == groups[-1][-1].number + 1:
            groups[-1].append(t)
        else:
            groups.append([t])
    return groups
