"""The cell store: one output directory per dataset x model cell, and everything written into it.

A cell holds config.yaml (written before the first run: a resume checks its settings), runs/run_XX/ (one
finished run each; results.json written last marks it finished), relation_weights.json and results.json (the
summary, written last: it marks the cell finished). The store refuses to overwrite a finished or started cell
unless resume=true, holds the directory for one writer (regnn.runs.claim: across hosts too), skips a finished cell,
extends one that is asked for more runs (its finished runs kept) and builds the one summary both trainers write.

Every file is written whole through regnn.runs.io_safe (looked up at call time, so a test or probe that replaces
io_safe.write_text sees every write).
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from regnn.runs import checkpoint, config_files, embeddings, identity, io_safe
from regnn.runs.computation import check_same_computation, kept_summary, stored_config
from regnn.runs.jobspec import JobSpec
from regnn.runs.claim import claim, host_id
from regnn.errors import ConfigError
from regnn.evaluation.metrics import mean_std
from regnn.runtime.perf import peak_rss_gb
from regnn.training.divergence import finished, summary_metrics

log = logging.getLogger("regnn")


def unused_path(path: Path) -> Path:
    """path, or path with .1, .2, ... before its suffix when taken: nothing is ever overwritten."""
    k, p = 0, path
    while p.exists():
        k += 1
        p = path.with_name(f"{path.stem}.{k}{path.suffix}")
    return p


def run_record(result, run: int, device) -> dict:
    """The per-run record of a trainer's RunResult: its scores, best epoch, times, and the device, host and process
    that trained it (a resumed cell can hold runs of several machines and jobs)."""
    epoch_times = [h["epoch_time_s"] for h in result.history]
    return {
        "run": run,
        "seed": result.seed,
        "best_epoch": result.best_epoch,
        "epochs": result.epochs,
        **result.metrics,
        "train_time_s": result.train_time_s,
        "epoch_time_s": float(np.median(epoch_times)) if epoch_times else None,
        **trained_by(device),
        **({"train_loss_blowup": result.train_loss_blowup} if getattr(result, "train_loss_blowup", None) else {}),
    }


def trained_by(device) -> dict:
    """The device, host and process that train a run (regnn.runs.claim's host id: the one its claims carry)."""
    return {"device": device_name(device), "host": host_id(), "pid": os.getpid()}


def device_name(device) -> str:
    """'cpu', or 'cuda (<GPU name>)'."""
    device = torch.device(device)
    return f"cuda ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else device.type


def run_devices(records: list[dict], default: str = "unrecorded") -> dict[str, list[int]]:
    """The runs of each device, by the device recorded in each run's record (`default` for older records)."""
    out: dict[str, list[int]] = {}
    for r in records:
        out.setdefault(r.get("device", default), []).append(r["run"])
    return out


def failed_note(summary: dict) -> str:
    return f"; {summary['failed_runs']} more diverged and are left out" if summary.get("failed_runs") else ""


def _dgl_version() -> str | None:
    try:
        import dgl
    except ImportError:
        return None
    return dgl.__version__


@dataclass(frozen=True)
class JobFacts:
    """What a job knows about itself that its cell's summary records."""

    device: object
    device_note: str
    environment: dict
    num_parameters: int
    relation_names: list
    extra: dict = field(default_factory=dict)
    relations: dict = field(default_factory=dict)  # relation name -> [source, destination type]; the graph's name:
    graph: str | None = None
    trainer: str | None = None  # the mini-batch job names itself; the full-batch job is the default
    worker_peak_gb: float = 0.0  # of the largest worker process, where runs were trained in workers
    split_sizes: dict = field(default_factory=dict)  # labelled nodes per split: how many nodes a score stands on
    chance: float | None = None  # test Micro-F1 of always predicting the largest class (runs that learnt nothing)


class CellStore:
    """The output directory of one cell, trained with `config` (the cell's config resolved into plain dicts)."""

    def __init__(self, config: dict, out_dir: str | Path, spec: JobSpec | None = None):
        """spec: how the runs are run (built from config where not given)."""
        self.config, self.dir = config, Path(out_dir)
        self.spec = spec if spec is not None else JobSpec.from_config(config)
        self.results = self.dir / "results.json"
        self._graph: dict | None = None

    def at(self, out_dir: str | Path) -> CellStore:
        """The same cell written to another directory (under torchrun: rank 0's, for every rank)."""
        return CellStore(self.config, out_dir, self.spec)

    @contextlib.contextmanager
    def opened(self):
        """Holds the directory for this process over the block (CellBusy when a live owner holds it) and
        yields the stored summary when the cell is finished with these settings (nothing to train), else None.

        An empty or unreadable results.json or config.yaml (a write cut short) counts as absent: the cell is
        trained again, its finished runs kept."""
        self._refuse_overwrite()
        self.dir.mkdir(parents=True, exist_ok=True)
        with claim(self.dir):
            yield self._finished()

    def _refuse_overwrite(self) -> None:
        if self.spec.resume:
            return
        if io_safe.read_json(self.results, io_safe.is_cell_summary) is not None:
            raise ConfigError(
                f"{self.dir} already holds results.json; refusing to overwrite it. Choose another "
                "hydra.run.dir, or set resume=true to keep it and skip the run"
            )
        if any((self.dir / "runs").glob("run_*/results.json")):
            raise ConfigError(
                f"{self.dir} holds finished runs of an unfinished training; set resume=true to keep "
                "them and train the rest, or choose another hydra.run.dir"
            )
        if stored_config(self.dir) is not None:
            raise ConfigError(
                f"{self.dir} already holds the config.yaml of an earlier training; refusing to "
                "overwrite it. Choose another hydra.run.dir, or set resume=true to continue that "
                "training (its settings are checked)"
            )

    def graph(self) -> dict:
        """The graph this cell trains on (regnn.runs.identity: name, path, the files' fingerprint), read once."""
        if self._graph is None:
            self._graph = identity.describe(self.config)
        return self._graph

    def _same_graph(self) -> None:
        identity.check(self.dir, self.graph(), stored_config(self.dir), self.config)

    def _finished(self) -> dict | None:
        stored = io_safe.read_json(self.results, io_safe.is_cell_summary)
        if stored is None:
            if self.spec.resume:
                check_same_computation(self.config, self.dir)  # an unfinished cell: config.yaml is written first
                self._same_graph()
            return None
        stored_runs = check_same_computation(self.config, self.dir)
        self._same_graph()
        if stored_runs is None:
            log.info("%s already holds results; skipped (resume=true)", self.dir)
            return stored
        kept = unused_path(kept_summary(self.dir, stored_runs))
        self.results.rename(kept)
        log.info(
            "%s: extending %d runs to %d (the %d finished runs are kept; their summary moved to %s)",
            self.dir,
            stored_runs,
            self.spec.runs,
            stored_runs,
            kept.name,
        )
        return None

    # -- runs -------------------------------------------------------------------------------------------
    def run_dir(self, run: int) -> Path:
        return self.dir / "runs" / f"run_{run:02d}"

    def reused_run(self, run: int) -> tuple[dict, list] | None:
        """(record, relation weights) of run `run` finished by an earlier, interrupted or smaller training of
        this cell (its settings were checked against config.yaml), or None when the run has to be trained."""
        path, seed = self.run_dir(run) / "results.json", self.spec.seed_of(run)
        rec = io_safe.read_json(path, io_safe.is_run_record)  # missing, empty, unreadable or misshapen: trained again
        if rec is None:
            return None
        if rec.get("seed") != seed:
            raise ConfigError(
                f"{path} was trained with seed {rec.get('seed')}, this run needs seed {seed}; "
                "move that directory away or choose another hydra.run.dir"
            )
        return rec, rec.pop("relation_weights", [])

    def kept_runs(self) -> dict[int, tuple[dict, list]]:
        """The runs finished earlier (resume=true only), by run number."""
        return {run: r for run in range(self.spec.runs) if self.spec.resume and (r := self.reused_run(run))}

    def write_config(self) -> None:
        io_safe.write_text(self.dir / "config.yaml", config_files.dumps(self.config))
        identity.write(self.dir, self.graph())

    def save_failed(self, rec: dict, logger, device) -> dict:
        """A diverged run: recorded as failed (kept on resume: the same seed diverges again), never scored."""
        log.error("run %d/%d seed %d failed: %s", rec["run"] + 1, self.spec.runs, rec["seed"], rec["failed"])
        rec = {**rec, **trained_by(device)}
        logger.end_run(rec)
        run_dir = self.run_dir(rec["run"])
        run_dir.mkdir(parents=True, exist_ok=True)
        io_safe.write_json(run_dir / "results.json", {**rec, "relation_weights": []})
        return rec

    def save_run(self, rec: dict, result, data, save_embeddings: bool, model=None, trainer: str = "fullbatch") -> None:
        """Writes the run's files: history, embeddings where asked, its model (save_model, the default) and last
        results.json. `model` holds the best-validation weights."""
        run_dir = self.run_dir(rec["run"])
        run_dir.mkdir(parents=True, exist_ok=True)
        if model is not None and self.spec.save_model:
            checkpoint.save(
                run_dir,
                model,
                {
                    "run": rec["run"],
                    "seed": rec["seed"],
                    "trainer": trainer,
                    "model": str(self.config["model"]["name"]),
                    "schema": checkpoint.graph_schema(data),
                    "graph": self.graph(),
                    "torch": torch.__version__,
                },
                scaling=data.feature_scaling,
                graph=data,
            )
        io_safe.write_text(run_dir / "history.csv", pd.DataFrame(result.history).to_csv(index=False))
        if save_embeddings and result.embeddings is not None:
            embeddings.write(run_dir / "embeddings.npz", data, result.embeddings)
        # results.json last (and whole): its presence marks a finished run (reused_run)
        io_safe.write_json(run_dir / "results.json", {**rec, "relation_weights": result.relation_weights})

    # -- the cell's summary -------------------------------------------------------------------------------
    def summary(self, records: list[dict], keys, t0: float, facts: JobFacts) -> dict:
        """The cell's results.json: metrics (mean ± std of `keys`) over its finished runs, every run's record,
        the model's size, the environment and times. peak_rss_gb: of this process so far (a multirun process
        holds several cells), or of its largest worker process."""
        ok = finished(records)
        return {
            "dataset": str(self.config["dataset"]["name"]),
            "model": str(self.config["model"]["name"]),
            **({"trainer": facts.trainer} if facts.trainer else {}),
            "runs": int(self.spec.runs),
            "seeds": [r["seed"] for r in records],
            "metrics": summary_metrics(records, keys, mean_std),
            "finished_runs": len(ok),
            **({"split_sizes": dict(facts.split_sizes)} if facts.split_sizes else {}),
            **({"chance_test_micro_f1": facts.chance} if facts.chance is not None else {}),
            "failed_runs": len(records) - len(ok),
            # runs whose training loss blew up while validation did not (regnn.training.divergence.TrainLossBlowup)
            "train_loss_blowup_runs": sum(1 for r in records if r.get("train_loss_blowup")),
            "per_run": records,
            "num_parameters": int(facts.num_parameters),
            "relation_names": list(facts.relation_names),
            **{k: v for k, v in (("relations", dict(facts.relations)), ("graph", facts.graph)) if v},
            **facts.extra,
            "environment": {
                "device": str(facts.device),
                "device_note": facts.device_note,
                "run_devices": run_devices(records),
                **facts.environment,
                "torch": torch.__version__,
                "dgl": _dgl_version(),
                "python": platform.python_version(),
                "machine": platform.machine(),
            },
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "wall_time_s": time.perf_counter() - t0,
            "peak_rss_gb": max(peak_rss_gb(), facts.worker_peak_gb),
        }

    def finish(self, summary: dict, weights: list | None = None) -> None:
        """Writes the relation weights (when given), then results.json, which marks the cell finished."""
        if weights is not None:
            io_safe.write_json(self.dir / "relation_weights.json", weights)
        io_safe.write_json(self.results, summary)
