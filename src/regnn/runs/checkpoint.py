"""A run's trained model on disk: runs/run_XX/model.pt (the best-validation weights, tensors only), model.json
(what rebuilding it needs beside the cell's config.yaml: the graph's schema, the fingerprint of the graph it was
trained on, the feature scaling per node type) and, where dataset.feature_norm standardised a type, scaling.pt
(the column statistics it used, tensors only: a prediction scales new inputs with them, never refits them), and
for a tables graph with fitted column encoders encoders.json (regnn.runs.column_file).

model.pt is a plain state dict written by torch.save and read with torch.load(weights_only=True): it loads
without running code, and anything but tensors in it (a pickled object) is refused, as is a damaged or truncated
file, in one line. model.json records the digest of the weights and of the settings the cell's config.yaml
computes (regnn.runs.integrity): a flipped bit, swapped tensors or an edited config are refused, not predicted with.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import torch

from regnn.errors import DataError
from regnn.runs import column_file, config_files, integrity, io_safe

MODEL_FILE, META_FILE, SCALING_FILE = "model.pt", "model.json", "scaling.pt"
RECORD_FILE = "graph.npz"  # the graph by name (regnn.data.graph_record): ids, classes, labels, splits, edges


def graph_schema(data) -> dict:
    """What a model's weights are shaped by: node types and counts, relations, feature widths, classes."""
    g = data.graph
    return {
        "target": data.target,
        "node_types": {t: int(g.num_nodes(t)) for t in g.ntypes},
        "relations": [list(e) for e in g.canonical_etypes],
        "feature_widths": data.in_dims,
        "num_classes": int(data.num_classes),
    }


