"""A Hydra sweeper on Optuna's own API: a seeded sampler, a study in a storage (SQLite), trials launched through the
configured Hydra launcher. Selected by `override /hydra/sweeper: optuna_study` (conf/hydra/sweeper/optuna_study.yaml;
the class Hydra instantiates is hydra_plugins.regnn_sweeper.OptunaStudySweeper, since Hydra only instantiates
sweepers found under the hydra_plugins package).

    python train.py -m experiment=tune dataset=acm model=re_gcn 'model.hidden=choice(64,256)'

The search space is hydra.sweeper.params, then the command line's overrides (a later one for the same key wins; a
plain value fixes the key and removes it from the search), in Hydra's override grammar:

    interval(a, b)             FloatDistribution(a, b)            (Hydra's intervals are real-valued: a <= x <= b)
    tag(log, interval(a, b))   FloatDistribution(a, b, log=True)
    range(a, b, s)             IntDistribution(first, last, step=|s|), the values Hydra's range lists (b excluded);
                               with a float start, stop or step: FloatDistribution(first, last, step=|s|)
    tag(log, range(a, b))      IntDistribution(first, last, log=True)   (step 1 only, as Optuna requires)
    choice(x, y, ...) or x,y   CategoricalDistribution((x, y, ...))     (plain values: str, int, float, bool)

Each trial is a study.ask() (an enqueued trial first), launched in batches of n_jobs through hydra/launcher=...
(basic, joblib, submitit), then told the job's return value; a job that raised, or returned something that is no
number, fails its trial (and stops the sweep beyond max_failure_rate), a NaN return fails it quietly. A trial's job
number (hydra.job.num) is its Optuna trial number, so `hydra.sweep.subdir: trial_${hydra.job.num}` names its folder
after the trial, the same across resumptions of the study.
"""
from __future__ import annotations

import contextlib
import logging
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, Override, RangeSweep
from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from regnn.errors import ConfigError

log = logging.getLogger(__name__)
_TAGS = {"log"}


def _parser() -> OverridesParser:
    return OverridesParser.create()


def _parse(line: str) -> Override:
    try:
        return _parser().parse_override(line)
    except Exception as e:  # noqa: BLE001 (Hydra's grammar errors: one line naming the override)
        raise ConfigError(f"{line!r} is no override Hydra can parse: {e}") from None


