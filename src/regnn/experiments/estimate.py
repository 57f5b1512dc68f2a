"""experiment=compare's cost estimates: before any cell trains, each model's time on this graph, from a few timed
epochs, and with compare.budget the models that would not fit.

A model's estimate is its median seconds per epoch (compare.estimate_epochs epochs of one run, in this process,
written to a temporary folder) times the cell's runs times its epochs: expected, twice the early-stopping patience
(a run stops `patience` epochs after its best one; on the Table 2 cells runs took 1 to 4 times the patience, half
of them about twice), and at most, the epoch cap. The table goes to the log and to <sweep>/compare_estimates.json
(data: one row per model), and the comparison's table sets each beside the time its cell took.
compare.budget=<minutes> keeps the models cheapest first while their expected times fit in the budget and skips
the others: their cells do not train (train.py reads the file), and the comparison's table lists them as
skipped, with their estimate. A budget that fits no model is refused, naming the budget the cheapest needs.
Finished cells cost nothing and are never skipped.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from regnn.errors import ConfigError, Unsupported
from regnn.reporting.compare import ESTIMATES, read_estimates
from regnn.runs import io_safe
from regnn.runs.io_safe import write_text

log = logging.getLogger("regnn")
KEPT = ("s_per_epoch", "runs", "workers", "max_epochs", "estimate_s", "expected_epochs", "expected_s")


def cell_dir(sweep: Path, dataset: str, model: str) -> Path:
    return Path(sweep) / f"{dataset}_{model}"


def same_cell(cfg: DictConfig, cell: Path) -> None:
    """ConfigError (one line) where the cell folder holds a cell of other settings (untuned cells) or of another
    graph, as the cell itself would refuse it when the sweep reaches it."""
    from regnn.runs import identity
    from regnn.runs.computation import check_same_computation, stored_config

    stored = stored_config(cell) if (cell / "config.yaml").is_file() else None
    if stored is None:
        return
    config = OmegaConf.to_container(cfg, resolve=True)
    if not cfg.compare.get("tune"):  # a tuned cell trains with its tune's best setting, not the composed one
        check_same_computation(config, cell)
    identity.check(cell, identity.describe(config), stored, config)


def finished(cell: Path) -> bool:
    summary = io_safe.read_json(cell / "results.json", io_safe.is_cell_summary, set_aside=False)
    return summary is not None and summary.get("finished_runs", 0) >= summary["runs"]


def timing_config(cfg: DictConfig, epochs: int) -> DictConfig:
    """cfg trimmed to one quiet run of `epochs` epochs that keeps nothing: the cost of an epoch, not a result."""
    cfg = cfg.copy()
    with open_dict(cfg):
        cfg.pop("hydra", None)
        cfg.runs, cfg.resume, cfg.progress, cfg.workers = 1, False, "off", 1
        cfg.save_embeddings, cfg.save_model, cfg.clustering.enabled = False, False, False
        cfg.trainer.max_epochs = epochs
        cfg.logger = {"name": "none"}
    return cfg


def seconds_per_epoch(cfg: DictConfig, epochs: int) -> float:
    """The median seconds of an epoch of cfg's model on cfg's graph (one run of `epochs` epochs, kept nowhere)."""
    from regnn.pipeline import train

    quiet = logging.getLogger("regnn")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # the timing run's own start and score lines are not the comparison's
    try:
        with tempfile.TemporaryDirectory(prefix="regnn-estimate-") as tmp:
            summary = train(timing_config(cfg, epochs), Path(tmp) / "cell")
    finally:
        quiet.setLevel(level)
    return float(summary["metrics"]["epoch_time_s"]["mean"])


def workers_of(cfg: DictConfig) -> tuple[int, int]:
    """(worker processes, threads per run) the cell's runs will train in (regnn.runs.executor's plan)."""
    from regnn.pipeline.from_config import device_of, load_data
    from regnn.pipeline.place import DEFAULT_THREADS
    from regnn.runs.executor import job_threads, plan_workers
    from regnn.runs.jobspec import JobSpec

    spec = JobSpec.from_config(cfg)
    if str(spec.workers) != "auto" and int(spec.workers) <= 1:
        return 1, job_threads(spec) or DEFAULT_THREADS
    edges = load_data(cfg.dataset).graph.num_edges()
    return plan_workers(spec, device_of(cfg.device)[0], spec.runs, job_threads(spec) or DEFAULT_THREADS, edges)


def estimate(cfg: DictConfig, epochs: int) -> dict:
    """One model's row: seconds per epoch (timed with the threads each run will have), the runs side by side in
    the workers they will train in, and the cell's cost expected and at most (every pending run to the cap)."""
    runs, cap = int(cfg.runs), cfg.trainer.get("max_epochs")
    if cfg.compare.get("tune"):  # the tune's trials and finalists train first
        from regnn.experiments.compare_sweep import tune_budget

        b = tune_budget(cfg)
        runs += b["trials"] * b["seeds"] + (b["finalists"] + 1) * b["finalist_seeds"]
    t0 = time.perf_counter()
    try:
        workers, threads = workers_of(cfg)
        per_epoch = seconds_per_epoch(_with_threads(cfg, threads), epochs)
    except Unsupported as e:  # refused on this graph: its cell says why when the sweep reaches it
        return {"status": "refused", "reason": str(e)}
    row = {"status": "pending", "s_per_epoch": per_epoch, "runs": runs, "max_epochs": cap, "workers": workers}
    row["timed_s"] = time.perf_counter() - t0
    rounds = math.ceil(runs / workers)  # runs train `workers` at a time
    row["estimate_s"] = per_epoch * rounds * cap if cap else None
    row["expected_epochs"] = expected_epochs(cap, _after_best(cfg, cap))
    row["expected_s"] = per_epoch * rounds * row["expected_epochs"] if row["expected_epochs"] else None
    return row


