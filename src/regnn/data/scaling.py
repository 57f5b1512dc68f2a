"""Feature scaling per node type (`dataset.feature_norm`), and a warning for features far outside the usual scale.

Raw counts (tens to hundreds) go into the first linear layer unscaled: attention logits and early losses explode
and the default settings stop working. The built-in datasets are bag-of-words, binary or small embeddings, so
`none` (the default) leaves them, and their numbers, as they are.

    none       the features as stored
    row        every row divided by its sum of absolute values (L1); all-zero rows stay zero
    standard   every column to zero mean and unit variance; a sparse matrix is only divided by the column
               standard deviations (no centring, so it stays sparse), as sklearn's StandardScaler(with_mean=False)
    auto       standard for a matrix far outside the usual scale (the test of the warning below), else none:
               the default of dataset=custom, since raw counts in the first layer make the attention models'
               logits saturate and their runs sit at chance, while features at a usual scale stay as stored

A mapping applies a method per node type ({paper: row, author: standard}); types it does not name keep `none`.
Node types without features of their own (one-hot ids, zero vectors) are never rescaled.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.preprocessing import StandardScaler, normalize


log = logging.getLogger("regnn")

FEATURE_NORMS = ("none", "row", "standard", "auto")
# A matrix is "far outside the usual scale" when it has large entries or row sums (MAX_ABS, MAX_ROW_SUM) AND a
# typical row would leave the input projection (Xavier-normal, gain 1.414, to REFERENCE_WIDTH units) with a
# standard deviation above MAX_INIT_STD. The second test keeps word-count BOW in thousands of dimensions quiet
# (ACM's papers: counts up to 49, row sums up to 450, yet 0.56 there; DBLP's authors: 0.25), which train well
# unscaled, and flags dense raw counts (tens of dimensions, counts in the tens or hundreds: 10 and more).
MAX_ABS, MAX_ROW_SUM, MAX_INIT_STD, REFERENCE_WIDTH = 10.0, 100.0, 1.5, 64


def per_type_norms(value, ntypes) -> dict[str, str]:
    """dataset.feature_norm (a method name, or {node type: method}) -> {node type: method} for every type."""
    if value is None:
        value = "none"
    if isinstance(value, str):
        _check_method(value, "dataset.feature_norm")
        return {t: value for t in ntypes}
    if not hasattr(value, "items"):
        raise ValueError(
            f"dataset.feature_norm={value!r} is not valid: use one of {list(FEATURE_NORMS)} or a "
            "mapping {node type: method}"
        )
    unknown = sorted(set(value) - set(ntypes))
    if unknown:
        raise ValueError(
            f"dataset.feature_norm names node types {unknown} that the graph lacks (types: {list(ntypes)})"
        )
    for t, m in value.items():
        _check_method(m, f"dataset.feature_norm.{t}")
    return {t: str(value.get(t, "none")) for t in ntypes}


def _check_method(m, key: str) -> None:
    if m not in FEATURE_NORMS:
        raise ValueError(f"{key}={m!r} is not valid: use one of {list(FEATURE_NORMS)}")


def _to_numpy(x: torch.Tensor):
    if x.is_sparse:
        x = x.coalesce()
        i = x.indices().numpy()
        return sp.csr_matrix((x.values().numpy(), (i[0], i[1])), shape=tuple(x.shape))
    return x.numpy()


def is_placeholder(x: torch.Tensor) -> bool:
    """One-hot ids (a sparse identity) or all zeros: what a type without features of its own gets."""
    if x.is_sparse:
        x = x.coalesce()
        i, v = x.indices(), x.values()
        return x.shape[0] == x.shape[1] == v.numel() and bool((i[0] == i[1]).all()) and bool((v == 1).all())
    return not bool(x.any())


def scale_matrix(x: torch.Tensor, method: str, fitted: dict | None = None) -> tuple[torch.Tensor, dict]:
    """(x scaled by `method` (float32; sparse stays sparse), what was fitted: {"method", and for standard the
    column "mean" (None for a sparse matrix) and "scale" (float64)}). With `fitted`, the statistics come from
    it instead of x: a saved model's inputs scaled as they were when it trained, never recomputed."""
    from regnn.data.features import to_tensor

    if method == "none":
        return x, {"method": "none"}
    a = _to_numpy(x)
    if method == "row":  # per row: nothing to fit
        return to_tensor(normalize(a, norm="l1", axis=1).astype(np.float32)), {"method": "row"}
    scaler = StandardScaler(with_mean=not sp.issparse(a))
    if fitted is None:
        scaler.fit(a)
    else:
        if fitted["scale"].shape[0] != a.shape[1]:
            raise ValueError(
                f"the stored feature scaling has {fitted['scale'].shape[0]} columns, the features {a.shape[1]}"
            )
        mean = fitted.get("mean")
        scaler.with_mean = mean is not None
        scaler.mean_ = None if mean is None else np.asarray(mean, dtype=np.float64)
        scaler.scale_ = np.asarray(fitted["scale"], dtype=np.float64)
        scaler.n_features_in_ = a.shape[1]
    # fit, then transform: StandardScaler.fit_transform's own order, so a stored scaler gives the same bits
    a = scaler.transform(a)
    stats = {
        "method": "standard",
        "mean": None if scaler.mean_ is None or not scaler.with_mean else scaler.mean_,
        "scale": scaler.scale_,
    }
    return to_tensor(a.astype(np.float32)), stats


