"""Checks of the arrays in a user's files: integer ids, features, adjacencies, labels and splits. Every message
names the file, what is wrong and the fix."""

from __future__ import annotations

import numpy as np
import torch

from regnn.data.custom_schema import DOC, USER_FIX
from regnn.errors import DataError


def exact_ints(x, what: str) -> np.ndarray:
    """x as int64, refusing what a cast would change: fractions, NaN, inf (integer-valued floats are kept)."""
    a = x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if a.dtype == bool:
        return a.astype(np.int64)
    if np.issubdtype(a.dtype, np.integer):
        return a.astype(np.int64)
    if not np.issubdtype(a.dtype, np.floating):
        raise DataError(f"{what} holds {a.dtype} values; it must hold integers")
    bad = ~np.isfinite(a) | (a != np.round(a))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise DataError(
            f"{what} holds non-integer values (e.g. {a.ravel()[i].item()!r} at position {i}); it must hold "
            "integers: store it as an integer array"
        )
    return a.astype(np.int64)


def unlabelled_outside_splits(
    labels: torch.Tensor, splits: dict[str, torch.Tensor], where: str
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(labels, unlabelled mask or None where every node has a label). Target nodes outside the splits may carry
    label -1 (unlabelled, never scored: set to 0 here, the mask keeps which they are); a node in a split must have
    a class id."""
    n = labels.shape[0]
    for s, idx in splits.items():
        if idx.numel() and int(idx.min()) >= 0 and int(idx.max()) < n and (labels[idx] < 0).any():
            raise DataError(
                f"{where}: {int((labels[idx] < 0).sum())} nodes of split {s!r} have no label (< 0); "
                "give them a class id or leave them out of the split"
            )
    if (labels < -1).any():
        raise DataError(
            f"{where}: labels hold {int(labels.min())}; use class ids 0..C-1, and -1 only for "
            "unlabelled nodes outside the splits"
        )
    unlabelled = labels < 0
    return labels.clamp(min=0), (unlabelled if bool(unlabelled.any()) else None)


MAX_CLASSES = 100_000  # a class count past this is a typo (the output layer alone would not fit in memory)


def _first_bad_row(x, bad) -> int | None:
    """The first row holding a value for which bad(values) is true (dense or scipy sparse), or None."""
    import scipy.sparse as sp

    if sp.issparse(x):
        c = x.tocoo()
        hit = bad(c.data)
        return int(c.row[hit].min()) if hit.any() else None
    hit = bad(np.asarray(x))
    if not hit.any():
        return None
    return int(np.flatnonzero(hit.reshape(hit.shape[0], -1).any(axis=1))[0])


def check_features(x, what: str, fix: str = USER_FIX):
    """A feature matrix as it must be to train on: two dimensions, real numbers (bool, integer or float) and finite.
    Anything else is refused with the file, the problem and, for NaN or inf, the first row that holds one."""
    a = x.numpy() if isinstance(x, torch.Tensor) else x
    dtype = a.dtype
    if not (dtype == np.bool_ or np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)):
        kind = (
            "complex numbers"
            if np.issubdtype(dtype, np.complexfloating)
            else "text"
            if dtype.kind in "US"
            else f"{dtype} values"
        )
        raise DataError(
            f"{what} holds {kind}; features must be real numbers (bool, integer or float): convert or "
            f"encode them, then {fix}"
        )
    shape = tuple(a.shape)
    if len(shape) != 2:
        hint = " (one value per node: store it as x[:, None])" if len(shape) == 1 else ""
        raise DataError(f"{what} has shape {shape}; features must be (nodes, dim){hint}: {fix}")
    if np.issubdtype(dtype, np.floating):
        row = _first_bad_row(a, lambda v: ~np.isfinite(v))
        if row is not None:
            raise DataError(
                f"{what} holds NaN or inf (first in row {row}); replace them (e.g. with 0 or the column "
                f"mean), then {fix}"
            )
        big = np.finfo(np.float32).max  # regnn trains in float32: larger values would become inf there
        row = _first_bad_row(a, lambda v: np.abs(v) > big) if dtype.itemsize > 4 else None
        if row is not None:
            raise DataError(
                f"{what} holds values beyond float32's range (first in row {row}), which training "
                f"in float32 would turn into inf; rescale them (e.g. log1p or standardise), then {fix}"
            )
    return x


def check_adjacency(adj, path, fix: str = USER_FIX):
    """adjM as regnn reads it: every stored non-zero is one unweighted edge. Explicit zeros are dropped (with a
    note); negative, NaN, inf and other values than 1 are refused, since the models take no edge weights."""
    import logging

    adj = adj.tocsr()
    try:
        adj.check_format(full_check=True)  # indices beyond the shape, indptr out of order
    except ValueError as e:
        raise DataError(
            f"{path} is not a valid sparse matrix ({str(e).splitlines()[0]}); the file is corrupt: {fix}"
        ) from None
    if not (np.issubdtype(adj.dtype, np.number) or adj.dtype == bool) or np.issubdtype(adj.dtype, np.complexfloating):
        raise DataError(f"{path} holds {adj.dtype} values; store 1 for every edge: {fix}")
    zeros = int((adj.data == 0).sum())
    if zeros:
        adj = adj.copy()
        adj.eliminate_zeros()
        logging.getLogger("regnn").warning(
            "%s stores %d explicit zeros; they are not edges and were dropped", path, zeros
        )
    data = adj.data
    bad = ~np.isfinite(data) | (data != 1) if np.issubdtype(data.dtype, np.floating) else (data != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        row = int(np.searchsorted(adj.indptr, i, side="right") - 1)
        raise DataError(
            f"{path} holds edge values other than 1 (e.g. {data[i].item()!r} at row {row}, column "
            f"{int(adj.indices[i])}): regnn's relations are unweighted; store 1 for every edge "
            f"(adj.data[:] = 1 keeps the links, dropping the weights): {fix}"
        )
    return adj


def class_count(declared, labels: torch.Tensor, splits: dict[str, torch.Tensor], where: str) -> int:
    """The number of classes: the declared one (at least the largest label + 1) or the largest label + 1. Classes
    with no training node get a warning: the model cannot learn them, and they lower the scores silently."""
    import logging

    seen = int(labels.max()) + 1 if labels.numel() else 0
    n = seen if declared is None else int(declared)
    if n < seen:
        raise DataError(
            f"{where}: labels range over [{int(labels.min())}, {seen - 1}] but there are {n} classes "
            f"(num_classes); class ids must be 0..{n - 1}, or num_classes at least {seen}"
        )
    if n > MAX_CLASSES:
        raise DataError(f"{where}: num_classes is {n}; at most {MAX_CLASSES} are supported ({DOC})")
    train = splits.get("train")
    if train is not None and train.numel() and n and 0 <= int(train.min()) and int(train.max()) < labels.numel():
        present = torch.bincount(labels[train], minlength=n)[:n] > 0
        absent = torch.nonzero(~present).flatten().tolist()
        if absent and labels.numel():
            scored = torch.cat([splits[s] for s in ("val", "test") if s in splits])
            shown = ", ".join(map(str, absent[:10])) + (f" and {len(absent) - 10} more" if len(absent) > 10 else "")
            logging.getLogger("regnn").warning(
                "%s: class%s %s ha%s no training node (%d of them in validation/test); the model cannot predict %s",
                where,
                "es" if len(absent) > 1 else "",
                shown,
                "ve" if len(absent) > 1 else "s",
                int(torch.isin(labels[scored], torch.tensor(absent)).sum()) if scored.numel() else 0,
                "them" if len(absent) > 1 else "it",
            )
    return n
