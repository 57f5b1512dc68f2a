"""What predict.py checks before it trusts a run and before it writes: it only reads a run, writes only into a
folder of its own that it holds for the time it writes (regnn.runs.claim), and takes the model only where the
run's files are the ones training wrote (regnn.runs.integrity) and its scores are the run's own."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from regnn.errors import ConfigError, DataError
from regnn.runs import checkpoint, claim, identity, integrity, io_safe

log = logging.getLogger("regnn")
# predict.yaml's keys; anything else (+dataset=..., +model=...) would be silently ignored: the run decides them
KNOWN_KEYS = {
    "run",
    "ensemble",
    "embeddings",
    "dataset_path",
    "inference",
    "device",
    "threads",
    "check_scores",
    "allow_missing",
    "explain",
    "changed_graph",
    "paths",
}
BOOL_KEYS = ("ensemble", "embeddings", "check_scores", "allow_missing", "explain", "changed_graph")
SCORE_TOLERANCE = 1e-6  # the recorded and recomputed Micro-F1 of the same weights on the same graph agree to this
CHECKED_SCORES = ("train_micro_f1", "val_micro_f1", "test_micro_f1")


def refuse_unknown_keys(cfg: DictConfig) -> None:
    extra = sorted(set(cfg.keys()) - KNOWN_KEYS)
    refuse_non_booleans(cfg)
    if extra:
        raise ConfigError(
            f"predict.py takes no {', '.join(extra)} (given with +{extra[0]}=...): the model, the dataset and "
            "every training setting come from the run's config.yaml; for a custom graph of the same schema use "
            f"dataset_path=; known keys: {', '.join(sorted(KNOWN_KEYS - {'paths'}))}"
        )


def non_boolean(options, none_ok: bool = True) -> str | None:
    """The first yes/no option given as anything but true or false ("false", "no", 0 from Python: a string would
    count as true), as `key=value`; None where there is none. none_ok: a key set to None counts as not given."""
    for k in BOOL_KEYS:
        if k in options and not isinstance(options[k], bool) and not (none_ok and options[k] is None):
            return f"{k}={options[k]!r}"
    return None


def refuse_non_booleans(cfg) -> None:
    bad = non_boolean(cfg)
    if bad:
        raise ConfigError(f"{bad} must be true or false (in Python: True or False, not a string)")


def resolved(raw, what: str = "run") -> Path:
    """raw as an absolute path; ConfigError (one line) for a link loop or a path that cannot be resolved."""
    try:
        p = Path(str(raw)).expanduser().resolve()
        p.exists()  # a link loop raises here on Pythons where resolve() does not
    except (OSError, RuntimeError) as e:
        raise ConfigError(
            f"{what}={raw} cannot be resolved ({getattr(e, 'strerror', None) or e}); a link loop?"
        ) from None
    return p


def cell_root(run: Path) -> Path:
    """The outermost cell folder that holds run (a cell, a run of it, a meta-path sub-cell or its run)."""
    p = run
    if p.parent.name == "runs":
        p = p.parent.parent
    if p.parent.name == "metapaths":
        p = p.parent.parent
    return p


def refuse_output_inside(out_dir, run, tool: str = "predict") -> None:
    """ConfigError when the output folder is the run's cell folder or inside it: predict.py and explain.py never
    write in a run."""
    cell, out = cell_root(resolved(run)), resolved(out_dir, "hydra.run.dir")
    if out == cell or cell in out.parents:
        raise ConfigError(
            f"hydra.run.dir={out_dir} is inside the run's cell folder {cell}; {tool}.py never writes into a "
            f"run: choose a folder outside it (the default is outputs/{tool}/<graph>/<model>/<time>)"
        )


def enclosing_cell(path: Path) -> Path | None:
    """The cell folder (config.yaml and runs/, or results.json) that path is or lies in, None where there is
    none."""
    for p in (path, *path.parents):
        if (p / "config.yaml").is_file() and ((p / "runs").is_dir() or (p / "results.json").is_file()):
            return p
    return None


def refuse_inside_a_cell(out_dir, key: str, tool: str) -> None:
    """ConfigError when an output folder is a trained cell or lies inside one: its files would be taken for the
    cell's (runs list would list them as cells of the graph)."""
    cell = enclosing_cell(resolved(out_dir, key))
    if cell is not None:
        raise ConfigError(
            f"{key}={out_dir} lies inside the trained cell {cell}; {tool}.py never writes into a cell: choose a "
            "folder outside it (leave the key out for the default)"
        )


def argv_refusal(argv: list[str], tool: str = "predict") -> str | None:
    """The refusal of an output folder inside the run, read from the command line before Hydra writes into that
    folder (its .hydra/ and log); None when it is elsewhere or not given there."""
    given = {}
    for a in argv:
        key, eq, value = a.lstrip("+").partition("=")
        if eq and key == "hydra.output_subdir" and (Path(value).is_absolute() or ".." in Path(value).parts):
            return (
                f"hydra.output_subdir={value} would put Hydra's files outside the output folder (perhaps "
                "into the run); give a name inside it, or leave it as it is (.hydra)"
            )
        if eq and key in ("run", "hydra.run.dir") and "${" not in value:
            given[key] = value
    if len(given) < 2:
        return None
    try:
        refuse_output_inside(given["hydra.run.dir"], given["run"], tool)
    except ConfigError as e:
        return str(e)
    return None


