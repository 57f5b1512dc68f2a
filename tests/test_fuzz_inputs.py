"""Property-based fuzzing of what a user gives regnn: a custom dataset (npz format) with one field corrupted at a
time, and config overrides with generated values.

The invariant (docs/failures.md): the input is taken, giving a dataset that can train (labels within the classes,
split ids within the target nodes, finite real features), or refused with a RegnnError of at most two lines and
a few hundred characters that names the file or key; never another exception. train.py turns such an error into
its one line and exit code 2 (tests/test_bad_inputs.py runs those through the command line).

The smoke form runs in the fast suite; the long form (marked slow, `make test-all`) runs FUZZ_LONG cases and
prints how many it ran.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from omegaconf.errors import OmegaConfBaseException
from hydra import compose, initialize_config_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf, open_dict

import regnn.config  # noqa: F401  (the repo_root resolver)
from conftest import REPO
from custom_data import npz_arrays
from regnn.config import validate
from regnn.data import load_dataset
from regnn.data.features import FEATS_TYPES
from regnn.errors import ConfigError, RegnnError
from regnn.models import BACKBONES

FUZZ_SMOKE = 40
FUZZ_LONG = 2000
MAX_LINE = 400
BASE = npz_arrays()
ARRAYS = sorted(BASE)
META = {"format": "npz", "graph": "graph.npz", "target": "customer"}


def _values_like(draw, a: np.ndarray):
    """A corrupted version of array a: another dtype, shape, range or content."""
    kind = draw(
        st.sampled_from(
            [
                "text",
                "complex",
                "nan",
                "inf",
                "fraction",
                "negative",
                "beyond",
                "huge",
                "empty",
                "flat",
                "extra_dim",
                "transpose",
                "bool",
                "object_free_bytes",
                "scalar",
                "shorter",
            ]
        )
    )
    a = a.copy()
    if kind == "text":
        return a.astype(str)
    if kind == "complex":
        return a.astype(np.complex64) + 1j
    if kind in ("nan", "inf"):
        b = a.astype(np.float64)
        if b.size:
            b.flat[draw(st.integers(0, b.size - 1))] = np.nan if kind == "nan" else -np.inf
        return b
    if kind == "fraction":
        return a.astype(np.float64) + 0.5
    if kind == "negative":
        b = a.astype(np.int64)
        if b.size:
            b.flat[draw(st.integers(0, b.size - 1))] = -draw(st.integers(2, 10**6))
        return b
    if kind == "beyond":
        b = a.astype(np.int64)
        if b.size:
            b.flat[draw(st.integers(0, b.size - 1))] = draw(st.integers(10**4, 2**62))
        return b
    if kind == "huge":
        return a.astype(np.float64) * draw(st.sampled_from([1e30, 1e300, -1e300]))
    if kind == "empty":
        return a.reshape(-1)[:0]
    if kind == "flat":
        return a.reshape(-1)
    if kind == "extra_dim":
        return a[..., None]
    if kind == "transpose":
        return a.T
    if kind == "bool":
        return a.astype(bool)
    if kind == "object_free_bytes":
        return np.frombuffer(a.tobytes()[: max(1, a.nbytes // 2)], dtype=np.uint8)
    if kind == "scalar":
        return np.array(draw(st.one_of(st.integers(-10, 10**6), st.floats(allow_nan=True))))
    return a[: max(0, len(a) - draw(st.integers(1, 5)))] if a.ndim else a


@st.composite
def corrupted_dataset(draw):
    """(arrays, description, what was changed): the base dataset with one array or one description key changed."""
    z, meta = {k: v.copy() for k, v in BASE.items()}, dict(META)
    target = draw(st.sampled_from(["array", "array", "array", "drop", "meta", "rename"]))
    if target == "array":
        key = draw(st.sampled_from(ARRAYS))
        z[key] = _values_like(draw, z[key])
        what = f"array {key}"
    elif target == "drop":
        key = draw(st.sampled_from(ARRAYS))
        del z[key]
        what = f"no array {key}"
    elif target == "rename":
        key = draw(st.sampled_from(ARRAYS))
        z[
            draw(
                st.sampled_from(
                    [
                        "edges:a:b",
                        "features:",
                        "edges:customer:x:nowhere",
                        "labelz",
                        "num_nodes:ghost",
                        "features:ghost",
                    ]
                )
            )
        ] = z.pop(key)
        what = f"array {key} renamed"
    else:
        key = draw(st.sampled_from(["target", "num_classes", "reverse", "graph", "format", "name", "extra"]))
        meta[key] = draw(
            st.one_of(
                st.none(),
                st.booleans(),
                st.integers(-5, 10**13),
                st.floats(allow_nan=True),
                st.text(max_size=30),
                st.lists(st.integers(), max_size=3),
                st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
                st.sampled_from(["customer", "shop", "city", "keep", "add", "npz", "dgl"]),
            )
        )
        what = f"description {key}={meta[key]!r}"
    return z, meta, what


def check_loaded(data) -> None:
    """A dataset that was taken must be one that can train."""
    n = data.graph.num_nodes(data.target)
    assert data.labels.shape == (n,) and 1 <= data.num_classes <= 100_000
    assert int(data.labels.min()) >= 0 and int(data.labels.max()) < data.num_classes
    for s in ("train", "val", "test"):
        idx = data.splits[s]
        assert idx.numel() == 0 or (int(idx.min()) >= 0 and int(idx.max()) < n)
    for x in data.features.values():
        if x is not None and not x.is_sparse:
            assert x.dtype.is_floating_point and bool(x.isfinite().all())


def check_refusal(e: Exception, names) -> None:
    """A refusal is a RegnnError, short, and names the file or the key."""
    assert isinstance(e, RegnnError), f"{type(e).__name__}: {e}"
    msg = str(e)
    lines = msg.splitlines()
    assert 1 <= len(lines) <= 2 and all(len(ln) <= MAX_LINE for ln in lines), msg
    assert any(n in msg for n in names), msg


def load_case(root: Path, z: dict, meta: dict):
    root.mkdir(parents=True, exist_ok=True)
    np.savez(root / "graph.npz", **z)
    (root / "dataset.yaml").write_text(yaml.safe_dump(meta, allow_unicode=True))
    return load_dataset("custom", format="custom", path=str(root / "dataset.yaml"), feature_norm="auto")


def run_dataset_case(case) -> None:
    z, meta, what = case
    root = Path(tempfile.mkdtemp(prefix="fuzz_"))
    try:
        try:
            data = load_case(root, z, meta)
        except Exception as e:  # noqa: BLE001 (the property: only short RegnnErrors)
            check_refusal(e, ["graph.npz", "dataset.yaml", str(root)])
        else:
            check_loaded(data)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None
    finally:
        shutil.rmtree(root, ignore_errors=True)


NUMERIC_KEYS = [
    "runs",
    "seed",
    "threads",
    "model.hidden",
    "model.num_layers",
    "model.dropout",
    "optimizer.lr",
    "optimizer.weight_decay",
    "trainer.max_epochs",
    "trainer.patience",
    "model.relation.scale",
    "workers",
]
override_value = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "null",
            "true",
            "false",
            "abc",
            "''",
            "[]",
            "[1,2]",
            "{a: 1}",
            "1e20",
            "-0",
            "0",
            "1",
            "2.5",
            "nan",
            "inf",
            "-inf",
            "2147483647",
            "65537",
            "'" + "x" * 500 + "'",
        ]
    ),
)


_BASE_CFG = []


def with_override(key: str, value: str):
    """The synthetic dataset's config with key set to value as YAML reads it (a fresh copy per case; composing
    through Hydra each time costs half a second, and Hydra's grammar is not what is under test)."""
    if not _BASE_CFG:
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            _BASE_CFG.append(compose("train", overrides=["dataset=synthetic"]))
    cfg = copy.deepcopy(_BASE_CFG[0])
    with open_dict(cfg):
        OmegaConf.update(cfg, key, yaml.safe_load(value), merge=False)
    return cfg


