"""The only place that reads a DictConfig: load data, build models, train `runs` seeds, write results."""
from __future__ import annotations

import logging
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import dgl
import numpy as np
import pandas as pd
import torch
from omegaconf import DictConfig, OmegaConf

from regnn.claim import claim
from regnn.config import validate
from regnn.data import load_dataset
from regnn.data.features import FEATS_TYPES
from regnn.errors import ConfigError
from regnn.evaluation.clustering import cluster_scores
from regnn.evaluation.metrics import mean_std
from regnn.io_safe import read_json, write_json, write_text
from regnn.loggers import make_logger
from regnn.models import ARCHS, BACKBONES
from regnn.training.device import select_device
from regnn.training.perf import keep_freed_memory
from regnn.training.seed import seed_everything
from regnn.training.divergence import Diverged, failed_record, finished, summary_metrics
from regnn.training.trainer import Progress, RunResult, train_run

log = logging.getLogger("regnn")
# torch's own thread count (one per core), read before any job sets its own: a multirun process or GCN-M's
# meta-path jobs call train() again after an earlier call lowered it
DEFAULT_THREADS = torch.get_num_threads()

SUMMARY_KEYS = ("test_micro_f1", "test_macro_f1", "val_micro_f1", "val_macro_f1", "best_epoch", "epochs",
                "train_time_s", "epoch_time_s", "nmi", "ari")


def model_kwargs(mcfg: DictConfig) -> dict:
    """Plain keyword arguments for the model class from the model config (all but name and arch)."""
    m = OmegaConf.to_container(mcfg, resolve=True)
    m.pop("name", None)
    m.pop("arch", None)
    if "relation" in m:  # RE-GNN: the relation block becomes flat arguments
        rel = m.pop("relation")
        m |= {"scale": rel.get("scale", 1.0), "edge_embeddings": rel["edge_embeddings"],
              "self_loop_embeddings": rel["self_loop_embeddings"], "relation_slope": rel.get("negative_slope", 0.01)}
    return m


def arch_of(mcfg: DictConfig):
    name = mcfg.get("arch", "regnn")
    if name not in ARCHS:
        raise ConfigError(f"model.arch={name!r} is not valid: known architectures {sorted(ARCHS)}")
    return ARCHS[name]


def build_model(mcfg: DictConfig, data, inputs):
    return arch_of(mcfg).build(inputs, data.in_dims, data.num_classes, **model_kwargs(mcfg))


def load_data(dcfg: DictConfig):
    d = OmegaConf.to_container(dcfg, resolve=True)
    d.pop("display_name", None)
    d.pop("metapaths", None)  # read by the meta-path models (model.metapaths), not by the loader
    return load_dataset(**d)


# the parts of a config that decide what a run computes (paths, logging and resume do not)
COMPUTE_KEYS = ("dataset", "model", "optimizer", "trainer", "seed", "runs", "deterministic", "clustering",
                "precision")


def _computation(cfg) -> dict:
    c = {k: cfg.get(k) for k in COMPUTE_KEYS}
    c["precision"] = c["precision"] or "fp32"  # configs written before the option existed ran in float32
    c["dataset"] = {k: v for k, v in (c["dataset"] or {}).items() if k not in ("dir", "path", "verify", "metapaths")}  # meta-paths: in model.metapaths where used
    if c["dataset"].get("feature_norm", "none") == "none":  # the default computes what configs without the key did
        c["dataset"].pop("feature_norm", None)
    if isinstance(c["model"], dict) and c["model"].get("metapath_select_runs", 0) is None:
        c["model"] = {k: v for k, v in c["model"].items() if k != "metapath_select_runs"}  # unset = before it existed
    return c


def _check_same_computation(cfg: DictConfig, out_dir: Path) -> int | None:
    """A resumed cell must have been computed with the same settings; say which differ otherwise.

    Returns None when they agree (or nothing is stored), or the stored number of runs when only `runs` differs
    and more are asked for now: the cell is then extended, its finished runs kept (see _reused_run).
    """
    stored = _stored_config(out_dir)
    if stored is None:
        return None
    stored = _computation(stored)
    now = _computation(OmegaConf.to_container(cfg, resolve=True))
    diff = [k for k in COMPUTE_KEYS if stored.get(k) != now.get(k)]
    if diff == ["runs"] and int(now["runs"]) > int(stored["runs"]):
        return int(stored["runs"])
    if diff:
        raise ConfigError(f"{out_dir} holds results computed with other settings ({', '.join(diff)} differ); "
                          "move that directory away or choose another experiment directory")
    return None