@contextlib.contextmanager
def held(out_dir: Path):
    """Holds out_dir for this prediction while it writes: two predictions never mix their files in one folder,
    nor a prediction with a training."""
    out_dir.mkdir(parents=True, exist_ok=True)
    claim.acquire(
        out_dir,
        doing="written",
        fix="wait for it to finish, or give this prediction another folder (hydra.run.dir=<folder>)",
    )
    try:
        yield
    finally:
        claim.release(out_dir)


def trained_config(cell: Path, dataset_path: str | None) -> DictConfig:
    """The cell's config.yaml (dataset.path replaced by dataset_path); DataError (one line) when it is unreadable
    or not a training config."""
    f = cell / "config.yaml"
    try:
        cfg = OmegaConf.load(f)
    except Exception as e:  # noqa: BLE001  (yaml and omegaconf raise their own errors for damaged text)
        why = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise DataError(f"{f} is not readable YAML ({why}); restore the config the cell was trained with") from None
    if not isinstance(cfg, DictConfig) or not all(isinstance(cfg.get(k), DictConfig) for k in ("model", "dataset")):
        raise DataError(f"{f} is not a training config (model and dataset sections); restore the cell's config")
    if dataset_path is not None:
        if cfg.dataset.get("format") != "custom":
            raise ConfigError(
                f"dataset_path= replaces a custom graph's files; {cell} was trained on "
                f"{cfg.dataset.name}, read from its own folder"
            )
        # absolute, links not followed: the description's tables are read beside it as it is named, as in training
        cfg.dataset.path = str(Path(dataset_path).expanduser().absolute())
    elif cfg.dataset.get("format") == "custom":
        # a path given relative to where training ran: the absolute one the cell recorded (data.json), never the
        # same words read from another folder
        trained_at = (io_safe.read_json(cell / identity.DATA_FILE, set_aside=False) or {}).get("path")
        if not Path(str(cfg.dataset.get("path"))).is_absolute() and trained_at:
            cfg.dataset.path = str(trained_at)
        if not Path(str(cfg.dataset.path)).exists():
            raise DataError(
                f"the graph {cell} trained on is no longer at {cfg.dataset.path}; where it moved, give its new "
                "place with predict.py's dataset_path=<folder> (explain.py reads the graph where it trained: move "
                "it back)"
            )
    return cfg


def check_config(cell: Path, run_dir: Path, cfg: DictConfig, meta: dict) -> None:
    """DataError when config.yaml computes other settings than the run's model.json records."""
    try:
        plain = OmegaConf.to_container(cfg, resolve=True)
    except Exception as e:  # noqa: BLE001  (an interpolation that does not resolve)
        raise DataError(f"{cell / 'config.yaml'} does not resolve ({str(e).splitlines()[0][:160]})") from None
    integrity.check_config(cell, run_dir, meta, plain)


def run_record(run_dir: Path) -> dict | None:
    """The run's results.json, read only (a malformed one is left as it is)."""
    return io_safe.read_json(run_dir / "results.json", io_safe.is_run_record, set_aside=False)


def check_scores(run_dir: Path, got: dict, device_kind: str) -> None:
    """DataError when the scores recomputed from the run's weights differ from the ones it recorded: the weights
    or the graph are not the ones it trained on."""
    rec = run_record(run_dir)
    if rec is None or "failed" in rec:
        log.warning("predict: %s has no results.json of a finished run: its scores cannot be compared", run_dir)
        return
    diff = [
        f"{k} {got[k]:.6f} now, {rec[k]:.6f} recorded"
        for k in CHECKED_SCORES
        if k in got and io_safe.is_number(rec.get(k)) and abs(got[k] - rec[k]) > SCORE_TOLERANCE
    ]
    if not diff:
        return
    trained_on = str(rec.get("device", "cpu")).split(" ")[0]
    if trained_on != device_kind:  # another device's kernels may round a borderline node the other way
        log.warning(
            "predict: %s: %s (trained on %s, predicted on %s)", run_dir, "; ".join(diff), trained_on, device_kind
        )
        return
    raise DataError(
        f"{run_dir}: the saved model does not reproduce the run's scores ({'; '.join(diff)}) on the graph it "
        "trained on: its files are not the ones training wrote, or the code computes otherwise than it did; "
        "train it again"
    )


def check_place(run_dir: Path, rec: dict) -> None:
    """DataError when a run folder holds another run's files: runs/run_XX's results.json and model.json must both
    say run XX, with one seed."""
    try:
        index = int(run_dir.name.removeprefix("run_"))
    except ValueError:
        return
    meta = io_safe.read_json(run_dir / checkpoint.META_FILE, lambda d: isinstance(d, dict), set_aside=False) or {}
    said = [(f, r.get("run"), r.get("seed")) for f, r in (("results.json", rec), (checkpoint.META_FILE, meta)) if r]
    for f, run, seed in said:
        if run != index or seed != rec.get("seed"):
            raise DataError(
                f"{run_dir / f} is of run {run} (seed {seed}), not of the folder's run {index} (seed "
                f"{rec.get('seed')}): the folder holds another run's files; put each run's files back in its "
                "own folder, or train the cell again"
            )


def missing_models(runs: list[tuple[Path, dict]]) -> list[Path]:
    return [d for d, _ in runs if not (d / checkpoint.MODEL_FILE).exists()]
