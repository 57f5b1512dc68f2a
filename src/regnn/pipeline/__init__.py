"""Training a cell from its config: load data, build models, train `runs` seeds, write results.

train(cfg, out_dir) composes small parts:
- validation (regnn.config): every bad value, and every model x trainer pair that cannot run, refused in one line
  before anything is written;
- the cell store (store.py): the output directory, its claim, resume and extension, the summary;
- the job that trains the cell's runs (job.py: what every run shares, the loop over the runs): full-batch
  (fullbatch.py, runs in turn or in the worker processes of executor.py) or mini-batch (minibatch.py, under
  torchrun too), which give only how a model is built and fitted;
- for GCN-M / GAT-M (model.metapath=best), the meta-path choice (metapath.py): one sub-cell per meta-path,
  each trained through the store like any cell.
from_config.py turns config keys into the model's and loader's arguments.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from regnn.config import validate, validate_minibatch
from regnn.errors import Unsupported
from regnn.pipeline import metapath
from regnn.pipeline.fullbatch import FullBatchJob
from regnn.pipeline.place import placement
from regnn.pipeline.minibatch import MinibatchJob, processes
from regnn.pipeline.from_config import arch_of, build_model, load_data, model_kwargs
from regnn.runs.store import CellStore

__all__ = ["train", "train_cell", "arch_of", "build_model", "load_data", "model_kwargs"]


def train(cfg: DictConfig, out_dir: str | Path) -> dict:
    """Trains cfg.runs models and writes everything under out_dir; returns the summary (also results.json)."""
    check(cfg)
    if metapath.chosen(cfg):  # one sub-cell per meta-path, each a cell of its own; the best one reported
        store = cell_store(cfg, Path(out_dir))
        with store.opened() as done:
            return done if done is not None else metapath.choose(cfg, store, train_cell)
    return train_cell(cfg, Path(out_dir))


def cell_store(cfg: DictConfig, out_dir: Path) -> CellStore:
    """The cell's folder, handed the config resolved into plain data, the only form the layers below the
    pipeline read it in; the store reads how the runs are run from it, once (regnn.runs.jobspec)."""
    return CellStore(OmegaConf.to_container(cfg, resolve=True), out_dir)


def check(cfg: DictConfig) -> None:
    """Raises ConfigError (one line: the value, the reason, the fix) for a config that cannot train."""
    validate(cfg)
    m = cfg.model
    if "metapaths" in m and OmegaConf.select(cfg, "dataset.metapaths", default=None) is None:  # a valid config,
        # but not for this graph: a sweep over models names it in one line and goes on (train.py)
        raise Unsupported(
            f"{m.name} needs meta-paths, and dataset {cfg.dataset.name} defines none: add "
            "dataset.metapaths (name -> relation list), or leave this model out on this graph"
        )
    if cfg.trainer.name == "minibatch":
        from regnn.training.block_inference import EVAL_MODES

        validate_minibatch(cfg, EVAL_MODES)
    if metapath.chosen(cfg):
        metapath.select_runs(cfg)


def train_cell(cfg: DictConfig, out_dir: Path) -> dict:
    """One cell of cfg's trainer through the store: skipped when finished with these settings, else trained."""
    store = cell_store(cfg, out_dir)
    with store.opened() as done:
        if done is not None:
            return done
        place = placement(store.spec)  # processes and device first: the job only takes them
        if cfg.trainer.name == "minibatch":
            place, store = processes(place, store, cfg.trainer.ddp_backend)
            return MinibatchJob(cfg, store, place).run()
        return FullBatchJob(cfg, store, place).run()
