"""One cell's job: set up once, train the runs that are not finished, write each run and the summary.

CellJob holds what every run of a cell shares, whichever trainer: the data and its log line, the logger, the
model's size, the loop over the runs (kept, trained in worker processes, or here), divergence, the run's record,
saving and its log line, the summary. A trainer's job (pipeline.fullbatch, pipeline.minibatch) gives only what
differs: how its data is prepared, how a model is built and fitted, what a run's record and log line add. The
job calls the cell store (regnn.runs.store), never the reverse. Its threads, device and processes are chosen
before it exists (pipeline.place); building it stores them, setup() loads the data, run() trains.
"""

from __future__ import annotations

import functools
import logging
import time

import torch
from omegaconf import DictConfig

from regnn.runtime import interrupt
from regnn.data.relation_graph import relation_ends
from regnn.description import graph_name
from regnn.runtime.loggers import make_logger
from regnn.runtime.perf import peak_rss_gb
from regnn.pipeline.place import Placement
from regnn.spec import ModelSpec, training_of, user_errors
from regnn.runs.resume import checkpoint_of
from regnn.runs.store import CellStore, JobFacts, failed_note, run_record
from regnn.training.divergence import Diverged, failed_record
from regnn.training.seed import seed_everything

log = logging.getLogger("regnn")


def log_data(data, seconds: float) -> None:
    g, sizes = data.graph, [len(data.splits[s]) for s in ("train", "val", "test")]
    log.info(
        "data: %s, %d nodes of %d types, %d edges of %d relation types (%s), %d %s classes, "
        "train/val/test %d/%d/%d (%.1fs, peak memory %.2f GB)",
        *(data.name, g.num_nodes(), len(g.ntypes), g.num_edges(), len(g.etypes), ", ".join(g.etypes)),
        *(data.num_classes, data.target, *sizes, seconds, peak_rss_gb()),
    )
    outside = len(data.outside_nodes())
    if outside > 0:
        what = "never trained on nor used to choose; predict.py scores them apart"
        log.info("data: %d labelled %s nodes are in no split (outside): %s", outside, data.target, what)