def distribution(override: Override):
    """The Optuna distribution of one sweep override (see the module docstring for the grammar)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    line, sweep = override.input_line, override.value()
    tags = set(getattr(sweep, "tags", ()) or ())
    if tags - _TAGS:
        raise ConfigError(f"{line}: unknown tag {', '.join(sorted(tags - _TAGS))}; the sweeper knows tag(log, ...)")
    log_scale = "log" in tags
    if getattr(sweep, "shuffle", False):
        raise ConfigError(f"{line}: shuffle() means nothing to a search; give the values with choice() or range()")
    try:
        if isinstance(sweep, IntervalSweep):
            return FloatDistribution(float(sweep.start), float(sweep.end), log=log_scale)
        if isinstance(sweep, RangeSweep):
            values = list(override.sweep_iterator())
            if not values:
                raise ConfigError(f"{line}: an empty range")
            step = abs(sweep.step)
            if all(isinstance(v, int) for v in values) and isinstance(step, int):
                if log_scale and step != 1:
                    raise ConfigError(f"{line}: a log-scaled range needs step 1 (Optuna's rule)")
                return IntDistribution(min(values), max(values), log=log_scale, step=step)
            if log_scale:
                raise ConfigError(f"{line}: a log-scaled range of floats; use tag(log, interval(a, b))")
            return FloatDistribution(float(min(values)), float(max(values)), step=float(step))
        if isinstance(sweep, ChoiceSweep):
            if log_scale:
                raise ConfigError(f"{line}: tag(log, ...) applies to interval() and range(), not to choice()")
            bad = [v for v in sweep.list if not isinstance(v, (str, int, float, bool))]
            if bad:
                raise ConfigError(f"{line}: choices must be plain values (str, int, float, bool), not {bad[0]!r}")
            return CategoricalDistribution(list(sweep.list))
    except ValueError as e:  # Optuna's checks of the bounds (low > high, log with low <= 0, ...)
        raise ConfigError(f"{line}: {e}") from None
    raise ConfigError(f"{line}: {type(sweep).__name__} cannot be searched; use interval(), range() or choice()")


def search_space(params: Mapping[str, Any] | None, arguments: Sequence[str]) -> tuple[dict, list[str]]:
    """({parameter: distribution}, [fixed override lines]) from hydra.sweeper.params and then the command line.

    A key's last override wins (keys compare without Hydra's +/++/~ prefixes); searched keys keep the position of
    their first mention, which fixes the order in which the sampler draws them. Nested params are flattened:
    `hydra.sweeper.params.model.hidden='choice(16,32)'` makes {model: {hidden: ...}}, the key model.hidden."""
    lines = [f"{k}={v}" for k, v in _flat(params or {})] + list(arguments)
    entries: dict[str, tuple[str, Any]] = {}  # bare key -> (parameter name | None, distribution | fixed line)
    for line in lines:
        o = _parse(line)
        name = o.get_key_element()
        bare = name.lstrip("+~")
        if o.is_sweep_override():
            entries[bare] = (name, distribution(o))
        else:
            entries.pop(bare, None)  # a fixed key goes after every searched one, in command-line order
            entries[bare] = (None, o.input_line)
    space = {name: d for name, d in entries.values() if name is not None}
    fixed = [line for name, line in entries.values() if name is None]
    return space, fixed


def _flat(params: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for k, v in params.items():
        if isinstance(v, Mapping):
            out += _flat(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return out


def override_value(value: Any) -> str:
    """`value` as the right-hand side of a Hydra override that parses back to it (strings quoted where needed)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if not isinstance(value, str):
        raise ConfigError(f"{value!r}: the sweeper passes plain values only (str, int, float, bool)")
    for text in (value, "'" + re.sub(r"(\\*)('|$)", lambda m: m.group(1) * 2 + ("\\'" if m.group(2) else ""),
                                      value) + "'"):
        try:
            o = _parser().parse_override(f"k={text}")
        except Exception:  # noqa: BLE001 (not this spelling; try the quoted one)
            continue
        if not o.is_sweep_override() and o.value() == value and isinstance(o.value(), str):
            return text
    raise ConfigError(f"{value!r} cannot be written as a Hydra override value")


def matching(dist, value: Any) -> tuple[bool, Any]:
    """(True, the value as `dist` holds it) where `value` lies in the distribution, else (False, None): where an
    enqueued setting may start a study."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if isinstance(dist, CategoricalDistribution):
        for c in dist.choices:  # 64 is choice 64 (and 64.0), but True is not 1 and "64" is not 64
            if c == value and isinstance(c, bool) == isinstance(value, bool) and isinstance(c, str) == isinstance(
                    value, str):
                return True, c
        return False, None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False, None
    if isinstance(dist, IntDistribution):
        if float(value).is_integer() and dist.low <= value <= dist.high and (int(value) - dist.low) % dist.step == 0:
            return True, int(value)
        return False, None
    if isinstance(dist, FloatDistribution) and dist.low <= value <= dist.high:
        if dist.step is None or abs((value - dist.low) / dist.step - round((value - dist.low) / dist.step)) < 1e-8:
            return True, float(value)
    return False, None


@contextlib.contextmanager
def _readable(storage: str):
    """A storage whose tables an older Optuna wrote (2.x) is refused in one line saying how to upgrade it, instead of
    Optuna's traceback."""
    import optuna

    try:
        yield
    except RuntimeError as e:
        found = re.search(r"table schema \(set up by optuna ([^)]+)\)", str(e))
        if found is None:
            raise
        where = storage.removeprefix("sqlite:///")
        if "storage upgrade" in str(e):
            raise ConfigError(
                f"{where} was written by Optuna {found.group(1)}, which Optuna {optuna.__version__} cannot read as "
                f"it is: upgrade it in place with `optuna storage upgrade --storage {storage}` (copy it first to "
                "keep the old one), or set hydra.sweep.dir to a new folder for a new study") from None
        raise ConfigError(f"{where} was written by Optuna {found.group(1)}, newer than this Optuna "
                          f"{optuna.__version__}: install that version, or set hydra.sweep.dir to a new "
                          "folder") from None


