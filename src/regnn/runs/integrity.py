"""A saved model is what trained, or it is refused.

model.json records the sha256 of model.pt's tensors (names, dtypes, shapes, bytes) and of the settings the cell's
config.yaml computes (regnn.runs.computation, as a resume compares them), with those settings themselves so that a
mismatch names the keys that changed; a resume checkpoint records the digest of everything it holds. Loading
recomputes both and refuses a difference in one line. Weights must also be finite and of the dtype the model
declares: a NaN, an inf or an integer tensor is refused naming the tensor.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import torch

from regnn.errors import DataError
from regnn.runs.computation import computation

log = logging.getLogger("regnn")
_WARNED: set[str] = set()


def _tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().to("cpu")
    if t.is_sparse:
        t = t.coalesce()
        return _tensor_bytes(t.indices()) + _tensor_bytes(t.values())
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def _feed(h, obj, name: str) -> None:
    """Feeds obj into h: tensors by name, dtype, shape and bytes; containers in a fixed order; other leaves by
    type and repr (floats' repr is exact)."""
    if isinstance(obj, torch.Tensor):
        h.update(f"{name}|{obj.dtype}|{tuple(obj.shape)}|{obj.is_sparse}|".encode())
        h.update(_tensor_bytes(obj))
    elif isinstance(obj, np.ndarray):
        h.update(f"{name}|{obj.dtype}|{obj.shape}|".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, dict):
        h.update(f"{name}|dict{len(obj)}|".encode())
        for k in sorted(obj, key=lambda k: (type(k).__name__, str(k))):
            _feed(h, obj[k], f"{name}.{k}")
    elif isinstance(obj, (list, tuple)):
        h.update(f"{name}|{type(obj).__name__}{len(obj)}|".encode())
        for i, v in enumerate(obj):
            _feed(h, v, f"{name}[{i}]")
    else:
        h.update(f"{name}|{type(obj).__name__}|{obj!r}|".encode())


def tensors_digest(obj) -> str:
    """sha256 of a state dict (or any nest of tensors, containers and plain values)."""
    h = hashlib.sha256()
    _feed(h, obj, "")
    return h.hexdigest()


def settings_digest(settings: dict) -> str:
    """sha256 of a config's computation (regnn.runs.computation), as a resume checkpoint's identity holds it."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def model_settings(cfg: dict) -> dict:
    """What a saved model's weights mean: the computation of its cell's config, less `runs` (a cell extended to
    more runs keeps its models)."""
    return {k: v for k, v in computation(cfg).items() if k != "runs"}


def _flat(d, prefix: str = "") -> dict:
    if not isinstance(d, dict):
        return {prefix: d}
    out = {}
    for k, v in d.items():
        out |= _flat(v, f"{prefix}.{k}" if prefix else str(k))
    return out


def changed_keys(recorded: dict, now: dict) -> list[str]:
    """The dotted keys whose values differ between two settings dicts."""
    a, b = _flat(json.loads(json.dumps(recorded, default=str))), _flat(json.loads(json.dumps(now, default=str)))
    return sorted(k for k in set(a) | set(b) if a.get(k, "<absent>") != b.get(k, "<absent>"))


def record(state: dict, config: dict | None) -> dict:
    """What model.json records of a model: its weights' digest and, where the cell's config is known, the settings
    it was trained with and their digest."""
    rec = {"weights_sha256": tensors_digest(state)}
    if config is not None:
        settings = model_settings(config)
        rec |= {"config_sha256": settings_digest(settings), "config": settings}
    return rec


def warn_once(key: str, msg: str, *args) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        log.warning(msg, *args)


def check_weights(path: Path, state: dict, meta: dict) -> None:
    """DataError (one line) when the weights in path are not the ones training recorded in model.json."""
    want = (meta.get("integrity") or {}).get("weights_sha256")
    if want is None:
        warn_once(
            f"w:{path}",
            "%s has no digest in its model.json (saved by an older regnn): its weights cannot be checked",
            path,
        )
        return
    if tensors_digest(state) != want:
        raise DataError(
            f"{path} is not the file training wrote (its tensors' sha256 differs from the one model.json "
            "records): it was damaged or edited; copy the run folder again whole, or train the run again"
        )


def check_config(cell: Path, run_dir: Path, meta: dict, config: dict) -> None:
    """DataError (one line) when the cell's config.yaml computes other settings than the ones model.json records."""
    integ = meta.get("integrity") or {}
    if "config_sha256" not in integ:
        warn_once(
            f"c:{run_dir}",
            "%s records no config digest (saved by an older regnn): an edit of %s since training cannot be seen",
            Path(run_dir) / "model.json",
            Path(cell) / "config.yaml",
        )
        return
    now = model_settings(config)
    if settings_digest(now) == integ["config_sha256"]:
        return
    recorded = integ.get("config")
    if isinstance(recorded, dict) and settings_digest(model_settings(recorded)) == settings_digest(now):
        return  # the same settings as this regnn reads them (a key recorded at its default, read now as absent)
    keys = changed_keys(recorded, now) if isinstance(recorded, dict) else []
    what = f"{', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''} differ from" if keys else "differs from"
    raise DataError(
        f"{Path(cell) / 'config.yaml'} was edited since training ({what} what {Path(run_dir) / 'model.json'} "
        "records): the model would be rebuilt otherwise than it trained; restore the config, or train again"
    )


def check_values(path: Path, state: dict, model_state: dict | None = None) -> None:
    """DataError naming the first tensor that is not finite, or (against the model's own state dict) has another
    dtype than the model declares, lacks or adds a key, or has another shape."""
    for k, v in state.items():
        if v.is_floating_point() and not bool(torch.isfinite(v).all()):
            raise DataError(f"{path}: tensor {k!r} holds NaN or inf; the file is damaged; train the run again")
    if model_state is None:
        return
    missing, extra = sorted(set(model_state) - set(state)), sorted(set(state) - set(model_state))
    if missing or extra:
        raise DataError(
            f"{path} does not fit the model its config.yaml builds (missing keys {missing[:4]}, unexpected keys "
            f"{extra[:4]}); use the model.pt the run wrote beside its config"
        )
    for k, want in model_state.items():
        got = state[k]
        if got.dtype != want.dtype:
            raise DataError(f"{path}: tensor {k!r} is {got.dtype}, the model's is {want.dtype}; the file is damaged")
        if got.shape != want.shape:
            raise DataError(
                f"{path} does not fit the model its config.yaml builds (tensor {k!r} is "
                f"{tuple(got.shape)}, the model's {tuple(want.shape)})"
            )


def verified_bytes(path: Path, want: str, needed_for: str) -> bytes:
    """The bytes of a file a run wrote beside its model, checked against the sha256 model.json records for it;
    DataError (one line) where it is missing (saying what the run needs it for) or is not the file training wrote."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path} is missing: {needed_for}; copy the run folder whole, or train it again")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != want:
        raise DataError(
            f"{path} is not the file training wrote (its sha256 differs from the one model.json records); copy the "
            "run folder again whole, or train the run again"
        )
    return data