def _stored_config(out_dir: Path) -> dict | None:
    """The config.yaml an earlier training of out_dir wrote, or None when there is none, or it is empty or
    unreadable (a write cut short): then there is nothing to compare with."""
    path = out_dir / "config.yaml"
    try:
        stored = OmegaConf.to_container(OmegaConf.load(path), resolve=False) if path.stat().st_size else None
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001  (yaml and omegaconf raise their own errors for damaged text)
        stored = None
    if not isinstance(stored, dict) or not stored:
        log.warning("%s is empty or unreadable; treated as absent", path)
        return None
    return stored


def _write_config(cfg: DictConfig, out_dir: Path) -> None:
    write_text(out_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))


def _run_record(r: RunResult, run: int) -> dict:
    epoch_times = [h["epoch_time_s"] for h in r.history]
    return {"run": run, "seed": r.seed, "best_epoch": r.best_epoch, "epochs": r.epochs, **r.metrics,
            "train_time_s": r.train_time_s, "epoch_time_s": float(np.median(epoch_times)) if epoch_times else None}


def train(cfg: DictConfig, out_dir: str | Path) -> dict:
    """Trains cfg.runs models and writes everything under out_dir; returns the summary (also results.json).

    An empty or unreadable results.json or config.yaml (a write cut short) counts as absent: the cell is trained
    again, its finished runs kept."""
    out_dir = Path(out_dir)
    validate(cfg, BACKBONES, FEATS_TYPES)
    summary_path = out_dir / "results.json"
    if not cfg.resume:
        if read_json(summary_path) is not None:
            raise ConfigError(f"{out_dir} already holds results.json; refusing to overwrite it. Choose another "
                              "hydra.run.dir, or set resume=true to keep it and skip the run")
        if any((out_dir / "runs").glob("run_*/results.json")):
            raise ConfigError(f"{out_dir} holds finished runs of an unfinished training; set resume=true to keep "
                              "them and train the rest, or choose another hydra.run.dir")
        if _stored_config(out_dir) is not None:
            raise ConfigError(f"{out_dir} already holds the config.yaml of an earlier training; refusing to overwrite "
                              "it. Choose another hydra.run.dir, or set resume=true to continue that training (its "
                              "settings are checked)")
    out_dir.mkdir(parents=True, exist_ok=True)
    with claim(out_dir):
        stored = read_json(summary_path)
        if stored is not None:
            stored_runs = _check_same_computation(cfg, out_dir)
            if stored_runs is None:
                log.info("%s already holds results; skipped (resume=true)", out_dir)
                return stored
            kept = _unused_path(out_dir / f"results.{stored_runs}runs.json")
            summary_path.rename(kept)
            log.info("%s: extending %d runs to %d (the %d finished runs are kept; their summary moved to %s)",
                     out_dir, stored_runs, cfg.runs, stored_runs, kept.name)
        elif cfg.resume:
            _check_same_computation(cfg, out_dir)  # an unfinished cell: its config.yaml is written at the start
        if cfg.trainer.name == "minibatch":  # neighbour-sampling trainer (section at the end of this file)
            return _train_minibatch(cfg, out_dir)
        if cfg.model.get("metapath") == "best":
            return _train_best_metapath(cfg, out_dir)
        return _train_fullbatch(cfg, out_dir, summary_path)


