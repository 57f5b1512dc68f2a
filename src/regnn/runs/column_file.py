"""A run's column encoders on disk: runs/run_XX/encoders.json, the encoders of a tables graph's feature columns
(regnn.data.encoders: categories, vocabularies, IDF weights, fill values, date references), fitted on the training
nodes and saved as plain data; model.json records its digest. Predict, explain and regnn.predict read a graph's
columns with them (regnn.data.table_columns.applying), never refitting them on the graph they are given."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from regnn.runs import io_safe
from regnn.runs.integrity import verified_bytes

ENCODERS_FILE = "encoders.json"


def save(run_dir: Path, state: dict | None, integrity: dict) -> None:
    """Writes encoders.json where the graph has fitted encoders and records its digest in `integrity`."""
    if not state:
        return
    text = json.dumps(state, sort_keys=True, allow_nan=False)
    io_safe.write_text(run_dir / ENCODERS_FILE, text)
    integrity["encoders_sha256"] = hashlib.sha256(text.encode()).hexdigest()


def load(run_dir: Path, meta: dict) -> dict | None:
    """The encoders the run trained with ({node type: ...}), or None where it had none to keep (numbers only, or
    a graph of another format); DataError where the file is missing or not the one training wrote."""
    want = (meta.get("integrity") or {}).get("encoders_sha256")
    if want is None:
        return None
    needed_for = (
        "the run encoded its table columns with encoders fitted on its training nodes, and a prediction needs the "
        "same ones"
    )
    return json.loads(verified_bytes(Path(run_dir) / ENCODERS_FILE, want, needed_for))
