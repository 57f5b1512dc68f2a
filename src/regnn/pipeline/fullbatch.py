"""The full-batch job: load the data once, train the cell's pending runs (in turn or in worker processes), write
each run and the summary through the cell store."""
from __future__ import annotations

import logging
import time
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from regnn.catalog import arch_name
from regnn.evaluation.clustering import cluster_scores
from regnn.loggers import make_logger
from regnn.runs.executor import job_threads, plan_workers, run_in_workers
from regnn.spec import training_of
from regnn.pipeline.job import run_job, stop_note
from regnn.pipeline.from_config import build_model, device_of, load_data, prepare_inputs
from regnn.runs.resume import checkpoint_of
from regnn.runs.store import CellStore, JobFacts, failed_note, run_record
from regnn.training.divergence import Diverged, failed_record
from regnn.perf import keep_freed_memory
from regnn.training.seed import seed_everything
from regnn.training.trainer import Progress
from regnn.training.trainers import trainer_for

log = logging.getLogger("regnn")
# torch's own thread count (one per core), read before any job sets its own: a multirun process or GCN-M's
# meta-path jobs train again after an earlier job lowered it
DEFAULT_THREADS = torch.get_num_threads()

SUMMARY_KEYS = ("test_micro_f1", "test_macro_f1", "val_micro_f1", "val_macro_f1", "best_epoch", "epochs",
                "train_time_s", "epoch_time_s", "nmi", "ari")


class Job:
    """What every run of a cell shares: the data and the model's inputs on the device."""

    def __init__(self, cfg: DictConfig, device, t0: float | None = None, data=None):
        """data: the dataset already loaded (a benchmark timing several models on it), else cfg.dataset's."""
        self.cfg, self.device = cfg, device
        t0 = time.perf_counter() if t0 is None else t0
        self.data = data = load_data(cfg.dataset) if data is None else data
        self.load_s = time.perf_counter() - t0
        self.inputs = prepare_inputs(cfg.model, data, device)
        self.feats = {t: x.to(device) for t, x in data.features.items()}
        self.labels = data.labels.to(device)
        self.splits = {s: i.to(device) for s, i in data.splits.items()}

    def build(self, seed: int):
        """The model of seed `seed` on the device: seeded first, so a seed always draws the same weights."""
        seed_everything(seed, self.cfg.deterministic)
        return build_model(self.cfg.model, self.data, self.inputs).to(self.device)

    def trainer(self):
        """The model's trainer (regnn.training.trainers): fit(model, inputs, features, labels, splits, ...)."""
        return trainer_for(arch_name(self.cfg.model))


def train_one(job: Job, store: CellStore, run: int, logger, progress: Progress):
    """Trains, scores and saves run `run` (seed cfg.seed + run) in runs/run_XX/; returns (record, result), the
    result None for a run that diverged."""
    cfg, data = job.cfg, job.data
    seed = cfg.seed + run
    model = job.build(seed)
    logger.start_run(run, seed)
    ckpt = checkpoint_of(cfg, store, run)
    try:
        fit = job.trainer()
        result = fit(model, job.inputs, job.feats, job.labels, job.splits, seed=seed, options=training_of(cfg),
                     on_epoch=logger.log_epoch, progress=progress, checkpoint=ckpt)
    except Diverged as e:
        progress.close()
        ckpt.remove()
        return store.save_failed(failed_record(run, seed, e), logger, job.device), None
    rec = run_record(result, run, job.device)
    if cfg.clustering.enabled and result.embeddings is not None:
        test = data.splits["test"]
        rec |= cluster_scores(result.embeddings[test].numpy(), data.labels[test].numpy(), data.num_classes,
                              repeats=cfg.clustering.repeats, n_init=cfg.clustering.n_init,
                              seed=cfg.clustering.seed)
    logger.end_run(rec)
    store.save_run(rec, result, data, cfg.save_embeddings, model=model)
    ckpt.remove()  # the run is finished: results.json holds it
    log.info("run %d/%d seed %d: test Micro-F1 %.2f Macro-F1 %.2f%s (best epoch %d of %d, %.1fs%s)", run + 1,
             cfg.runs, seed, rec["test_micro_f1"], rec["test_macro_f1"],
             f" NMI {rec['nmi']:.2f} ARI {rec['ari']:.2f}" if "nmi" in rec else "", rec["best_epoch"],
             rec["epochs"], rec["train_time_s"],
             stop_note(rec, cfg.trainer.get("max_epochs") if arch_name(cfg.model) != "metapath2vec" else None))
    return rec, result


def run(cfg: DictConfig, store: CellStore) -> dict:
    """Trains cfg.runs models (those not finished earlier) and writes the cell; returns its summary."""
    return run_job(FullBatchJob(cfg, store))