def write_tensors(path: Path, obj) -> None:
    """torch.save, whole: a kill leaves the old file or none, never half of one; a failed write (a full disk)
    leaves no temporary file and is an OutputError (one line). Temporary files of killed writes into the same
    folder are removed first."""
    path = Path(path)
    io_safe.remove_stale_temps(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as e:  # torch.save reports a failed write as a RuntimeError
        tmp.unlink(missing_ok=True)
        why = getattr(e, "strerror", None) or (str(e).splitlines() or [type(e).__name__])[0][:160]
        raise io_safe.OutputError(
            f"cannot write {path} ({why}); free disk space or fix the folder's permissions, then re-run with "
            "resume=true (finished runs are kept)"
        ) from None


def cell_config(run_dir: Path) -> dict | None:
    """The resolved config.yaml of the cell that holds run_dir (<cell>/runs/run_XX), None where there is none."""
    f = Path(run_dir).parent.parent / "config.yaml"
    if Path(run_dir).parent.name != "runs" or not f.is_file():
        return None
    try:
        cfg = config_files.read(f, resolve=True)
    except Exception:  # noqa: BLE001  (yaml and omegaconf raise their own errors for damaged text)
        return None
    return cfg if isinstance(cfg, dict) else None


def save(run_dir: Path, model: torch.nn.Module, meta: dict, scaling: dict | None = None, graph=None) -> None:
    """Writes model.pt (and scaling.pt, graph.npz), then model.json, which records the digest of the weights, of
    the cell's config (its config.yaml, written before the first run) and of the graph record. scaling: the
    dataset's feature_scaling record; graph: the dataset it trained on (its GraphRecord is saved)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu").clone().contiguous() for k, v in model.state_dict().items()}
    write_tensors(run_dir / MODEL_FILE, state)
    meta = {**meta, "integrity": integrity.record(state, cell_config(run_dir))}
    if graph is not None:
        from regnn.data.graph_record import GraphRecord

        tmp = run_dir / f".{RECORD_FILE}.{os.getpid()}.tmp"
        GraphRecord.once(graph).save(tmp)
        os.replace(tmp, run_dir / RECORD_FILE)
        meta["integrity"]["graph_sha256"] = file_digest(run_dir / RECORD_FILE)
    scaling = scaling or {}
    stats = {
        f"{t}.{k}": torch.from_numpy(r[k])
        for t, r in scaling.items()
        for k in ("mean", "scale")
        if r.get(k) is not None
    }
    if stats:
        write_tensors(run_dir / SCALING_FILE, stats)
        meta["integrity"]["scaling_sha256"] = integrity.tensors_digest(stats)
    column_file.save(run_dir, getattr(graph, "column_encoding", None), meta["integrity"])
    io_safe.write_json(run_dir / META_FILE, {**meta, "feature_scaling": {t: r["method"] for t, r in scaling.items()}})


def file_digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_record(run_dir: Path, meta: dict):
    """The GraphRecord the run saved (None for a run saved before runs kept one); DataError where the file is not
    the one training wrote."""
    from regnn.data.graph_record import GraphRecord

    want = (meta.get("integrity") or {}).get("graph_sha256")
    f = Path(run_dir) / RECORD_FILE
    if want is None:
        return None
    why = "the run binds a graph's nodes and classes to its model by the ids it saved there"
    integrity.verified_bytes(f, want, why)
    return GraphRecord.load(f)


def bind(run_dir: Path, meta: dict, data):
    """(the graph, its Aligned or None): data, read with its features as stored (feature_norm None), bound to the
    record the run saved (regnn.data.graph_binding) and scaled with the statistics the run trained with. A run
    saved without a record keeps data's order (None); a graph of other node types is only scaled (None)."""
    from regnn.data.graph_binding import align
    from regnn.data.scaling import apply_feature_norm

    fitted, record = load_scaling(run_dir, meta), load_record(run_dir, meta)
    scale = None if fitted is None else (lambda d: apply_feature_norm(d, "none", fitted=fitted))
    aligned = None if record is None else align(data, record, scale=scale)
    if aligned is not None:
        return aligned.data, aligned
    if scale is not None:
        scale(data)
    return data, None


def load_scaling(run_dir: Path, meta: dict) -> dict | None:
    """The feature scaling the run trained with ({node type: {"method", "mean", "scale"}}, as
    regnn.data.scaling.apply_feature_norm takes it), or None for a model saved without that record."""
    if "feature_scaling" not in meta:
        return None
    methods, f = meta["feature_scaling"], Path(run_dir) / SCALING_FILE
    if "standard" in methods.values() and not f.is_file():
        raise DataError(
            f"{f} is missing: the run standardised its features and a prediction needs the same "
            "statistics; copy the run folder whole, or train it again"
        )
    stats = load_tensors(f, "scaling") if "standard" in methods.values() else {}
    if not isinstance(stats, dict) or not all(isinstance(v, torch.Tensor) for v in stats.values()):
        raise DataError(f"{Path(run_dir) / SCALING_FILE} is not the feature statistics a run wrote")
    want = (meta.get("integrity") or {}).get("scaling_sha256")
    if stats and want is not None and integrity.tensors_digest(stats) != want:
        raise DataError(
            f"{f} is not the file training wrote (its sha256 differs from the one model.json records); copy the "
            "run folder again whole, or train the run again"
        )
    out = {}
    for t, m in methods.items():
        out[t] = {"method": m}
        if m == "standard":
            if f"{t}.scale" not in stats:
                raise DataError(f"{Path(run_dir) / SCALING_FILE} lacks the statistics of {t!r}; train the run again")
            mean = stats.get(f"{t}.mean")
            out[t] |= {"mean": None if mean is None else mean.numpy(), "scale": stats[f"{t}.scale"].numpy()}
    return out


def load_tensors(path: Path, what: str = "model"):
    """What torch.save wrote to path, read without running code (tensors, numbers, strings and containers only);
    DataError (one line) for a file that holds anything else, or is damaged or truncated."""
    path = Path(path)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(
            f"{path} holds more than tensors ({first[:160]}); regnn loads only tensors, so it is "
            f"refused: use the {what} file a run wrote"
        ) from None
    except (RuntimeError, EOFError, OSError, ValueError) as e:
        why = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
        raise DataError(
            f"{path} is damaged or truncated ({why}); copy it again whole, or train the run again"
        ) from None


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    """The state dict in path; DataError (one line) for a file that holds anything but tensors, is damaged, or
    holds a NaN or inf (naming the tensor)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(
            f"{path} does not exist: the run was trained with save_model=false, or before models were "
            "saved; train it again to predict with it"
        )
    state = load_tensors(path)
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise DataError(f"{path} is not a model's state dict (names to tensors); use the model.pt a run wrote")
    integrity.check_values(path, state)
    return state


SCHEMA_KEYS = {"target": str, "node_types": dict, "relations": list, "feature_widths": dict, "num_classes": int}


def _is_meta(d) -> bool:
    schema = d.get("schema") if isinstance(d, dict) else None
    return (
        isinstance(schema, dict)
        and all(isinstance(schema.get(k), t) for k, t in SCHEMA_KEYS.items())
        and all(isinstance(r, list) and len(r) == 3 for r in schema["relations"])
        and isinstance(d.get("seed", 0), int)
        and isinstance(d.get("trainer", "fullbatch"), str)
        and isinstance(d.get("integrity", {}), dict)
        and isinstance(d.get("feature_scaling", {}), dict)
    )


def load_meta(run_dir: Path) -> dict:
    """The run's model.json; DataError (one line) when it is missing or not the record a run writes. Only read:
    a malformed file is left as it is."""
    meta = io_safe.read_json(Path(run_dir) / META_FILE, _is_meta, set_aside=False)
    if meta is None:
        raise DataError(
            f"{Path(run_dir) / META_FILE} is missing, unreadable or not the record a run writes; train the run "
            "again to predict with it"
        )
    return meta


def schema_differences(trained: dict, now: dict) -> list[str]:
    """What differs between the graph schema a model was trained on and another graph's, in words (empty: fits).
    Node counts may grow; relations, feature widths, the target type and the classes may not change."""
    out = []
    if trained["target"] != now["target"]:
        out.append(f"target type {trained['target']} vs {now['target']}")
    if sorted(map(tuple, trained["relations"])) != sorted(map(tuple, now["relations"])):
        gone = sorted({tuple(r) for r in trained["relations"]} - {tuple(r) for r in now["relations"]})
        new = sorted({tuple(r) for r in now["relations"]} - {tuple(r) for r in trained["relations"]})
        out.append(f"relations (missing {[r[1] for r in gone]}, new {[r[1] for r in new]})")
    for t, w in trained["feature_widths"].items():
        if now["feature_widths"].get(t) != w:
            out.append(f"{t} features {w} wide when trained, {now['feature_widths'].get(t)} now")
    if trained["num_classes"] != now["num_classes"]:
        out.append(f"{trained['num_classes']} classes when trained, {now['num_classes']} now")
    return out
