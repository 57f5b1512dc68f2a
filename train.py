"""Train RE-GNN (or a plain GNN) on a heterogeneous graph.

    python train.py dataset=dblp model=re_gcn
    python train.py -m dataset=dblp,acm,imdb model=re_gcn,re_gat
    python train.py dataset=acm model=re_gat model.relation.scale=1 runs=3

Every output (results.json, per-run history and relation weights, resolved config) goes to the Hydra run
directory printed at the end. See conf/train.yaml for every option.
"""

import contextlib
import logging
import sys
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig

import regnn.config  # registers the ${repo_root:} resolver used by conf/paths; torch-free
from regnn.entry import discard_unused_run_dir, run
from regnn.errors import CellBusy, RegnnError, Unsupported
from regnn.training.progress import in_sweep


_job_times: list[float] = []  # seconds of the sweep's cells this process has trained (experiment=tune's estimate)


@contextlib.contextmanager
def timed():
    t0 = time.monotonic()
    yield
    _job_times.append(time.monotonic() - t0)


def sweep_position(cfg: DictConfig):
    """The cell's place in its sweep for the progress lines: experiment=compare's model k of n (with the estimates
    of the models after it), experiment=tune's trial k of n; "skipped" where compare.budget skips the model."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN:
        return None
    if cfg.get("compare"):
        from regnn.experiments import compare_sweep

        why = compare_sweep.skipped(cfg, Path(hc.sweep.dir))
        if why:
            logging.getLogger("regnn").warning("skipped %s: %s", cfg.model.name, why)
            return "skipped"
        return compare_sweep.position(cfg, Path(hc.sweep.dir))
    if cfg.get("tune") and hc.sweeper.get("n_trials") is not None:
        from regnn.training.progress import Position

        k, n = int(hc.job.num), int(cfg.tune.trials)
        after = (sum(_job_times) / len(_job_times)) * max(n - k - 1, 0) if _job_times else None
        return Position(f"trial_{k}" + (f" ({k + 1}/{n})" if k < n else ""), after)  # trial_k: the trial's folder
    return None


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from regnn.runtime import interrupt

    interrupt.install()  # SIGTERM / SIGUSR1 (SLURM's stop signals): end at the next epoch, finished runs kept
    try:
        out_dir = HydraConfig.get().runtime.output_dir
        interrupt.check("before it started")  # a sweep signalled during an earlier cell stops here
        regnn.config.validate(cfg)  # a bad value is answered now, not after the seconds torch takes to import
        from regnn.pipeline import train

        where = sweep_position(cfg)
        if where == "skipped":  # experiment=compare: compare.budget has no room for this model (logged at start)
            return float("nan")
        with in_sweep(where), timed():
            if cfg.get("compare") and cfg.compare.tune:  # experiment=compare compare.tune=true: tune, then train
                from regnn.experiments.compare_sweep import tuned_cell

                summary = tuned_cell(cfg, out_dir, list(HydraConfig.get().overrides.task))
            else:
                summary = train(cfg, out_dir)
    except Unsupported as e:  # a model this graph cannot train: a sweep names it and goes on with the others
        logging.getLogger("regnn").error("refused: %s", e)
        if HydraConfig.get().mode != RunMode.MULTIRUN:
            discard_unused_run_dir(out_dir)
            sys.exit(2)
        from regnn.runs.io_safe import write_text

        write_text(Path(out_dir) / "refused.txt", f"{e}\n")  # for the sweep's table
        return float("nan")
    except interrupt.Interrupted as e:  # the run in progress is abandoned; nothing of it was written
        logging.getLogger("regnn").warning(
            "%s: %s. The runs finished before it are kept in %s; the same command again (resume=true) trains the rest",
            e,
            interrupt.reason(e.signum),
            out_dir,
        )
        if HydraConfig.get().mode != RunMode.MULTIRUN:
            sys.exit(128 + e.signum)
        raise  # the sweep reports this cell as not finished (a submitit job: as its error)
    except CellBusy as e:
        if cfg.resume:  # a sweep beside another sweep over the same cells: leave this cell to the other process
            logging.getLogger("regnn").warning("skipped: %s", e)
            return float("nan")
        logging.getLogger("regnn").error("%s", e)
        sys.exit(2)
    except RegnnError as e:  # a problem the user can fix: say what and how, no traceback
        logging.getLogger("regnn").error("%s", e)
        discard_unused_run_dir(out_dir)  # nothing a later run must clean up
        sys.exit(2)
    except OSError as e:  # a disk that filled up or a folder that cannot be written, outside the result writers
        logging.getLogger("regnn").error(
            "%s: %s; free disk space or fix the folder's permissions, then re-run with "
            "resume=true (finished runs are kept)",
            e.filename or "output",
            e.strerror or e,
        )
        sys.exit(2)
    failed, runs = summary.get("failed_runs", 0), summary["runs"]
    if failed:
        logging.getLogger("regnn").error(
            "%d of %d runs diverged (runs/run_XX/results.json say where); %s",
            failed,
            runs,
            "no result: every run failed" if failed == runs else f"the means are over the other {runs - failed}",
        )
    if failed == runs and HydraConfig.get().mode != RunMode.MULTIRUN:  # a sweep goes on to its other cells
        sys.exit(3)
    if failed == runs:
        return float("nan")
    # the value a Hydra sweeper optimises (experiment=tune): validation, never test (Micro-F1 = accuracy on OGB)
    return summary["metrics"]["val_micro_f1"]["mean"]


if __name__ == "__main__":
    run(main)
