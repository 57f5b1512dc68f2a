"""A node table's feature columns as one feature matrix: each column read as its kind (regnn.data.column_kinds)
and encoded (regnn.data.encoders), the encoders fitted on the training nodes, or applied as a trained model saved
them (`applying`: predict, explain, regnn.predict), with a summary of what was read and how it was encoded."""

from __future__ import annotations

import contextlib
import logging
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from regnn.data import encoders
from regnn.data.column_kinds import declared_kinds, infer, read
from regnn.data.table_features import finite
from regnn.data.table_reader import Table
from regnn.errors import DataError, quote

log = logging.getLogger("regnn")
SPARSE_BELOW = 0.1  # share of non-zero entries under which a feature matrix is kept sparse
_GIVEN: ContextVar[dict | None] = ContextVar("column_encoding", default=None)


@contextlib.contextmanager
def applying(state: dict | None):
    """Within the block, node tables are encoded with `state` ({node type: the encoders a run saved}) instead of
    encoders fitted on the graph read: a trained model's inputs as it trained on them."""
    token = _GIVEN.set(state)
    try:
        yield
    finally:
        _GIVEN.reset(token)


def given(ntype: str) -> dict | None:
    """The saved encoders of ntype's columns where a trained model's are being applied (`applying`), else None."""
    state = _GIVEN.get()
    return None if state is None else state.get(ntype, {})


@dataclass
class Encoded:
    x: object  # float32 array, or a scipy sparse matrix where mostly zeros
    names: list[str]  # the encoded columns' names, in order
    state: dict  # {"fitted_on": nodes, "columns": [each column's fitted encoder]}
    unseen: np.ndarray  # per row: the columns (";"-joined) whose value the training nodes did not have, or ""


def kept_sparse(x):
    """x (dense or scipy sparse) sparse where under SPARSE_BELOW of its entries are non-zero (bag-of-words,
    one-hot categories: the input projection multiplies them as such, several times faster), else dense."""
    n = x.shape[0] * x.shape[1]
    nonzero = x.count_nonzero() if sp.issparse(x) else np.count_nonzero(x)
    if n and nonzero < SPARSE_BELOW * n:
        return sp.csr_matrix(x)
    return x.toarray() if sp.issparse(x) else x


def encode(table: Table, ntype: str, cols: list[str], entry: dict, fit_rows: np.ndarray, where: str | None) -> Encoded:
    """The columns `cols` encoded; entry: the table's description (`columns:` declares kinds, `features:` the
    columns); fit_rows: the training nodes; where: how the summary names the table (None: no summary)."""
    saved = given(ntype)
    if saved is not None:
        return _with_saved(table, ntype, saved)
    declared = declared_kinds(entry.get("columns"), table, cols)
    inferred_columns = entry.get("features") is None
    states, parts, unseen = [], [], []
    for name in cols:
        kind, enc = declared.get(name) or infer(table, name, fit_rows)
        col = read(table, name, kind, enc, name in declared)
        if kind == "number":
            finite(table, f"feature column {quote(name)}", col.values)
        states.append(encoders.fit(col, fit_rows))
        x, out = encoders.apply(col, states[-1])
        parts.append(x)
        unseen.append((name, out))
    state = {"fitted_on": int(len(fit_rows)), "columns": states}
    if where is not None:
        _say(table, where, state, declared, inferred_columns)
    return Encoded(_joined(parts), [n for s in states for n in encoders.names(s)], state, _named(unseen, len(table)))


def _with_saved(table: Table, ntype: str, saved: dict) -> Encoded:
    states, parts, unseen = saved.get("columns") or [], [], []
    have = table.data.column_names
    gone = [s["name"] for s in states if s["name"] not in have]
    if gone:
        raise DataError(
            f"{table.path} lacks the column(s) {ascii(gone)}, which the model read its {ntype} features from; give "
            "the table those columns (an empty cell where a node has no value), or train on this graph"
        )
    for s in states:
        col = read(table, s["name"], s["kind"], s["encoding"], s["declared"])
        if s["kind"] == "number":
            finite(table, f"feature column {quote(s['name'])}", col.values)
        x, out = encoders.apply(col, s)
        parts.append(x)
        unseen.append((s["name"], out))
    return Encoded(_joined(parts), [n for s in states for n in encoders.names(s)], saved, _named(unseen, len(table)))


def _joined(parts: list):
    if not parts:
        return None
    if not any(sp.issparse(p) for p in parts):
        return kept_sparse(np.hstack(parts).astype(np.float32, copy=False))
    return kept_sparse(sp.hstack([sp.csr_matrix(p) for p in parts], format="csr").astype(np.float32))


def _named(unseen: list, n: int) -> np.ndarray:
    out = np.full(n, "", dtype=object)
    for name, rows in unseen:
        hit = np.flatnonzero(rows)
        out[hit] = [f"{s};{name}" if s else name for s in out[hit]]
    return out


def is_plain(state: dict) -> bool:
    """Whether every column is a number (or true/false) read as it is, with nothing fitted that a model must keep:
    such a table's features are its numbers, as they always were."""
    return all(s["kind"] in ("number", "boolean") and not s["declared"] for s in state.get("columns") or [])


def _say(table: Table, where: str, state: dict, declared: dict, inferred_columns: bool) -> None:
    """The summary (column, kind, how it is encoded, how many values) where something was inferred: the columns,
    or a kind other than a number or a boolean."""
    cols = state["columns"]
    if not inferred_columns and all(s["kind"] in ("number", "boolean") or s["name"] in declared for s in cols):
        return
    lines = [f"  {'column':<20} {'kind':<9} {'encoded as':<40} values"]
    for s in cols:
        lines.append(f"  {s['name'][:20]:<20} {s['kind']:<9} {_how(s):<40} {_count(table, s)}")
    log.info(
        "data: %s: feature columns%s, kinds %s, encoders fitted on %d nodes; `features: [...]` under this table "
        "chooses the columns and `columns: {<column>: <kind>}` their kinds (docs/custom_data.md):\n%s",
        where,
        " (every column but the id and the label and split)" if inferred_columns else "",
        "as declared or inferred" if declared else "inferred",
        state["fitted_on"],
        "\n".join(lines),
    )


def _how(s: dict) -> str:
    extra = ", missing: mean + indicator" if s["missing"] else ""
    if s["kind"] == "category":
        return f"one-hot, {len(s['categories'])} + unseen{extra}"
    if s["kind"] == "text" and s["encoding"] == "hashed":
        return f"hashed words, {encoders.HASHED_WIDTH} columns{extra}"
    if s["kind"] == "text":
        return f"tf-idf, {len(s['vocabulary'])} words + unseen{extra}"
    if s["kind"] == "date":
        return f"years + {'year/week/day' if s['time'] else 'year/week'} cycles{extra}"
    return f"{'0/1' if s['kind'] == 'boolean' else 'as is'}{extra}"


def _count(table: Table, s: dict) -> str:
    col = read(table, s["name"], s["kind"], s["encoding"], True)
    n = int((~col.missing).sum())
    distinct = f", {len(set(col.values[~col.missing]))} distinct" if s["kind"] in ("category", "text") else ""
    return f"{n}{distinct}, {int(col.missing.sum())} empty"
