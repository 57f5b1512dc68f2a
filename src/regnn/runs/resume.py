"""Mid-run checkpoints: a long run survives a stop (SLURM preemption, a time limit, scancel) and continues where it
was, not from epoch 0.

runs/run_XX/checkpoint.pt holds the model, the optimizer and lr schedule, the epoch loop's state (epoch, history,
early stopping with its best weights, the blow-up watch) and every random state, written at the end of an epoch
once `checkpoint_every_s` seconds have passed since the last one, and when a stop signal arrives. A run started
again with resume=true (a requeued SLURM job is) loads it and continues: its history and scores are those of a run
that was never stopped. It is read with torch.load(weights_only=True), and one written for another config, graph
or seed is refused in one line. It records the sha256 of everything it holds (regnn.runs.integrity): a damaged
one (a flipped bit) is refused in one line too, never continued from, since weights continued from a damaged file
would train on and be recorded as the run's (or as a divergence that resume keeps); moving it away trains the run
from its start, to the same numbers. It is removed once the run's results.json is written.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from regnn.errors import DataError
from regnn.models.regnn import renamed_from_earlier
from regnn.runs import integrity, io_safe
from regnn.runs.checkpoint import load_tensors, write_tensors
from regnn.runs.computation import computation
from regnn.training.loop import random_states, set_random_states

log = logging.getLogger("regnn")
FILE = "checkpoint.pt"
PARTS = ("identity", "model", "step", "loop", "random", "trained_s")


def run_identity(computation: dict, graph: dict, seed: int) -> dict:
    """What a checkpoint must match: the run's settings (as resume compares them), its graph and its seed."""
    settings = {k: v for k, v in computation.items() if k != "runs"}  # a cell extended to more runs: the same runs
    return {
        "config": integrity.settings_digest(settings),
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
        state = self._read()
        try:
            model.load_state_dict(renamed_from_earlier(state["model"], model.state_dict().keys()))
            step.load_state(state["step"])
            loop.load_state(state["loop"])
            set_random_states(state["random"])
            self.trained_s = float(state["trained_s"])
        except (RuntimeError, KeyError, TypeError, ValueError, IndexError) as e:
            why = (str(e).splitlines() or [type(e).__name__])[0][:160]
            raise DataError(f"{self.path} does not fit this run ({why}); move it away to train this run from its start")
        log.info("run continues from %s at epoch %d (%.0f s trained before)", self.path, loop.epoch, self.trained_s)

    def _read(self) -> dict:
        """The checkpoint's state, checked: the parts a run writes, its digest and its identity."""
        io_safe.remove_stale_temps(self.path.parent)
        state = load_tensors(self.path, "checkpoint")
        fix = "move it away to train this run from its start (to the same numbers)"
        if not isinstance(state, dict) or any(k not in state for k in PARTS):
            raise DataError(f"{self.path} is not a checkpoint regnn writes; {fix}")
        digest = state.pop("digest", None)
        if digest is None:
            integrity.warn_once(f"ck:{self.path}", "%s records no digest (older regnn): not checked", self.path)
        elif integrity.tensors_digest(state) != digest:
            raise DataError(f"{self.path} is damaged (its sha256 differs from the one it records); {fix}")
        if state.get("identity") != self.identity:
            theirs = state.get("identity") if isinstance(state.get("identity"), dict) else {}
            what = [k for k in ("config", "graph", "seed") if theirs.get(k) != self.identity[k]]
            raise DataError(
                f"{self.path} was written by another run ({', '.join(what) or 'its identity'} "
                "differs); move it away to train this run from its start"
            )
        return state

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
        state["digest"] = integrity.tensors_digest(state)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_tensors(self.path, state)
        self._last = time.monotonic()
        log.info("checkpoint of epoch %d written (%s): %s", loop.epoch, why, self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def checkpoint_of(store, run: int) -> RunCheckpoint:
    """Run `run`'s checkpoint in its cell (the job spec's checkpoint_every_s; resume=true continues from it)."""
    spec = store.spec
    identity = run_identity(computation(store.config), store.graph(), spec.seed_of(run))
    return RunCheckpoint(store.run_dir(run), spec.checkpoint_every_s, identity, spec.resume)
