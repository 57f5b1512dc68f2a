"""The full-batch job: the data on the device once, the cell's pending runs trained in turn or in worker
processes (regnn.runs.executor), each a whole-graph step per epoch (regnn.training.trainer)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from regnn.evaluation.clustering import cluster_scores
from regnn.pipeline.from_config import build_model, load_data, prepare_inputs, spec_of
from regnn.pipeline.job import CellJob
from regnn.training.trainer import RUN_KEYS
from regnn.pipeline.place import Placement, placement
from regnn.runs.executor import plan_workers, run_in_workers
from regnn.runs.store import CellStore
from regnn.training.progress import CellProgress, Plan
from regnn.training.seed import seed_everything
from regnn.training.trainers import trainer_for

log = logging.getLogger("regnn")

SUMMARY_KEYS = (*RUN_KEYS, "nmi", "ari")  # and the clustering scores


class DeviceGraph:
    """A dataset and a model's inputs on the device, as full-batch training and prediction read them."""

    def __init__(self, cfg: DictConfig, device, t0: float | None = None, data=None, model_spec=None):
        """data: the dataset already loaded (a benchmark timing several models on it), else cfg.dataset's;
        model_spec: cfg.model read already (the job's), else read here."""
        self.cfg, self.device = cfg, device
        t0 = time.perf_counter() if t0 is None else t0
        self.data = data = load_data(cfg.dataset) if data is None else data
        self.load_s = time.perf_counter() - t0
        # read once, for this dataset: every run's model is built from it
        self.model_spec = spec_of(cfg.model if model_spec is None else model_spec, data)
        self.inputs = prepare_inputs(self.model_spec, data, device)
        self.feats = {t: x.to(device) for t, x in data.features.items()}
        self.labels = data.labels.to(device)
        self.splits = {s: i.to(device) for s, i in data.splits.items()}

    def build(self, seed: int):
        """The model of seed `seed` on the device: seeded first, so a seed always draws the same weights."""
        seed_everything(seed, self.cfg.deterministic)
        return self.model()

    def model(self):
        """A new model on the device, drawn from the random state as it is."""
        return build_model(self.model_spec, self.data, self.inputs).to(self.device)

    def trainer(self):
        """The model's trainer (regnn.training.trainers): fit(model, inputs, features, labels, splits, ...)."""
        return trainer_for(self.model_spec.arch)


class FullBatchJob(CellJob):
    """The full-batch job of one cell (pipeline.job.CellJob)."""

    summary_keys = SUMMARY_KEYS
    workers, worker_threads, peak_gb = 1, None, 0.0
    pending: tuple[int, ...] = ()  # in a worker process: the runs the cell's workers were handed

    def __init__(self, cfg: DictConfig, store: CellStore, place: Placement, *, worker: bool = False):
        """worker: this job's copy in a worker process, which trains the runs it is handed (quiet)."""
        super().__init__(cfg, store, place, quiet=worker)
        self.worker = worker

    def prepare(self):
        self.graph = DeviceGraph(self.cfg, self.device, self.t0, model_spec=self.model_spec)
        return self.graph.data

    def build(self):
        return self.graph.model()  # seeded by the job

    def fit(self, model, run: int, seed: int, checkpoint):
        g = self.graph
        splits = g.splits if self.spec.folds is None else {s: i.to(self.device) for s, i in self.splits_of(run).items()}
        cell = (
            self.progress_of(1, worker=True) if self.worker else getattr(self, "progress", None) or self.progress_of(1)
        )
        progress = cell.run(run)
        try:
            return g.trainer()(
                model,
                g.inputs,
                g.feats,
                g.labels,
                splits,
                seed=seed,
                options=self.training,
                on_epoch=self.logger.log_epoch,
                progress=progress,
                checkpoint=checkpoint,
            )
        finally:
            progress.close()

    def progress_of(self, runs: int, worker: bool = False) -> CellProgress:
        """The progress of the runs this process trains (regnn.training.progress); a worker's as log lines, which
        reach the main process's log."""
        s = self.spec
        plan = Plan(
            runs,
            self.max_epochs(),
            self.training.stop_rule().epochs_after_best,
            s.runs,
            self.workers if worker else 1,
            self.pending if worker else (),
        )
        mode = "lines" if worker and s.progress != "off" else s.progress
        return CellProgress(self.label, plan, mode, s.progress_interval_s)

    def record_extras(self, result, model) -> dict:
        c, data = self.spec.clustering, self.data
        if not c.enabled or result.embeddings is None:
            return {}
        test = data.splits["test"]
        return cluster_scores(
            result.embeddings[test].numpy(),
            data.labels[test].numpy(),
            data.num_classes,
            repeats=c.repeats,
            n_init=c.n_init,
            seed=c.seed,
        )

    def describe(self, rec: dict) -> tuple[str, str]:
        clustering = f" NMI {rec['nmi']:.2f} ARI {rec['ari']:.2f}" if "nmi" in rec else ""
        return f"test Micro-F1 {rec['test_micro_f1']:.2f} Macro-F1 {rec['test_macro_f1']:.2f}{clustering}", ""

    def max_epochs(self):
        return None if self.model_spec.arch == "metapath2vec" else super().max_epochs()

    def before_runs(self, pending: list[int]) -> set[int]:
        """Plans the worker processes; with more than one, they train every pending run now."""
        self.workers, self.worker_threads = plan_workers(
            self.spec, self.device, len(pending), self.threads, self.data.graph.num_edges()
        )
        torch.set_num_threads(self.worker_threads)  # the runs trained here use what a worker would
        self.progress = self.progress_of(1 if self.workers > 1 else len(pending), worker=self.workers > 1)
        wt = self.worker_threads
        if self.workers > 1:  # independent runs side by side, one process each at a time; they write runs/run_XX/
            self.counted(self.build())  # the model's size is logged before the workers' lines
            log.info(
                "%d runs in %d worker processes of %d thread%s each", len(pending), self.workers, wt, "s" * (wt > 1)
            )
            self.peak_gb = run_in_workers(
                self.store.dir,
                pending,
                self.workers,
                wt,
                _worker_setup,
                (self.store.config, str(self.store.dir), self.workers, tuple(pending)),
                _worker_run,
            )
            return set(pending)
        if pending and wt != self.threads:
            log.info("each run uses %d thread%s, as the other runs of this cell", wt, "s" * (wt > 1))
        return set()

    def environment(self) -> dict:
        return {"threads": self.worker_threads, "workers": self.workers}

    def more_facts(self) -> dict:
        return {"worker_peak_gb": self.peak_gb}


# -- one worker process of run_in_workers: the job is set up once, then trains the runs it is handed ----------
def _worker_setup(plain_cfg: dict, out_dir: str, workers: int = 1, pending: tuple = ()) -> FullBatchJob:
    store = CellStore(plain_cfg, Path(out_dir))
    job = FullBatchJob(OmegaConf.create(plain_cfg), store, placement(store.spec, worker=True), worker=True)
    # the cell's worker processes (this one among them) and the runs they were handed: its progress lines' cell time
    job.workers, job.pending = workers, tuple(pending)
    job.setup()
    return job


def _worker_run(job: FullBatchJob, run: int) -> None:
    job.train_one(run)