def scale_stats(x: torch.Tensor) -> tuple[float, float, float]:
    """(max |x|, max row sum of |x|, the std a typical row (median L2 norm) gets from the input projection at
    initialisation)."""
    n, d = x.shape
    if x.is_sparse:
        x = x.coalesce()
        v, rows = x.values().abs(), x.indices()[0]
        l1 = torch.zeros(n).index_add_(0, rows, v)
        l2 = torch.zeros(n).index_add_(0, rows, v * v).sqrt()
        biggest = float(v.max()) if v.numel() else 0.0
    else:
        a = x.abs()
        l1, l2, biggest = a.sum(1), x.norm(dim=1), float(a.max()) if a.numel() else 0.0
    if n == 0:
        return 0.0, 0.0, 0.0
    init_std = float(l2.median()) * 1.414 * (2.0 / (d + REFERENCE_WIDTH)) ** 0.5
    return biggest, float(l1.max()), init_std


def apply_feature_norm(data, feature_norm="none", fitted: dict | None = None):
    """Scales data.features in place per node type, then warns (one line per type) where a matrix is still far
    outside the usual scale. Records what it fitted per type in data.feature_scaling; `fitted` (such a record,
    from a saved model) applies those statistics instead of fitting them on this graph. Returns data."""
    norms = per_type_norms(feature_norm, list(data.features))
    if fitted is not None:
        norms = {t: fitted.get(t, {"method": "none"})["method"] for t in data.features}
    for t, method in norms.items():
        x = data.features[t]
        if method == "auto":
            method = "standard" if not is_placeholder(x) and far_outside(x) else "none"
            if method != "none":
                log.info(
                    "%s: features of %r are far outside the usual scale; standardised (dataset.feature_norm="
                    "auto; none keeps them as stored)",
                    data.name,
                    t,
                )
        if method != "none" and not is_placeholder(x):
            data.features[t], data.feature_scaling[t] = scale_matrix(x, method, (fitted or {}).get(t))
    for t, x in data.features.items():
        stats = scale_stats(x)
        # a type the trained model standardised is scaled as it trained: advising to scale it again is wrong
        if _far(stats) and (fitted is None or fitted.get(t, {}).get("method", "none") == "none"):
            biggest, row_sum, _ = stats
            log.warning(
                "%s: features of %r reach |x| = %.4g (row sums up to %.4g), far outside the usual scale; "
                "set dataset.feature_norm=row or standard (or {%s: row}) to rescale them",
                data.name,
                t,
                biggest,
                row_sum,
                t,
            )
    return data


def far_outside(x: torch.Tensor) -> bool:
    return _far(scale_stats(x))


def _far(stats: tuple[float, float, float]) -> bool:
    biggest, row_sum, init_std = stats
    return (biggest > MAX_ABS or row_sum > MAX_ROW_SUM) and init_std > MAX_INIT_STD