def open_study(storage: str, name: str, *, create: bool = False, direction: str | None = None, sampler=None):
    """The study `name` in `storage` (created where `create` and missing)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with _readable(storage):
        if create:
            return optuna.create_study(study_name=name, storage=storage, sampler=sampler, direction=direction,
                                       load_if_exists=True)
        return optuna.load_study(study_name=name, storage=storage, sampler=sampler)


def study_names(storage: str) -> list[str]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with _readable(storage):
        return optuna.get_all_study_names(storage)


def make_sampler(config: Mapping[str, Any] | None):
    """The sampler of hydra.sweeper.sampler: its keys are TPESampler's arguments (seed, n_startup_trials, ...), or
    another sampler's with `_target_: optuna.samplers.<Name>` (which Hydra has built already, with the sweeper)."""
    from hydra.utils import instantiate
    from optuna.samplers import BaseSampler

    if isinstance(config, BaseSampler):
        return config
    conf = OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else dict(config or {})
    conf.setdefault("_target_", "optuna.samplers.TPESampler")
    return instantiate(conf)


class OptunaSweeper(Sweeper):
    """The sweep loop (see the module docstring); hydra_plugins.regnn_sweeper registers it with Hydra."""

    def __init__(self, sampler: Any = None, direction: str = "minimize", storage: str | None = None,
                 study_name: str | None = None, n_trials: int = 20, n_jobs: int = 1, max_failure_rate: float = 0.0,
                 params: Any = None) -> None:
        if direction not in ("minimize", "maximize"):
            raise ConfigError(f"hydra.sweeper.direction={direction}: minimize or maximize")
        if int(n_jobs) < 1 or int(n_trials) < 0 or not 0.0 <= float(max_failure_rate) <= 1.0:
            raise ConfigError(f"hydra.sweeper: n_jobs={n_jobs} (>= 1), n_trials={n_trials} (>= 0), "
                              f"max_failure_rate={max_failure_rate} (0 to 1)")
        self.sampler_config, self.direction, self.storage, self.study_name = sampler, direction, storage, study_name
        self.n_trials, self.n_jobs, self.max_failure_rate = int(n_trials), int(n_jobs), float(max_failure_rate)
        self.params = params
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.launcher = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context = config, hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            config=config, hydra_context=hydra_context, task_function=task_function)

    def sweep(self, arguments: list[str]) -> list:
        import optuna

        space, fixed = search_space(self.params, arguments)
        Path(self.config.hydra.sweep.dir).mkdir(parents=True, exist_ok=True)
        if str(self.storage or "").startswith("sqlite:///"):  # SQLite creates the file, not its folder
            Path(self.storage.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        study = open_study(self.storage, self.study_name, create=True, direction=self.direction,
                           sampler=make_sampler(self.sampler_config))
        log.info("Optuna study %s in %s: %d trials to run, %d at a time; searching %s", study.study_name,
                 self.storage, self.n_trials, self.n_jobs, ", ".join(space) or "nothing")
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
                    log.error("trials %s stopped (%s): marked failed", ", ".join(str(t.number) for t in group),
                              type(e).__name__)
                    raise
                returns.append(rets)
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
            if failures and len(failures) / len(trials) > self.max_failure_rate:
                log.error("%d of %d trials of the batch failed (max_failure_rate=%s)", len(failures), len(trials),
                          self.max_failure_rate)
                failures[0][0].return_value  # re-raises the first failure with its own traceback
                raise failures[0][1]  # a return value that is no number
        complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if complete:
            best = study.best_trial
            log.info("best of %d finished trials: trial %d, %s %s", len(complete), best.number, best.value,
                     best.params)
        return returns


def _consecutive(trials: list) -> list[list]:
    """The trials in runs of consecutive numbers (one launch each, so that a job's number is its trial's)."""
    groups: list[list] = []
    for t in sorted(trials, key=lambda t: t.number):
        if groups and t.number == groups[-1][-1].number + 1:
            groups[-1].append(t)
        else:
            groups.append([t])
    return groups