def run_override_case(key: str, value: str) -> None:
    try:
        cfg = with_override(key, value)
    except (yaml.YAMLError, OmegaConfBaseException):  # a value the config cannot hold: Hydra refuses it in a line
        return
    try:
        validate(cfg, BACKBONES, FEATS_TYPES)
    except ConfigError as e:
        check_refusal(e, [key])
        return
    v = OmegaConf.select(cfg, key)  # taken: within the documented range
    if key in ("runs", "seed", "threads", "model.hidden", "model.num_layers", "trainer.max_epochs", "trainer.patience"):
        assert v is None or (isinstance(v, int) and not isinstance(v, bool)), (key, v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        assert np.isfinite(v) and abs(v) <= 2**31, (key, v)


SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)


@settings(max_examples=FUZZ_SMOKE, **SETTINGS)
@given(corrupted_dataset())
def test_fuzz_dataset_smoke(case):
    run_dataset_case(case)


@settings(max_examples=FUZZ_SMOKE, **SETTINGS)
@given(st.sampled_from(NUMERIC_KEYS), override_value)
def test_fuzz_overrides_smoke(key, value):
    run_override_case(key, value)


@pytest.mark.slow
def test_fuzz_long(capsys):
    """The long form: FUZZ_LONG generated datasets and FUZZ_LONG generated overrides, with the count printed."""
    counts = {"dataset": 0, "override": 0}

    @settings(max_examples=FUZZ_LONG, **{**SETTINGS, "derandomize": False})
    @given(corrupted_dataset())
    def datasets(case):
        counts["dataset"] += 1
        run_dataset_case(case)

    @settings(max_examples=FUZZ_LONG, **{**SETTINGS, "derandomize": False})
    @given(st.sampled_from(NUMERIC_KEYS), override_value)
    def overrides(key, value):
        counts["override"] += 1
        run_override_case(key, value)

    datasets()
    overrides()
    with capsys.disabled():
        print(
            f"\nfuzz: {counts['dataset']} generated datasets and {counts['override']} generated overrides, every one "
            "taken as a dataset that can train or refused with one short line"
        )
    assert counts["dataset"] >= FUZZ_LONG * 0.9 and counts["override"] >= FUZZ_LONG * 0.9