def _train_fullbatch(cfg: DictConfig, out_dir: Path, summary_path: Path) -> dict:
    keep_freed_memory(every_size=True)
    threads = int(cfg.threads) if cfg.threads else DEFAULT_THREADS  # the job's CPU budget
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    device, why = select_device(str(cfg.device), cfg.model.get("arch", "regnn"))
    label = f"{cfg.model.name} on {cfg.dataset.name}"
    log.info("%s: device %s, %d threads, %d runs from seed %d", label, why, torch.get_num_threads(), cfg.runs, cfg.seed)

    t0 = time.perf_counter()
    data = load_data(cfg.dataset)
    g = data.graph
    log.info("data: %s, %d nodes of %d types, %d edges of %d relation types (%s), %d %s classes, "
             "train/val/test %d/%d/%d (%.1fs)", data.name, g.num_nodes(), len(g.ntypes), g.num_edges(),
             len(g.etypes), ", ".join(g.etypes), data.num_classes, data.target,
             *(len(data.splits[s]) for s in ("train", "val", "test")), time.perf_counter() - t0)
    inputs = arch_of(cfg.model).prepare(data, device, **model_kwargs(cfg.model))
    feats = {t: x.to(device) for t, x in data.features.items()}
    labels = data.labels.to(device)
    splits = {s: i.to(device) for s, i in data.splits.items()}

    plain_cfg = OmegaConf.to_container(cfg, resolve=True)
    logger = make_logger(out_dir=out_dir, group=f"{cfg.dataset.name}-{cfg.model.name}", config=plain_cfg,
                         **{k: v for k, v in plain_cfg["logger"].items()})
    _write_config(cfg, out_dir)  # lets a resume check the runs
    run_dir = lambda run: out_dir / "runs" / f"run_{run:02d}"  # noqa: E731
    kept = {run: r for run in range(cfg.runs) if cfg.resume and (r := _reused_run(run_dir(run), cfg.seed + run))}
    pending = [run for run in range(cfg.runs) if run not in kept]
    workers, worker_threads = _workers(cfg, device, len(pending), threads, data.graph.num_edges())
    torch.set_num_threads(worker_threads)  # the runs trained here use what a worker would
    model = build_model(cfg.model, data, inputs)  # for its size and relation names; every run builds its own
    log.info("model: %s, %d parameters", cfg.model.name, sum(p.numel() for p in model.parameters()))
    peak_gb = 0.0
    if workers > 1:  # independent runs side by side, one process each at a time; they write runs/run_XX/
        log.info("%d runs in %d worker processes of %d thread%s each", len(pending), workers, worker_threads,
                 "s" * (worker_threads > 1))
        peak_gb = _train_in_workers(cfg, out_dir, pending, workers, worker_threads)
    elif pending and worker_threads != threads:
        log.info("each run uses %d thread%s, as the other runs of this cell", worker_threads, "s" * (worker_threads > 1))
    records, weights = [], []
    for run in range(cfg.runs):
        seed = cfg.seed + run
        if run in kept or workers > 1:
            reused = kept.get(run) or _reused_run(run_dir(run), seed)
            if reused is None:
                raise RuntimeError(f"{run_dir(run)} holds no results after its worker finished")
            rec, layers = reused
            records.append(rec)
            if "failed" not in rec:
                weights.append({"run": run, "seed": seed, "layers": layers})
            if run in kept:
                log.info("run %d/%d seed %d: finished earlier, kept (%s)", run + 1, cfg.runs, seed,
                         f"failed: {rec['failed']}" if "failed" in rec else f"test Micro-F1 {rec['test_micro_f1']:.2f}")
            continue
        rec, result = _train_one(cfg, out_dir, run, data, inputs, feats, labels, splits, device, logger,
                                 Progress(f"[{label} run {run + 1}/{cfg.runs}]"))
        records.append(rec)
        if result is not None:
            weights.append({"run": run, "seed": seed, "layers": result.relation_weights})

    summary = {
        "dataset": str(cfg.dataset.name), "model": str(cfg.model.name), "runs": int(cfg.runs),
        "seeds": [r["seed"] for r in records],
        **_outcome(records, SUMMARY_KEYS),
        "per_run": records,
        "num_parameters": int(sum(p.numel() for p in model.parameters())),
        "relation_names": list(getattr(model, "relation_names", [])),
        "environment": {"device": str(device), "device_note": why,
                        "threads": worker_threads, "workers": workers,
                        "torch": torch.__version__, "dgl": dgl.__version__, "python": platform.python_version(),
                        "machine": platform.machine()},
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": time.perf_counter() - t0,
        # of this process so far (a multirun process holds several cells), or of its largest worker
        "peak_rss_gb": max(_peak_rss_gb(), peak_gb),
    }
    write_json(out_dir / "relation_weights.json", weights)  # config.yaml was written before the first run
    write_json(summary_path, summary)
    logger.finish(summary)
    m = summary["metrics"]
    if m:
        log.info("%s (%d runs%s): Macro-F1 %.2f ± %.2f | Micro-F1 %.2f ± %.2f  -> %s", label,
                 summary["finished_runs"], _failed_note(summary), m["test_macro_f1"]["mean"], m["test_macro_f1"]["std"],
                 m["test_micro_f1"]["mean"], m["test_micro_f1"]["std"], out_dir)
    return summary


