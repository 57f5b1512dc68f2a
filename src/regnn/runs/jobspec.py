"""How a cell's runs are run, read once from the config: how many and from which seed, on which device, with how
many CPU threads and worker processes, what a run keeps (embeddings, mid-run checkpoints), whether earlier results
are resumed, and the clustering scores of its embeddings. The pipeline builds it (after regnn.config has checked
the values); the job, the cell store, the executor and the checkpoints read these settings from it, never from the
config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class Clustering:
    enabled: bool
    repeats: int = 10
    n_init: int = 10
    seed: int = 0


def progress_mode(value) -> str:
    """progress=true is auto, false is off (YAML reads both as booleans)."""
    return {True: "auto", False: "off"}.get(value, str(value)) if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class JobSpec:
    runs: int
    seed: int  # run i trains with seed + i
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    deterministic: bool = True
    threads: int | None = None  # None: the CPUs SLURM gave the job, else torch's default
    workers: int | str = 1  # worker processes, or "auto"
    logger: str = "none"  # none | csv | wandb (worker processes need none)
    progress: str = "auto"  # regnn.training.progress: auto | bar | lines | off
    progress_interval_s: float = 30.0
    resume: bool = False
    save_embeddings: bool = False
    save_model: bool = True  # runs/run_XX/model.pt, what predict.py reads
    checkpoint_every_s: float | None = None
    clustering: Clustering = Clustering(enabled=False)
    folds: int | None = None  # k: run r validates on fold r mod k of the training and validation nodes

    def seed_of(self, run: int) -> int:
        return self.seed + run

    def fold_of(self, run: int) -> int | None:
        return None if self.folds is None else run % self.folds

    @classmethod
    def from_config(cls, config: Mapping) -> "JobSpec":
        """From the config resolved into plain dicts (any mapping of the config's keys). Every key is read as
        conf/train.yaml composes it; none has a default here."""
        c = dict(config)
        cl, every, workers = c["clustering"], c["checkpoint_every_s"], c["workers"]
        return cls(
            runs=int(c["runs"]),
            seed=int(c["seed"]),
            device=str(c["device"]),
            deterministic=bool(c["deterministic"]),
            threads=int(c["threads"]) if c["threads"] else None,
            workers=workers if str(workers) == "auto" else int(workers),
            logger=str(c["logger"]["name"]),
            progress=progress_mode(c["progress"]),
            progress_interval_s=float(c["progress_interval"]),
            resume=bool(c["resume"]),
            save_embeddings=bool(c["save_embeddings"]),
            save_model=bool(c["save_model"]),
            checkpoint_every_s=None if every is None else float(every),
            folds=int(c["folds"]) if c["folds"] else None,
            clustering=Clustering(
                enabled=bool(cl["enabled"]),
                repeats=int(cl["repeats"]),
                n_init=int(cl["n_init"]),
                seed=int(cl["seed"]),
            ),
        )
