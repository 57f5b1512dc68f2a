"""What feature columns share (`format: tables`): a parquet list column holding each node's vector read as a
matrix, the check that features are finite numbers in float32's range, and where a column first fails to read as a
type. A bad value is refused naming the file, the column and the line (CSV) or row (parquet) of the first one;
columns of every kind are read by regnn.data.column_kinds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from regnn.data.table_reader import Table, first
from regnn.errors import DataError, quote

F32_MAX = float(np.finfo(np.float32).max)  # regnn trains in float32: larger values would become inf there
LEAVE_OUT = "features must be numbers: encode it, or leave it out with features: [...]"


def first_failing(a: pa.Array, to) -> int:
    """The first value of a (which as a whole fails to cast) that fails to cast to type `to`: a bisection of casts."""
    lo, hi = 0, len(a)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pc.cast(a.slice(lo, mid - lo), to)
            lo = mid
        except pa.ArrowInvalid:
            hi = mid
    return lo


def finite(table: Table, what: str, v: np.ndarray) -> None:
    """NaN, inf and values beyond float32 refused, naming the first row holding one (v: one row per node)."""
    rows = v.reshape(len(v), -1)
    for bad, is_what in ((~np.isfinite(rows), "NaN or inf"), (np.abs(rows) > F32_MAX, "a value beyond float32")):
        hit = bad.any(axis=1)
        if hit.any():
            i = int(np.flatnonzero(hit)[0])
            value = float(rows[i][bad[i]][0])
            raise DataError(
                f"{table.path}: {table.where(i)}: {what} holds {is_what} ({value!r}); features must "
                "be finite numbers in float32's range: replace it (e.g. with 0 or the column mean, or rescale)"
            )


def vectors(table: Table, name: str) -> np.ndarray:
    """A parquet list column holding one vector per node, all of one length, as a float32 matrix."""
    a = table.column(name, "the feature vectors").combine_chunks()
    col = f"column {quote(name)}"
    if not (pa.types.is_list(a.type) or pa.types.is_large_list(a.type) or pa.types.is_fixed_size_list(a.type)):
        raise DataError(
            f"{table.path}: {col} holds {a.type}, not one list of numbers per node (a parquet list column); in a CSV "
            "table give one column per dimension (features: [f0, f1, ...])"
        )
    if a.null_count:
        raise DataError(f"{table.path}: {table.where(first(a.is_null()))}: {col} holds no vector (an empty cell)")
    lengths = pc.list_value_length(a).to_numpy(zero_copy_only=False)
    if not lengths[0]:
        raise DataError(f"{table.path}: {table.where(0)}: {col} holds an empty list; a vector needs a number at least")
    ragged = first(pa.array(lengths != lengths[0]))
    if ragged is not None:
        raise DataError(
            f"{table.path}: {table.where(ragged)}: {col} holds {int(lengths[ragged])} numbers but {table.where(0)} "
            f"holds {int(lengths[0])}; every node needs a vector of one length"
        )
    flat, parent = pc.list_flatten(a), pc.list_parent_indices(a)
    t = flat.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        raise DataError(f"{table.path}: {col} holds lists of {t}; features must be numbers")
    if flat.null_count:
        i = int(parent[first(flat.is_null())].as_py())
        raise DataError(f"{table.path}: {table.where(i)}: {col} holds an empty value (null) in its vector")
    v = pc.cast(flat, pa.float64()).to_numpy(zero_copy_only=False).reshape(len(a), int(lengths[0]))
    finite(table, col, v)
    return v.astype(np.float32)
