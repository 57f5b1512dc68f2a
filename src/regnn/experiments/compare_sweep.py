"""experiment=compare (conf/experiment/compare.yaml): every model on one graph the same way, one table and one figure.

- Each model is one cell of a Hydra multirun (any launcher), resumed like every experiment's cells.
- compare.tune=true: a cell first tunes its model on validation (`experiment=tune` in <cell>/tune/, the model's
  search space, no final runs), then trains `runs` runs with the best setting (tuned=best) into the cell itself.
  Both steps run train.py in a subprocess and resume: a finished study is not searched again, a finished cell is
  skipped.
- CompareCallback.on_multirun_start times a few epochs of each model not trained yet and prints the estimates
  (estimate.py); with compare.budget the models that would not fit are skipped (their cells train nothing).
- CompareCallback.on_multirun_end renders <sweep>/compare.{csv,md,png} (regnn.reporting.compare).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from regnn.config import graph_folder, validate
from regnn.config.request import TrainRequest, kept_overrides
from regnn.experiments import estimate
from regnn.paths import REPO_ROOT
from regnn.errors import ConfigError, RegnnError
from regnn.reporting.compare import ESTIMATES, default_archive, read_estimates, render, sweep_models
from regnn.training.progress import Position

log = logging.getLogger("regnn")
# keys of the compare command that the tune and the tuned training set themselves
OWN = ("experiment", "compare.", "tune.", "runs", "resume", "hydra.")


def tune_budget(cfg: DictConfig) -> dict[str, int]:
    """The tune's trials, seeds per trial, finalists and their seeds: compare.light's with compare.tune=light, else
    the tune node's."""
    src = cfg.compare.light if str(cfg.compare.tune) == "light" else cfg.tune
    return {k: int(src[k]) for k in ("trials", "seeds", "finalists", "finalist_seeds")}


def tuned_requests(cfg: DictConfig, out_dir: Path, overrides: list[str]) -> list[tuple[str, TrainRequest]]:
    """The two train.py commands of a tuned cell: the tune (out_dir/tune), then the runs with its best setting."""
    keep = kept_overrides(overrides, own=OWN)
    tune_dir = Path(out_dir) / "tune"
    tune = TrainRequest(
        keep,
        {f"tune.{k}": v for k, v in tune_budget(cfg).items()} | {"tune.final_runs": 0},
        out_dir=tune_dir,
        experiment="tune",
        multirun=True,
    )
    best = TrainRequest(
        keep, {"runs": int(cfg.runs), "resume": True}, out_dir=Path(out_dir), config_dir=tune_dir, tuned="best"
    )
    return [("tune", tune), ("train with the best setting", best)]


def tuned_cell(cfg: DictConfig, out_dir: Path, overrides: list[str]) -> dict:
    """Tunes cfg's model on validation in out_dir/tune, then trains cfg.runs runs with the best setting in out_dir;
    returns the cell's summary (results.json)."""
    from regnn.pipeline import check

    check(cfg)  # a model this graph cannot train is refused here, in one line, before any tuning
    for what, request in tuned_requests(cfg, out_dir, overrides):
        cmd = request.command(REPO_ROOT / "train.py")
        log.info("compare: %s: %s", what, " ".join(cmd[1:]))
        if subprocess.run(cmd, cwd=REPO_ROOT).returncode != 0:
            raise ConfigError(
                f"compare.tune: the {what} step of {Path(out_dir).name} failed (its log is above); "
                "the same command again resumes it"
            )
    return json.loads((Path(out_dir) / "results.json").read_text())


def skipped(cfg: DictConfig, sweep: Path) -> str | None:
    """Why compare.budget skips this cell's model (None: it trains)."""
    row = read_estimates(sweep).get(str(cfg.model.name), {})
    return row.get("reason") if row.get("status") == "skipped" else None


def position(cfg: DictConfig, sweep: Path) -> Position | None:
    """The cell's place among the comparison's models, and the estimates of the pending models after it."""
    rows = read_estimates(sweep)
    models = list(rows)
    name = str(cfg.model.name)
    if name not in rows:
        return None
    k = models.index(name)
    after = [
        r.get("expected_s") or r.get("estimate_s") for r in list(rows.values())[k + 1 :] if r.get("status") == "pending"
    ]
    known = [a for a in after if a is not None]
    return Position(f"model {k + 1}/{len(models)}", sum(known) if known else None)


def _composer(config: DictConfig):
    """model -> the job config the sweep runs for it (Hydra's compose, inside the running app)."""
    from hydra import compose

    task = [o for o in config.hydra.overrides.task if not o.lstrip("+~").startswith("model=")]

    def of(model: str) -> DictConfig:
        return compose(config_name=config.hydra.job.config_name, overrides=[*task, f"model={model}"])

    return of


def more_seeds(config: DictConfig, sweep: Path) -> None:
    """compare.until_separated: the unseparated models' cells extended (regnn.experiments.separate); the outcome is
    kept in <sweep>/separation.json for the table. Never on the shared pool's Table 2 cells."""
    limit = config.compare.get("until_separated")
    if not limit:
        return
    dataset = str(config.dataset.name)
    if not config.compare.tune and dataset in list(config.compare.pooled):
        log.warning("compare.until_separated: %s's cells are the Table 2 cells (10 runs each), not extended", dataset)
        return
    from omegaconf import open_dict

    from regnn.experiments import separate
    from regnn.pipeline import train
    from regnn.reporting.compare_notes import SEPARATION
    from regnn.runs.io_safe import write_text

    compose = _composer(config)

    def train_more(model: str, runs: int) -> None:
        cfg = compose(model)
        with open_dict(cfg):
            cfg.runs, cfg.resume = runs, True
        train(cfg, sweep / f"{dataset}_{model}")

    outcome = separate.extend(sweep, dataset, sweep_models(config), int(limit), train_more)
    write_text(sweep / SEPARATION, json.dumps(outcome | {"limit": int(limit)}, indent=1) + "\n")


class CompareCallback(Callback):
    """Prints each model's estimated time before the cells train; renders the comparison once every cell of the
    sweep has run (or been skipped or refused)."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        if not config.compare.get("estimate", True):
            Path(config.hydra.sweep.dir, ESTIMATES).unlink(missing_ok=True)  # an earlier sweep's budget skips nothing
            return
        try:  # Hydra turns a callback's exception into a warning: the command must fail, in one line
            validate(config)  # a bad value or a missing file: before anything is timed
            estimate.estimate_sweep(config, sweep_models(config), _composer(config))
        except RegnnError as e:
            print(e, file=sys.stderr)
            raise SystemExit(2) from e

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        sweep = Path(config.hydra.sweep.dir)
        try:
            more_seeds(config, sweep)
            written = render(
                sweep,
                str(config.dataset.name),
                sweep_models(config),
                archive=default_archive(str(config.dataset.name), sweep),
                graph=graph_folder(config.dataset),
            )
        except Exception as e:  # noqa: BLE001 (Hydra would turn it into a warning; the command must fail)
            log.error("compare: %s", e)
            raise SystemExit(1) from e
        for w in written:
            log.info("compare: wrote %s", w)
