"""Mid-run checkpoints: a long run survives a stop (SLURM preemption, a time limit, scancel) and continues where it
was, not from epoch 0.

runs/run_XX/checkpoint.pt holds the model, the optimizer and lr schedule, the epoch loop's state (epoch, history,
early stopping with its best weights, the blow-up watch) and every random state, written at the end of an epoch
once `checkpoint_every_s` seconds have passed since the last one, and when a stop signal arrives. A run started
again with resume=true (a requeued SLURM job is) loads it and continues: its history and scores are those of a run
that was never stopped. It is read with torch.load(weights_only=True), and one written for another config, graph
or seed is refused in one line. It is removed once the run's results.json is written.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path

from omegaconf import OmegaConf

from regnn.errors import DataError
from regnn.runs.checkpoint import load_tensors, write_tensors
from regnn.runs.computation import computation
from regnn.training.loop import random_states, set_random_states

log = logging.getLogger("regnn")
FILE = "checkpoint.pt"


def run_identity(computation: dict, graph: dict, seed: int) -> dict:
    """What a checkpoint must match: the run's settings (as resume compares them), its graph and its seed."""
    settings = {k: v for k, v in computation.items() if k != "runs"}  # a cell extended to more runs: the same runs
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()
    return {
        "config": digest,
        "graph": (graph.get("fingerprint") or {}).get("digest") or graph.get("path"),
        "seed": int(seed),
    }


class RunCheckpoint:
    def __init__(self, run_dir: Path, every_s: float | None, identity: dict, resume: bool):
        self.path, self.every_s, self.identity, self.resume = Path(run_dir) / FILE, every_s, identity, resume
        self.trained_s = 0.0  # training seconds before this process continued the run
        self._last = time.monotonic()
        self._t0 = time.monotonic()

    def attach(self, model, step, loop) -> None:
        """Binds the run's parts; continues them from the checkpoint where one exists (resume=true)."""
        self.model, self.step, self.loop = model, step, loop
        if not self.path.exists():
            return
        if not self.resume:  # the store refuses a started cell without resume; a lone stale file is replaced
            self.path.unlink()
            return
        state = load_tensors(self.path, "checkpoint")
        if state.get("identity") != self.identity:
            theirs = state.get("identity") or {}
            what = [k for k in ("config", "graph", "seed") if theirs.get(k) != self.identity[k]]
            raise DataError(
                f"{self.path} was written by another run ({', '.join(what) or 'its identity'} "
                "differs); move it away to train this run from its start"
            )
        model.load_state_dict(state["model"])
        step.load_state(state["step"])
        loop.load_state(state["loop"])
        set_random_states(state["random"])
        self.trained_s = float(state["trained_s"])
        log.info("run continues from %s at epoch %d (%.0f s trained before)", self.path, loop.epoch, self.trained_s)

    def due(self) -> bool:
        return self.every_s is not None and time.monotonic() - self._last >= self.every_s

    def save(self, loop, why: str) -> None:
        state = {
            "identity": self.identity,
            "model": self.model.state_dict(),
            "step": self.step.state(),
            "loop": loop.state(),
            "random": random_states(),
            "trained_s": self.trained_s + time.monotonic() - self._t0,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_tensors(self.path, state)
        self._last = time.monotonic()
        log.info("checkpoint of epoch %d written (%s): %s", loop.epoch, why, self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def checkpoint_of(store, run: int) -> RunCheckpoint:
    """Run `run`'s checkpoint in its cell (the job spec's checkpoint_every_s; resume=true continues from it)."""
    spec = store.spec
    identity = run_identity(
        computation(OmegaConf.to_container(store.cfg, resolve=True)), store.graph(), spec.seed_of(run)
    )
    return RunCheckpoint(store.run_dir(run), spec.checkpoint_every_s, identity, spec.resume)