class CellJob:
    """The runs of one cell. A subclass sets `summary_keys` and gives prepare(), build(), fit() and describe()."""

    summary_keys: tuple[str, ...] = ()  # the per-run metrics the summary averages (training.trainer.RUN_KEYS, ...)
    score = ("test_micro_f1", "test Micro-F1")  # a kept run's log line
    trainer: str | None = None  # the summary's trainer name (None: full batch, the default)

    def __init__(self, cfg: DictConfig, store: CellStore, place: Placement, *, quiet: bool = False):
        """Holds what the job is given and does nothing else: setup() loads the data, run() trains.
        place: where it runs (placement()); quiet: a worker process's copy of the job (no start lines, no logger)."""
        self.cfg, self.store, self.quiet, self.place = cfg, store, quiet, place
        self.spec = store.spec  # how the runs are run (regnn.runs.jobspec)
        self.device, self.why, self.threads = place.device, place.why, place.threads
        self.is_main = place.dist is None or place.dist.is_main  # the process that writes (torchrun: rank 0)
        self.label = f"{cfg.model.name} on {graph_name(cfg.dataset)}"
        self.num_parameters: int | None = None  # counted on the first model built
        self.relation_names: list = []
        self.data = self.logger = None

    def setup(self) -> None:
        """Loads the data (and what the runs share on the device) and starts the logger, once."""
        if self.data is not None:
            return
        if not self.quiet:
            log.info(
                "%s: %sdevice %s, %d threads, %d runs from seed %d%s",
                self.label,
                "mini-batch, " if self.trainer == "minibatch" else "",
                self.why,
                torch.get_num_threads(),
                self.spec.runs,
                self.spec.seed,
                self.process_note(),
            )
        self.t0 = time.perf_counter()
        self.data = data = self.prepare()
        self.load_s = time.perf_counter() - self.t0
        if not self.quiet:
            log_data(data, self.load_s)
        config = self.store.config
        logger = dict(config["logger"]) if self.is_main and not self.quiet else {"name": "none"}
        group = f"{config['dataset']['name']}-{config['model']['name']}"
        self.logger = make_logger(out_dir=self.store.dir, group=group, config=config, **logger)

    # -- what a trainer's job gives --------------------------------------------------------------------------
    def process_note(self) -> str:
        return ""

    def prepare(self):
        """Loads the data (regnn.data.HeteroDataset) and whatever the runs share on the device."""
        raise NotImplementedError

    def build(self):
        """A new model on the device (seeded by the caller)."""
        raise NotImplementedError

    def fit(self, model, run: int, seed: int, checkpoint):
        """Trains `model` (a run of seed `seed`); returns its regnn.training.trainer.RunResult."""
        raise NotImplementedError

    def describe(self, rec: dict) -> tuple[str, str]:
        """A run's log line's scores and its speed note."""
        raise NotImplementedError

    def splits_of(self, run: int) -> dict:
        """The run's training, validation and test nodes: the dataset's, or with folds=k fold run mod k of its
        training and validation nodes (regnn.data.folds)."""
        fold = self.spec.fold_of(run)
        if fold is None:
            return self.data.splits
        from regnn.data.folds import fold_splits

        with user_errors():
            return fold_splits(self.data.splits, self.data.labels, self.spec.folds, fold)

    def record_extras(self, result, model) -> dict:
        """What a finished run's record adds to the common one (clustering scores, speed)."""
        return {}

    def save(self, rec: dict, result, model) -> None:
        self.store.save_run(
            rec, result, self.data, self.spec.save_embeddings, model=model, trainer=self.trainer or "fullbatch"
        )

    def before_runs(self, pending: list[int]) -> set[int]:
        """Work before this process trains its runs; returns the runs trained elsewhere (worker processes)."""
        return set()

    def kept_runs(self) -> dict:
        return self.store.kept_runs()

    def environment(self) -> dict:
        return {"threads": torch.get_num_threads()}

    def facts(self) -> JobFacts:
        """What the cell's summary records of the job."""
        if self.num_parameters is None:  # every run was kept or trained elsewhere: count one model
            self.counted(self.build())
        return JobFacts(
            device=self.device,
            device_note=self.why,
            trainer=self.trainer,
            environment=self.environment(),
            num_parameters=self.num_parameters,
            relation_names=self.relation_names,
            relations={n: e for n, e in relation_ends(self.data.graph).items() if n in self.relation_names},
            graph=graph_name(self.cfg.dataset),
            split_sizes=self.split_sizes(),
            chance=self.data.chance_micro_f1(),
            **self.more_facts(),
        )

    def more_facts(self) -> dict:
        return {}

    def split_sizes(self) -> dict:
        """Labelled nodes per split; with folds, a fold's (its validation nodes, and how many folds there are)."""
        if self.spec.folds is None:
            return self.data.split_sizes()
        return {s: int(len(i)) for s, i in self.splits_of(0).items()} | {"folds": self.spec.folds}

    def report(self, summary: dict) -> None:
        """One log line for the cell: its runs, its scores (scores_line) and where they are."""
        runs = f"{summary['finished_runs']} runs{failed_note(summary)}"
        log.info("%s (%s): %s -> %s", self.label, runs, self.scores_line(summary), self.store.dir)

    def scores_line(self, summary: dict) -> str:
        m = summary["metrics"]
        macro, micro = m["test_macro_f1"], m["test_micro_f1"]
        return f"Macro-F1 {macro['mean']:.2f} ± {macro['std']:.2f} | Micro-F1 {micro['mean']:.2f} ± {micro['std']:.2f} "

    def close(self) -> None:
        pass

    @functools.cached_property
    def training(self):
        """The trainer's settings (regnn.spec.training_of), read once for the cell's runs."""
        return training_of(self.cfg)

    @functools.cached_property
    def model_spec(self):
        """The model's settings (regnn.spec.ModelSpec), read once for the cell's runs."""
        return ModelSpec.from_config(self.cfg.model)

    def max_epochs(self):
        """The trainer's epoch limit (a run's log line says when a run reached it), None where there is none."""
        return self.training.max_epochs

    # -- the same for every trainer --------------------------------------------------------------------------
    def counted(self, model):
        if self.num_parameters is None:
            self.num_parameters = sum(p.numel() for p in model.parameters())
            self.relation_names = list(getattr(model, "relation_names", []))
            if not self.quiet:
                log.info("model: %s, %d parameters", self.cfg.model.name, self.num_parameters)
        return model

    def run(self) -> dict:
        """Trains the cell's runs that are not finished, writes its summary and returns it."""
        self.setup()
        spec, store = self.spec, self.store
        if self.is_main:
            store.write_config()  # first: lets a resume check the settings of the runs it keeps
        kept = self.kept_runs()
        elsewhere = self.before_runs([r for r in range(spec.runs) if r not in kept])
        records, weights = [], []
        for run in range(spec.runs):
            seed = spec.seed_of(run)
            if run in kept:
                rec, layers = kept[run]
                log.info(
                    "run %d/%d seed %d: finished earlier, kept (%s)",
                    run + 1,
                    spec.runs,
                    seed,
                    f"failed: {rec['failed']}" if "failed" in rec else f"{self.score[1]} {rec[self.score[0]]:.2f}",
                )
            elif run in elsewhere:
                reused = store.reused_run(run)
                if reused is None:
                    raise RuntimeError(f"{store.run_dir(run)} holds no results after its worker finished")
                rec, layers = reused
            else:
                interrupt.check(f"before run {run + 1}/{spec.runs}")
                rec, layers = self.train_one(run)
            records.append(rec)
            if "failed" not in rec:
                weights.append({"run": run, "seed": seed, "layers": layers})
        summary = store.summary(records, self.summary_keys, self.t0, self.facts())
        if self.is_main:
            store.finish(summary, weights)
        self.logger.finish(summary)
        if summary["metrics"]:
            self.report(summary)
        self.close()
        return summary

    def checkpoint(self, run: int):
        return checkpoint_of(self.store, run)

    def train_one(self, run: int) -> tuple[dict, list | None]:
        """Trains, scores and saves run `run` (seed spec.seed + run) in runs/run_XX/; returns (its record, its
        relation weights), the weights None for a run that diverged."""
        spec, store = self.spec, self.store
        seed = spec.seed_of(run)
        seed_everything(seed, spec.deterministic)  # first: a seed always draws the same weights
        model = self.counted(self.build())
        self.logger.start_run(run, seed)
        ckpt = self.checkpoint(run)
        try:
            result = self.fit(model, run, seed, ckpt)
        except Diverged as e:
            if ckpt is not None:
                ckpt.remove()
            rec = failed_record(run, seed, e)
            return (store.save_failed(rec, self.logger, self.device) if self.is_main else rec), None
        rec = run_record(result, run, self.device) | self.record_extras(result, model)
        if (fold := spec.fold_of(run)) is not None:
            rec["fold"] = fold
        self.logger.end_run(rec)
        if self.is_main:
            self.save(rec, result, model)
        if ckpt is not None:
            ckpt.remove()  # the run is finished: results.json holds it
        scores, speed = self.describe(rec)
        log.info(
            "run %d/%d seed %d: %s (best epoch %d of %d, %s%.1fs%s)",
            run + 1,
            spec.runs,
            seed,
            scores,
            rec["best_epoch"],
            rec["epochs"],
            speed,
            rec["train_time_s"],
            stop_note(rec, self.max_epochs()),
        )
        return rec, result.relation_weights


def stop_note(rec: dict, max_epochs) -> str:
    """A run's log line's note where early stopping never ended it: it trained every allowed epoch."""
    if max_epochs is None or rec.get("epochs", 0) < int(max_epochs):
        return ""
    return (
        f"; it trained all {int(max_epochs)} allowed epochs without early stopping (best epoch "
        f"{rec['best_epoch']}): a larger trainer.max_epochs may score higher"
    )