class FullBatchJob:
    """The full-batch job of one cell (pipeline.job.CellJob): the data on the device, runs in turn or side by side
    in worker processes."""

    summary_keys = SUMMARY_KEYS
    is_main = True

    def __init__(self, cfg: DictConfig, store: CellStore):
        self.cfg, self.store = cfg, store
        keep_freed_memory(every_size=True)
        threads = job_threads(cfg)  # the job's CPU budget
        if threads:
            torch.set_num_threads(threads)
        self.threads = threads or DEFAULT_THREADS
        self.device, self.why = device_of(cfg)
        self.label = label = f"{cfg.model.name} on {cfg.dataset.name}"
        log.info("%s: device %s, %d threads, %d runs from seed %d", label, self.why, torch.get_num_threads(),
                 cfg.runs, cfg.seed)
        self.t0 = time.perf_counter()
        self.job = job = Job(cfg, self.device, self.t0)
        data, g = job.data, job.data.graph
        log.info("data: %s, %d nodes of %d types, %d edges of %d relation types (%s), %d %s classes, "
                 "train/val/test %d/%d/%d (%.1fs)", data.name, g.num_nodes(), len(g.ntypes), g.num_edges(),
                 len(g.etypes), ", ".join(g.etypes), data.num_classes, data.target,
                 *(len(data.splits[s]) for s in ("train", "val", "test")), job.load_s)
        self.plain_cfg = OmegaConf.to_container(cfg, resolve=True)
        self.logger = make_logger(out_dir=store.dir, group=f"{cfg.dataset.name}-{cfg.model.name}",
                                  config=self.plain_cfg, **dict(self.plain_cfg["logger"]))

    def kept_runs(self) -> set[int]:
        return self.store.kept_runs()

    def before_runs(self, kept: set[int]) -> dict:
        """Plans the worker processes; with more than one, they train every pending run now."""
        cfg, job = self.cfg, self.job
        pending = [r for r in range(cfg.runs) if r not in kept]
        self.workers, self.worker_threads = plan_workers(cfg, self.device, len(pending), self.threads,
                                                         job.data.graph.num_edges())
        torch.set_num_threads(self.worker_threads)  # the runs trained here use what a worker would
        self.model = build_model(cfg.model, job.data, job.inputs)  # for its size and relation names
        self.num_parameters = sum(p.numel() for p in self.model.parameters())
        log.info("model: %s, %d parameters", cfg.model.name, self.num_parameters)
        self.peak_gb = 0.0
        wt = self.worker_threads
        if self.workers > 1:  # independent runs side by side, one process each at a time; they write runs/run_XX/
            log.info("%d runs in %d worker processes of %d thread%s each", len(pending), self.workers, wt,
                     "s" * (wt > 1))
            self.peak_gb = run_in_workers(self.store.dir, pending, self.workers, wt, _worker_setup,
                                          (self.plain_cfg, str(self.store.dir)), _worker_run)
        elif pending and wt != self.threads:
            log.info("each run uses %d thread%s, as the other runs of this cell", wt, "s" * (wt > 1))
        return {"trained_elsewhere": set(pending) if self.workers > 1 else ()}

    def train_one(self, run: int):
        progress = Progress(f"[{self.label} run {run + 1}/{self.cfg.runs}]")
        rec, result = train_one(self.job, self.store, run, self.logger, progress)
        return rec, None if result is None else result.relation_weights

    def summary_fields(self) -> JobFacts:
        return JobFacts(device=self.device, device_note=self.why,
                        environment={"threads": self.worker_threads, "workers": self.workers},
                        num_parameters=self.num_parameters,
                        relation_names=getattr(self.model, "relation_names", []), worker_peak_gb=self.peak_gb,
                        split_sizes=self.job.data.split_sizes(), chance=self.job.data.chance_micro_f1())

    def report(self, summary: dict) -> None:
        m = summary["metrics"]
        log.info("%s (%d runs%s): Macro-F1 %.2f ± %.2f | Micro-F1 %.2f ± %.2f  -> %s", self.label,
                 summary["finished_runs"], failed_note(summary), m["test_macro_f1"]["mean"],
                 m["test_macro_f1"]["std"], m["test_micro_f1"]["mean"], m["test_micro_f1"]["std"], self.store.dir)

    def close(self) -> None:
        pass


# -- one worker process of run_in_workers: the job is set up once, then trains the runs it is handed ----------
_WORKER: dict = {}


def _worker_setup(plain_cfg: dict, out_dir: str) -> None:
    cfg = OmegaConf.create(plain_cfg)
    device, _ = device_of(cfg)
    _WORKER.update(job=Job(cfg, device), store=CellStore(cfg, Path(out_dir)))


def _worker_run(run: int) -> None:
    w = _WORKER
    train_one(w["job"], w["store"], run, make_logger("none", w["store"].dir, "", {}), Progress("", enabled=False))