def _outcome(records: list[dict], keys) -> dict:
    """Summary fields: metrics over the finished runs only, and how many runs finished and failed."""
    ok = finished(records)
    return {"metrics": summary_metrics(records, keys, mean_std), "finished_runs": len(ok),
            "failed_runs": len(records) - len(ok)}


def _failed_note(summary: dict) -> str:
    return f"; {summary['failed_runs']} more diverged and are left out" if summary.get("failed_runs") else ""


def _train_one(cfg: DictConfig, out_dir: Path, run: int, data, inputs, feats, labels, splits, device, logger,
               progress: Progress):
    """Trains, scores and saves run `run` (seed cfg.seed + run) in out_dir/runs/run_XX/; returns (record, result)."""
    seed = cfg.seed + run
    seed_everything(seed, cfg.deterministic)
    model = build_model(cfg.model, data, inputs).to(device)
    logger.start_run(run, seed)
    try:
        result = train_run(model, inputs, feats, labels, splits, seed=seed,
                           optimizer=OmegaConf.to_container(cfg.optimizer, resolve=True),
                           max_epochs=cfg.trainer.max_epochs, patience=cfg.trainer.patience,
                           precision=str(cfg.precision), on_epoch=logger.log_epoch, progress=progress)
    except Diverged as e:
        progress.close()
        return _save_failed(out_dir / "runs" / f"run_{run:02d}", failed_record(run, seed, e), cfg.runs, logger), None
    rec = _run_record(result, run)
    if cfg.clustering.enabled and result.embeddings is not None:
        test = data.splits["test"]
        rec |= cluster_scores(result.embeddings[test].numpy(), data.labels[test].numpy(), data.num_classes,
                              repeats=cfg.clustering.repeats, seed=cfg.clustering.seed)
    logger.end_run(rec)
    _save_run(out_dir / "runs" / f"run_{run:02d}", rec, result, data, cfg.save_embeddings)
    log.info("run %d/%d seed %d: test Micro-F1 %.2f Macro-F1 %.2f%s (best epoch %d of %d, %.1fs)", run + 1,
             cfg.runs, seed, rec["test_micro_f1"], rec["test_macro_f1"],
             f" NMI {rec['nmi']:.2f} ARI {rec['ari']:.2f}" if "nmi" in rec else "", rec["best_epoch"],
             rec["epochs"], rec["train_time_s"])
    return rec, result


# -- independent runs in parallel worker processes (`workers`, conf/train.yaml) --------------------------------
MAX_AUTO_WORKERS = 4
MIN_AUTO_EDGES = 20_000  # a worker starts in ~3 s (imports); the synthetic test graph's runs take under 1 s