def _with_threads(cfg: DictConfig, threads: int) -> DictConfig:
    cfg = cfg.copy()
    with open_dict(cfg):
        cfg.threads = threads
    return cfg


def expected_epochs(cap: int | None, after_best: int | None) -> int | None:
    """The epochs a run is expected to train: twice the epochs early stopping waits after a best one (the
    patience: its best epoch about as far in, then that many more), never more than the cap; the cap where there is
    no early stopping."""
    if not after_best:
        return cap
    return 2 * int(after_best) if cap is None else min(int(cap), 2 * int(after_best))


def _after_best(cfg: DictConfig, cap: int | None) -> int | None:
    """The epochs early stopping waits after a best one, as the trainer's stopping rule reads the config."""
    from regnn.spec import training_of

    options = training_of(cfg)
    rule = options.stop_rule() if cfg.trainer.name != "minibatch" else options.stop_rule(int(cap or 0))
    return rule.epochs_after_best


def fit_budget(rows: dict[str, dict], budget_min: float | None) -> None:
    """Marks the pending models whose expected time does not fit in budget_min minutes (cheapest kept first) as
    skipped; ConfigError where none fits (and some is pending), naming the budget the cheapest needs."""
    if budget_min is None:
        return
    left = float(budget_min) * 60
    pending = sorted((_cost(r), m) for m, r in rows.items() if r["status"] == "pending")
    if pending and pending[0][0] > left:
        cost, m = pending[0]
        need = "?" if math.isinf(cost) else f"{math.ceil(cost / 60)}"
        raise ConfigError(
            f"compare.budget={budget_min:g} minutes fits no model: the cheapest, {m}, is expected to take "
            f"{clock(cost)}; give compare.budget={need} or more (or leave it out to train every model)"
        )
    for cost, m in pending:
        if cost <= left:
            left -= cost
        else:
            rows[m] |= {
                "status": "skipped",
                "reason": f"estimated {clock(cost)} does not fit in what is left of compare.budget={budget_min:g} "
                f"minutes ({clock(left)})",
            }


def _cost(row: dict) -> float:
    return row.get("expected_s") or row.get("estimate_s") or math.inf


def clock(seconds: float | None) -> str:
    from regnn.training.progress import clock as fmt

    if seconds is None or math.isinf(seconds):
        return "?"
    return f"{seconds:.1f}s" if seconds < 60 else fmt(seconds)


def table(rows: dict[str, dict]) -> str:
    lines = [
        f"{'model':<14} {'s/epoch':>8} {'runs':>4} {'workers':>7} {'cap':>5} {'expected':>9} {'at most':>9}  status"
    ]
    for m, r in rows.items():
        per = f"{r['s_per_epoch']:.3f}" if r.get("s_per_epoch") is not None else "–"
        live = r["status"] in ("pending", "skipped")
        cost = clock(r.get("estimate_s")) if live else "–"
        exp = clock(r.get("expected_s")) if live else "–"
        status = r["status"] + (f": {r['reason']}" if r.get("reason") else "")
        cap = r.get("max_epochs", "–")
        w = r.get("workers", "–")
        lines.append(f"{m:<14} {per:>8} {r.get('runs', '–')!s:>4} {w!s:>7} {cap!s:>5} {exp:>9} {cost:>9}  {status}")
    pending = [r for r in rows.values() if r["status"] == "pending"]
    total = sum(r.get("expected_s") or 0 for r in pending)
    most = sum(r.get("estimate_s") or 0 for r in pending)
    lines.append(
        f"the comparison: expected ~{clock(total)} (runs stopping at twice their patience, as many at a time as the "
        "workers column says, models one after another), "
        f"at most ~{clock(most)} (every run to the epoch cap)"
    )
    return "\n".join(lines)


def estimate_sweep(config: DictConfig, models: list[str], compose) -> dict[str, dict]:
    """Each model's row (compose(model) gives the job config the sweep will run for it); written to the sweep."""
    c = config.compare
    sweep, dataset = Path(config.hydra.sweep.dir), str(config.dataset.name)
    rows: dict[str, dict] = {}
    earlier = read_estimates(sweep)  # a finished cell keeps the estimate it had, for the table's time note
    for k, m in enumerate(models):
        cell, cfg = cell_dir(sweep, dataset, m), compose(m)
        same_cell(cfg, cell)  # a cell of other settings or another graph: refused now, before anything is written
        if finished(cell):
            rows[m] = {k: v for k, v in earlier.get(m, {}).items() if k in KEPT} | {"status": "done"}
            continue
        log.info("compare: timing %s (%d of %d models, %d epochs)", m, k + 1, len(models), c.estimate_epochs)
        rows[m] = estimate(cfg, int(c.estimate_epochs))
    fit_budget(rows, c.get("budget"))
    log.info("compare: estimates on %s\n%s", dataset, table(rows))
    sweep.mkdir(parents=True, exist_ok=True)
    doc = {"dataset": dataset, "budget_min": c.get("budget"), "models": rows}
    write_text(sweep / ESTIMATES, json.dumps(doc, indent=2) + "\n")
    return rows
