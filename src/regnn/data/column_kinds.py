"""The kind of every feature column of a node table (`format: tables` and `format: sql`): a number, a category,
text, a date/time or a boolean, inferred from its cells or declared in the description (`columns: {title: text,
venue: category, year: number}` under the table), and its cells read exactly as that kind. A cell that cannot be
read as its column's kind is refused naming the file, the line (or row) and the value; nothing is guessed.

Inferred, in this order: a number where every non-empty cell is a decimal number; a boolean where every one is
true or false; a date where every one is an ISO 8601 date or date and time (`2024-03-01`, `2024-03-01 12:30:00`);
else a category where its values repeat (at most half of the cells hold distinct values) in words of fewer than 3
on average, else text. The category/text choice is made on the training nodes' cells alone. A column where at
least half of the cells are numbers (or dates) and others are not is refused naming the first that is not: an
export that mangled a cell, unless `columns:` says what the column is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from regnn.data.custom_schema import DOC, did_you_mean
from regnn.data.table_features import LEAVE_OUT, first_failing
from regnn.data.table_reader import Table, first
from regnn.errors import DataError, quote

KINDS = ("number", "category", "text", "date", "boolean")
ENCODINGS = {"number": "as_is", "boolean": "as_is", "category": "onehot", "text": "tfidf", "date": "time"}
OTHER_ENCODINGS = {"text": ("hashed",)}  # besides the default of ENCODINGS
CATEGORY_MAX_DISTINCT, CATEGORY_MAX_WORDS = 0.5, 3.0
US = pa.timestamp("us")


@dataclass
class Column:
    """A feature column read as its kind: values per row, which rows are empty."""

    name: str
    kind: str
    encoding: str
    declared: bool  # named in `columns:`: empty cells of a number or boolean are then read as missing
    values: np.ndarray  # number, boolean: float64; date: int64 microseconds; category, text: str (object)
    missing: np.ndarray  # bool per row: an empty cell (a parquet or database null)


def declared_kinds(spec, table: Table, cols: list[str]) -> dict[str, tuple[str, str]]:
    """`columns:` of a node table as {column: (kind, encoding)}; every named column must be a feature column."""
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise DataError(f"{table.path}: columns must map column names to kinds ({', '.join(KINDS)}); {DOC}")
    out = {}
    for name, v in spec.items():
        kind, enc = (v.get("kind"), v.get("encoding")) if isinstance(v, dict) else (v, None)
        if kind not in KINDS:
            raise DataError(
                f"{table.path}: columns.{name}: kind {quote(kind)} is not one of {', '.join(KINDS)}; "
                f"{did_you_mean(kind, KINDS)}({DOC})"
            )
        allowed = (ENCODINGS[kind], *OTHER_ENCODINGS.get(kind, ()))
        if enc is not None and enc not in allowed:
            raise DataError(
                f"{table.path}: columns.{name}: a {kind} is encoded as {' or '.join(allowed)}, not {quote(enc)}"
            )
        if isinstance(v, dict) and set(v) - {"kind", "encoding"}:
            raise DataError(
                f"{table.path}: columns.{name} takes kind: and encoding:, not {sorted(set(v) - {'kind', 'encoding'})}"
            )
        if name not in cols:
            raise DataError(
                f"{table.path}: columns names {quote(name)}, which is not one of its feature columns "
                f"{cols[:12]}; {did_you_mean(name, cols)}(ids, labels and splits are never features)"
            )
        out[str(name)] = (kind, enc or ENCODINGS[kind])
    return out


def _cells(table: Table, name: str) -> pa.Array:
    a = table.column(name, "a feature column").combine_chunks()
    return a.cast(a.type.value_type) if pa.types.is_dictionary(a.type) else a


def _is_text(t) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _parses(v: pa.Array, to) -> np.ndarray | None:
    """The values cast to `to`, or None where some do not cast."""
    try:
        return pc.cast(v, to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _share(v: pa.Array, to) -> float:
    """The share of the values that cast to `to` (a sample of at most 1000: only to tell a column's bent)."""
    sample = v.slice(0, 1000)
    ok = sum(_parses(sample.slice(i, 1), to) is not None for i in range(len(sample)))
    return ok / max(len(sample), 1)


def _words(v: np.ndarray) -> float:
    return float(np.mean([len(s.split()) for s in v])) if len(v) else 0.0


def infer(table: Table, name: str, fit_rows: np.ndarray) -> tuple[str, str]:
    """(kind, encoding) of a column no `columns:` names."""
    a = _cells(table, name)
    t = a.type
    if pa.types.is_boolean(t):
        return "boolean", "as_is"
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return "number", "as_is"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "date", "time"
    if not _is_text(t):
        raise DataError(f"{table.path}: feature column {quote(name)} holds {t}; {LEAVE_OUT}")
    full = pc.fill_null(a, "")
    v = pc.filter(full, pc.not_equal(full, ""))
    if not len(v):
        row = first(pc.equal(full, ""))
        raise DataError(
            f"{table.path}: {table.where(row)}: feature column {quote(name)} is empty in every row; leave it out "
            "with features: [...]"
        )
    for kind, to in (("number", pa.float64()), ("boolean", pa.bool_()), ("date", US)):
        if _parses(v, to) is not None:
            return kind, ENCODINGS[kind]
        if kind != "boolean" and _share(v, to) >= 0.5:
            i = first_failing(v, to)
            what = "text" if kind == "number" else "a value that is not a date"
            raise DataError(
                f"{table.path}: feature column {quote(name)} holds {what} ({table.where(_row_of(full, i))}: "
                f"{quote(v[i].as_py())}) among {kind}s; fix the cell, or declare what the column is under this "
                f"table with columns: {{{name}: category}} (or text); {LEAVE_OUT.split(': ', 1)[1]}"
            )
    text = full.to_numpy(zero_copy_only=False)[fit_rows]
    text = text[text != ""]
    repeats = len(set(text)) <= CATEGORY_MAX_DISTINCT * len(text)
    return ("category", "onehot") if repeats and _words(text) < CATEGORY_MAX_WORDS else ("text", "tfidf")


def _row_of(full: pa.Array, i: int) -> int:
    """The row of the i-th non-empty cell."""
    return int(np.flatnonzero(full.to_numpy(zero_copy_only=False) != "")[i])


def read(table: Table, name: str, kind: str, encoding: str, declared: bool) -> Column:
    """The column's cells as its kind; a cell that is not one is refused naming where it is and its value."""
    a = _cells(table, name)
    if _is_text(a.type):
        a = pc.fill_null(a, "")
        missing = pc.equal(a, "").to_numpy(zero_copy_only=False)
    else:
        missing = a.is_null().to_numpy(zero_copy_only=False)
    if missing.any() and kind in ("number", "boolean") and not declared:
        raise DataError(
            f"{table.path}: {table.where(int(np.flatnonzero(missing)[0]))}: feature column {quote(name)} is empty; "
            "a feature needs a number in every row (fill it, e.g. with 0 or the column mean), or declare the column "
            f"with columns: {{{name}: {kind}}} to read an empty cell as missing (filled, and marked)"
        )
    keep = np.flatnonzero(~missing)
    present = a.take(pa.array(keep)) if missing.any() else a
    if kind in ("category", "text"):
        values = np.full(len(a), "", dtype=object)
        values[keep] = _as_text(table, name, present)
    else:
        to = {"number": pa.float64(), "boolean": pa.bool_(), "date": US}[kind]
        got = _parses(present, to)
        if got is None:
            i = first_failing(present, to) if _is_text(present.type) else 0
            raise DataError(
                f"{table.path}: {table.where(int(keep[i]))}: feature column {quote(name)} ({kind}) holds "
                f"{quote(present[i].as_py())}, which is not {_a(kind)}; fix the cell, or declare its kind with "
                f"columns: {{{name}: <kind>}} ({', '.join(KINDS)})"
            )
        values = np.zeros(len(a), dtype=np.int64 if kind == "date" else np.float64)
        values[keep] = pc.cast(got, pa.int64() if kind == "date" else pa.float64()).to_numpy(zero_copy_only=False)
    return Column(name, kind, encoding, declared, values, missing)


def _a(kind: str) -> str:
    return {
        "number": "a number",
        "boolean": "true or false",
        "date": "an ISO 8601 date (2024-03-01 or 2024-03-01 12:30:00)",
    }[kind]


def _as_text(table: Table, name: str, a: pa.Array) -> np.ndarray:
    """A category's or text's cells as text; parquet numbers as their digits (as ids are read)."""
    if _is_text(a.type):
        return a.to_numpy(zero_copy_only=False).astype(object)
    sub = Table(table.path, pa.table({name: a}), table.encoding)
    return sub.text(name, "a category or text column").to_numpy(zero_copy_only=False).astype(object)