def _workers(cfg: DictConfig, device, pending: int, threads: int, num_edges: int) -> tuple[int, int]:
    """(worker processes, torch threads per run) for `pending` runs within a budget of `threads` CPU threads.

    auto: on CPU with the `none` logger, min(budget, runs, MAX_AUTO_WORKERS) runs side by side, each with
    budget // that many threads: a small graph keeps two cores far busier as two one-thread runs than as one
    two-thread run. Not on a toy graph (under MIN_AUTO_EDGES edges), whose runs take less than a worker's
    start. The threads per run follow from the configuration, not from how many runs are left, so a resumed
    cell trains its remaining runs with the thread count of its first ones (the float rounding of a run depends
    on it). Extending a cell keeps it too unless its first runs were fewer than the thread budget (e.g. 1 run
    on 2 threads, then 3 runs: 1 thread each); environment.threads in results.json records the count.
    """
    w = cfg.get("workers", 1)
    if str(w) == "auto":
        if torch.device(device).type != "cpu" or cfg.logger.name != "none" or num_edges < MIN_AUTO_EDGES:
            return 1, threads
        w = min(threads, MAX_AUTO_WORKERS, int(cfg.runs))
    w = min(int(w), int(cfg.runs))
    per_run = max(1, threads // w)
    return max(1, min(w, pending)), per_run


def _train_in_workers(cfg: DictConfig, out_dir: Path, pending: list[int], workers: int, threads: int) -> float:
    """Trains the pending runs in `workers` spawned processes, each taking the next run when it is free; every run
    is written to runs/run_XX/ as in a sequential training (so an interrupted job resumes the same way) and the
    workers' log lines reach this process's handlers (console, train.log). Returns the largest worker's peak
    memory in GB."""
    import logging.handlers
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context("spawn")  # fresh interpreters: no OpenMP pool or DGL state inherited through fork
    queue = ctx.Queue()
    listener = logging.handlers.QueueListener(queue, _Relay())
    listener.start()
    plain = OmegaConf.to_container(cfg, resolve=True)
    peak = 0.0
    # an executor, not multiprocessing.Pool: a worker that dies (killed for memory) or fails to start breaks it
    # with an error here, where a Pool would quietly replace the worker and wait for its lost run forever
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(plain, str(out_dir), threads, queue, os.getpid()))
    try:
        for done in as_completed([pool.submit(_worker_run, run) for run in pending]):
            peak = max(peak, done.result())
    except BrokenProcessPool as e:
        raise RuntimeError(f"a worker process of {out_dir} died or could not start ({e}); the runs it finished "
                           "are kept: resume=true trains the rest, workers=1 trains them in this process") from e
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # workers exit normally: their last log records arrive
        listener.stop()
    return peak


class _Relay(logging.Handler):
    """Hands a worker's log record to the logger of the same name here, so it goes where this process's go."""

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger(record.name).handle(record)


_WORKER: dict = {}


