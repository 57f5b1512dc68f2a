"""train.py from Python (a notebook, a script of one's own): the same configs, composed with Hydra's compose API,
trained by the same pipeline.

    import regnn
    out = regnn.run(["dataset=custom", "dataset.path=/data/shops", "model=re_gcn", "runs=3"])
    out.summary["metrics"]["test_micro_f1"]     # {"mean": ..., "std": ...}
    out.run_dir                                 # results.json, runs/run_XX/model.pt, ... as train.py writes them

One cell per call (a sweep is train.py -m). The run folder is `run_dir=`, else conf/hydra's default under
outputs/; the log goes to its train.log and, where nothing else shows regnn's log, to the notebook.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from regnn.paths import REPO_ROOT


@dataclass
class Trained:
    summary: dict  # the cell's results.json
    run_dir: Path
    config: object  # the resolved DictConfig it trained with


def compose(overrides=()):
    """The config train.py would run with these overrides (Hydra's compose API), its hydra node included."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    import regnn.config  # noqa: F401  (the resolvers conf/ uses)

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3", job_name="train"):
        return hydra_compose("train", overrides=list(overrides), return_hydra_config=True)


def run(overrides=(), run_dir: str | Path | None = None) -> Trained:
    """Trains the cell train.py would train with `overrides` into run_dir; returns its summary and folder."""
    from omegaconf import OmegaConf, open_dict

    from regnn.pipeline import train

    cfg = compose(overrides)
    out = Path(run_dir if run_dir is not None else cfg.hydra.run.dir).resolve()
    with open_dict(cfg):
        del cfg["hydra"]
    OmegaConf.resolve(cfg)
    out.mkdir(parents=True, exist_ok=True)
    log = logging.getLogger("regnn")
    handlers = [logging.FileHandler(out / "train.log")]
    if not log.handlers and not logging.getLogger().handlers:
        handlers.append(logging.StreamHandler(sys.stderr))
    level = log.level
    for h in handlers:
        h.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
        log.addHandler(h)
    log.setLevel(logging.INFO)
    try:
        summary = train(cfg, out)
    finally:
        for h in handlers:
            log.removeHandler(h)
            h.close()
        log.setLevel(level)
    return Trained(summary, out, cfg)
