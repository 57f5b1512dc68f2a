"""experiment=compare (conf/experiment/compare.yaml): every model on one graph the same way, one table and one figure.

- Each model is one cell of a Hydra multirun (any launcher), resumed like every experiment's cells.
- compare.tune=true: a cell first tunes its model on validation (`experiment=tune` in <cell>/tune/, the model's
  search space, no final runs), then trains `runs` runs with the best setting (tuned=best) into the cell itself.
  Both steps run train.py in a subprocess and resume: a finished study is not searched again, a finished cell is
  skipped.
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

from regnn.config import graph_folder
from regnn.paths import REPO_ROOT
from regnn.errors import ConfigError
from regnn.reporting.compare import default_archive, render, sweep_models

log = logging.getLogger("regnn")
# overrides of the compare command that the tune and the tuned training set themselves
_OWN = ("experiment=", "compare.", "tune.", "runs=", "resume=", "hydra.")


def tuned_cell(cfg: DictConfig, out_dir: Path, overrides: list[str]) -> dict:
    """Tunes cfg's model on validation in out_dir/tune, then trains cfg.runs runs with the best setting in out_dir;
    returns the cell's summary (results.json)."""
    from regnn.pipeline import check

    check(cfg)  # a model this graph cannot train is refused here, in one line, before any tuning
    out_dir = Path(out_dir)
    keep = [o for o in overrides if not o.lstrip("+~").startswith(_OWN)]
    train_py = [sys.executable, str(REPO_ROOT / "train.py")]
    tune_dir = out_dir / "tune"
    steps = [
        (
            "tune",
            [
                *train_py,
                "-m",
                "experiment=tune",
                *keep,
                f"tune.trials={cfg.tune.trials}",
                f"tune.seeds={cfg.tune.seeds}",
                "tune.final_runs=0",
                f"hydra.sweep.dir={tune_dir}",
            ],
        ),
        (
            "train with the best setting",
            [
                *train_py,
                "--config-dir",
                str(tune_dir),
                "tuned=best",
                *keep,
                f"runs={cfg.runs}",
                "resume=true",
                f"hydra.run.dir={out_dir}",
            ],
        ),
    ]
    for what, cmd in steps:
        log.info("compare: %s: %s", what, " ".join(cmd[1:]))
        if subprocess.run(cmd, cwd=REPO_ROOT).returncode != 0:
            raise ConfigError(
                f"compare.tune: the {what} step of {out_dir.name} failed (its log is above); "
                "the same command again resumes it"
            )
    return json.loads((out_dir / "results.json").read_text())


class CompareCallback(Callback):
    """Renders the comparison once every cell of the sweep has run (or been skipped or refused)."""

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        sweep = Path(config.hydra.sweep.dir)
        try:
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