def _die_with_parent(parent: int) -> None:
    """On Linux, this worker gets SIGTERM when the job that started it exits, killed included. Without it a
    killed job's workers trained on as orphans for minutes, holding the cores a restarted job needed (their runs
    were written, complete, and a resumed job kept them). Elsewhere nothing changes."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the job was gone before the call above
        os._exit(1)


def _worker_init(plain_cfg: dict, out_dir: str, threads: int, queue, parent: int) -> None:
    import logging.handlers

    _die_with_parent(parent)

    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(queue)]
    root.setLevel(logging.INFO)
    keep_freed_memory(every_size=True)
    torch.set_num_threads(threads)
    cfg = OmegaConf.create(plain_cfg)
    device, _ = select_device(str(cfg.device), cfg.model.get("arch", "regnn"))
    data = load_data(cfg.dataset)
    inputs = arch_of(cfg.model).prepare(data, device, **model_kwargs(cfg.model))
    _WORKER.update(cfg=cfg, out_dir=Path(out_dir), data=data, inputs=inputs, device=device,
                   feats={t: x.to(device) for t, x in data.features.items()}, labels=data.labels.to(device),
                   splits={k: i.to(device) for k, i in data.splits.items()})


def _worker_run(run: int) -> float:
    w = _WORKER
    _train_one(w["cfg"], w["out_dir"], run, w["data"], w["inputs"], w["feats"], w["labels"], w["splits"], w["device"],
               make_logger("none", w["out_dir"], "", {}), Progress("", enabled=False))
    return _peak_rss_gb()

# --- meta-path baselines: GCN-M / GAT-M report their best single meta-path graph ---------------------
def _train_best_metapath(cfg: DictConfig, out_dir: Path) -> dict:
    """One job per meta-path (out_dir/metapaths/<name>/, complete results each); the one with the best mean
    validation Micro-F1 (then Macro-F1) becomes this cell's results.json, with every meta-path's scores.

    model.metapath_select_runs=k (k < runs) chooses on the first k seeds of every meta-path and then extends only
    the chosen one to all runs: for meta-path graphs too dense to train every one of them `runs` times (DBLP's
    APTPA and APVPA). The choice is still made on validation alone; the others keep their k runs.
    """
    names = list(cfg.model.metapaths or [])
    if not names:
        raise ConfigError("model.metapath=best needs meta-paths to choose from: set dataset.metapaths")
    k = cfg.model.get("metapath_select_runs") or cfg.runs
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= cfg.runs:
        raise ConfigError(f"model.metapath_select_runs must be a whole number from 1 to runs ({cfg.runs}), or null "
                          f"for all runs; got {k!r}")
    t0 = time.perf_counter()
    per_path, selected_on = {}, {}
    for name in names:
        path_dir = out_dir / "metapaths" / name
        done = path_dir / "results.json"
        stored = read_json(done) if k < cfg.runs else None
        if stored is not None and stored.get("runs", 0) > k:
            per_path[name] = stored  # chosen and extended before an interruption
        else:
            per_path[name] = train(OmegaConf.merge(cfg, {"model": {"metapath": name}, "runs": k}), path_dir)
        # the choice: mean validation scores of the first k runs, from the summary's per-run records
        recs = [rec for rec in finished(per_path[name]["per_run"]) if rec["run"] < k]
        selected_on[name] = tuple(float(np.mean([rec[m] for rec in recs])) if recs else -np.inf
                                  for m in ("val_micro_f1", "val_macro_f1"))  # every run diverged: never chosen
    best = max(names, key=selected_on.__getitem__)
    if k < cfg.runs:  # the chosen meta-path's k runs are kept and extended to all runs
        log.info("%s on %s: %s chosen on %d runs per meta-path; training its other %d runs", cfg.model.name,
                 cfg.dataset.name, best, k, cfg.runs - k)
        sub = OmegaConf.merge(cfg, {"model": {"metapath": best}, "resume": True})
        per_path[best] = train(sub, out_dir / "metapaths" / best)
    summary = {**per_path[best], "metapath": best,
               "metapath_selected_by": "mean validation Micro-F1 (then Macro-F1)" + (
                   f" over the first {k} runs of every meta-path" if k < cfg.runs else ""),
               "metapath_scores": {n: {"runs": per_path[n]["runs"],
                                       **{m: per_path[n]["metrics"].get(m) for m in
                                          ("val_micro_f1", "val_macro_f1", "test_micro_f1", "test_macro_f1")}}
                                   for n in names},
               "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "wall_time_s": time.perf_counter() - t0}
    _write_config(cfg, out_dir)
    write_json(out_dir / "results.json", summary)
    log.info("%s on %s: best meta-path by validation %s (%s)", cfg.model.name, cfg.dataset.name, best,
             ", ".join(f"{n} val {selected_on[n][0]:.2f} test "
                       f"{per_path[n]['metrics'].get('test_micro_f1', {'mean': float('nan')})['mean']:.2f}"
                       for n in names))
    return summary


def _reused_run(run_dir: Path, seed: int) -> tuple[dict, list] | None:
    """(record, relation weights) of a run finished by an earlier, interrupted or smaller training of this cell
    (its settings were checked against config.yaml), or None when the run has to be trained."""
    path = run_dir / "results.json"
    rec = read_json(path)  # missing, empty or unreadable: the run is trained again
    if rec is None:
        return None
    if rec.get("seed") != seed:
        raise ConfigError(f"{path} was trained with seed {rec.get('seed')}, this run needs seed {seed}; "
                          "move that directory away or choose another hydra.run.dir")
    return rec, rec.pop("relation_weights", [])


def _unused_path(path: Path) -> Path:
    """path, or path with .1, .2, ... before its suffix when taken: nothing is ever overwritten."""
    k, p = 0, path
    while p.exists():
        k += 1
        p = path.with_name(f"{path.stem}.{k}{path.suffix}")
    return p


def _save_failed(run_dir: Path, rec: dict, runs: int, logger) -> dict:
    """A diverged run: recorded as failed (kept on resume: the same seed diverges again), never scored."""
    log.error("run %d/%d seed %d failed: %s", rec["run"] + 1, runs, rec["seed"], rec["failed"])
    logger.end_run(rec)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(run_dir / "results.json", {**rec, "relation_weights": []})
    return rec


def _save_run(run_dir: Path, rec: dict, result: RunResult, data, save_embeddings: bool) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text(run_dir / "history.csv", pd.DataFrame(result.history).to_csv(index=False))
    if save_embeddings and result.embeddings is not None:
        test = data.splits["test"]
        np.savez_compressed(run_dir / "embeddings.npz", node_ids=test.numpy(),
                            embeddings=result.embeddings[test].numpy(), labels=data.labels[test].numpy())
    # results.json last (and whole): its presence marks a finished run (_reused_run)
    write_json(run_dir / "results.json", {**rec, "relation_weights": result.relation_weights})


# -- mini-batch training with neighbour sampling, optionally one process per device under torchrun ----
MINIBATCH_KEYS = ("test_acc", "val_acc", "test_micro_f1", "test_macro_f1", "val_micro_f1", "val_macro_f1",
                  "best_epoch", "epochs", "train_time_s", "epoch_time_s", "seeds_per_s")


def _peak_rss_gb() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def _train_minibatch(cfg: DictConfig, out_dir: Path) -> dict:
    """Like train(), with regnn.training.minibatch; under torchrun only rank 0 writes anything."""
    from regnn.config import validate_minibatch
    from regnn.models.regnn import REGNN
    from regnn.training.distributed import Dist, param_digest
    from regnn.training.minibatch import EVAL_MODES, train_minibatch_run
    from regnn.training.node_inputs import NodeInputs, SampledREGNN
    from regnn.training.sampling import SampledGraph

    t = cfg.trainer
    validate_minibatch(cfg, EVAL_MODES)
    keep_freed_memory()
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    device, why = select_device(str(cfg.device))
    dist = Dist.from_env(str(t.ddp_backend), device)
    if dist.enabled and device.type == "cuda":
        device = torch.device("cuda", dist.local_rank)
    out_dir = Path(dist.broadcast_object(str(out_dir)))  # every process reports to rank 0's directory
    if not dist.is_main:
        log.setLevel(logging.WARNING)  # one progress stream: rank 0's
    label = f"{cfg.model.name} on {cfg.dataset.name}"
    log.info("%s: mini-batch, device %s, %d threads, %d runs from seed %d%s", label, why, torch.get_num_threads(),
             cfg.runs, cfg.seed, f", process {dist.rank} of {dist.world_size} ({dist.backend})" if dist.enabled else "")
    t0 = time.perf_counter()
    with dist.main_first():  # rank 0 first: ogb writes its processed cache on first use
        data = load_data(cfg.dataset)
    sg = SampledGraph(data)
    load_s = time.perf_counter() - t0
    log.info("data: %s, %d nodes of %d types, %d edges of %d relation types, %d %s classes, train/val/test "
             "%d/%d/%d (%.1fs, peak memory %.2f GB)", data.name, data.graph.num_nodes(), len(data.graph.ntypes),
             data.graph.num_edges(), len(data.graph.etypes), data.num_classes, data.target,
             *(len(data.splits[s]) for s in ("train", "val", "test")), load_s, _peak_rss_gb())
    plain_cfg = OmegaConf.to_container(cfg, resolve=True)
    logger = make_logger(out_dir=out_dir, group=f"{cfg.dataset.name}-{cfg.model.name}", config=plain_cfg,
                         **(plain_cfg["logger"] if dist.is_main else {"name": "none"}))
    eval_fanouts = OmegaConf.to_container(t.eval_fanouts) if t.eval_fanouts is not None else None

    def build():
        inputs = NodeInputs(data.features, embed_dim=int(t.embed_dim))
        regnn = REGNN(in_dims=inputs.in_dims, num_classes=data.num_classes, relation_names=sg.relation_names,
                      num_edge_relations=sg.num_edge_relations, **model_kwargs(cfg.model))
        return SampledREGNN(regnn, inputs, sg.ntypes, sg.offsets, sg.node_type).to(device)

    if dist.is_main:
        _write_config(cfg, out_dir)  # first: lets a resume check the settings of the runs it keeps
    run_dir = lambda run: out_dir / "runs" / f"run_{run:02d}"  # noqa: E731
    # every process keeps the runs rank 0 found finished, so all train the same ones
    kept = dist.broadcast_object({run: r for run in range(cfg.runs)
                                  if cfg.resume and (r := _reused_run(run_dir(run), cfg.seed + run))})
    num_parameters = None  # counted on the first model built (a model holds learnable embeddings of every node)

    def counted(model):
        nonlocal num_parameters
        if num_parameters is None:
            num_parameters = sum(p.numel() for p in model.parameters())
            log.info("model: %s, %d parameters", cfg.model.name, num_parameters)
        return model

    records, weights = [], []
    for run in range(cfg.runs):
        seed = cfg.seed + run
        if run in kept:
            rec, layers = kept[run]
            records.append(rec)
            if "failed" not in rec:
                weights.append({"run": run, "seed": seed, "layers": layers})
            log.info("run %d/%d seed %d: finished earlier, kept (%s)", run + 1, cfg.runs, seed,
                     f"failed: {rec['failed']}" if "failed" in rec else f"test accuracy {rec['test_acc']:.2f}")
            continue
        seed_everything(seed, cfg.deterministic)
        model = counted(build())
        logger.start_run(run, seed)
        try:
            result = train_minibatch_run(
                model, sg, data.labels, data.splits, seed=seed, num_classes=data.num_classes,
                optimizer=OmegaConf.to_container(cfg.optimizer, resolve=True), fanouts=list(t.fanouts),
                batch_size=t.batch_size, eval=t.eval, eval_fanouts=eval_fanouts, eval_batch_size=t.eval_batch_size,
                max_epochs=t.max_epochs, patience=t.patience, max_batches=t.max_batches, num_workers=t.num_workers,
                embed_lr=t.embed_lr, log_every=t.log_every, device=device, dist=dist,
                evaluator=str(cfg.dataset.get("ogb_name", "ogbn-mag")), on_epoch=logger.log_epoch)
        except Diverged as e:
            rec = failed_record(run, seed, e)
            records.append(_save_failed(run_dir(run), rec, cfg.runs, logger) if dist.is_main else rec)
            continue
        rec = _run_record(result, run)
        rec["seeds_per_s"] = float(np.median([h["seeds_per_s"] for h in result.history]))
        rec["peak_rss_gb"] = _peak_rss_gb()
        if dist.enabled:
            rec["ddp"] = {"world_size": dist.world_size, "backend": dist.backend,
                          "param_digests": dist.gather_objects(param_digest(model))}
        logger.end_run(rec)
        records.append(rec)
        weights.append({"run": run, "seed": seed, "layers": result.relation_weights})
        if dist.is_main:
            _save_run(out_dir / "runs" / f"run_{run:02d}", rec, result, data, False)
        log.info("run %d/%d seed %d: test accuracy %.2f (Macro-F1 %.2f), val %.2f (best epoch %d of %d, %.0f "
                 "seeds/s, %.1fs)", run + 1, cfg.runs, seed, rec["test_acc"], rec["test_macro_f1"], rec["val_acc"],
                 rec["best_epoch"], rec["epochs"], rec["seeds_per_s"], rec["train_time_s"])
    if num_parameters is None:  # every run was kept: count one model
        counted(build())
    summary = {
        "dataset": str(cfg.dataset.name), "model": str(cfg.model.name), "trainer": "minibatch",
        "runs": int(cfg.runs), "seeds": [r["seed"] for r in records],
        **_outcome(records, MINIBATCH_KEYS),
        "per_run": records,
        "num_parameters": int(num_parameters),
        "relation_names": list(sg.relation_names),
        "load_time_s": load_s, "peak_rss_gb": _peak_rss_gb(),
        "environment": {"device": str(device), "device_note": why, "threads": torch.get_num_threads(),
                        "processes": dist.world_size, "torch": torch.__version__, "dgl": dgl.__version__,
                        "python": platform.python_version(), "machine": platform.machine()},
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": time.perf_counter() - t0,
        "peak_rss_gb": _peak_rss_gb(),  # of this process so far (a multirun process holds several cells)
    }
    if dist.is_main:
        write_json(out_dir / "relation_weights.json", weights)
        write_json(out_dir / "results.json", summary)
    logger.finish(summary)
    m = summary["metrics"]
    if m:
        log.info("%s (%d runs%s): test accuracy %.2f ± %.2f, %.0f seeds/s, peak memory %.2f GB -> %s", label,
                 summary["finished_runs"], _failed_note(summary), m["test_acc"]["mean"], m["test_acc"]["std"],
                 m["seeds_per_s"]["mean"], summary["peak_rss_gb"], out_dir)
    dist.close()
    return summary
