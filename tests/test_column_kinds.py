"""Feature columns of every kind in a tables graph (docs/custom_data.md, "Columns and their kinds"): inferred and
declared kinds, the encoders fitted on the training nodes only and kept with the model, unseen values bucketed and
marked, and a numbers-only table read exactly as it always was."""

import logging

import numpy as np
import pytest
import torch

from custom_data import kind_rows, write_kind_tables
from regnn.data.custom import load_custom
from regnn.data.encoders import YEAR_DAYS
from regnn.errors import DataError


def refused(path) -> str:
    with pytest.raises(DataError) as e:
        load_custom(path)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_every_kind_is_inferred_encoded_and_summarised(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="regnn"):
        d = load_custom(write_kind_tables(tmp_path / "g"))
    names = d.feature_names["paper"]
    for word in ("graph", "query"):
        assert f"title:{word}" in names
    assert {"venue=KDD", "venue=SIGMOD", "venue:unseen", "title:unseen", "year", "open"} <= set(names)
    assert {"published:years", "published:year_sin", "published:week_cos"} <= set(names)
    summary = next(r.getMessage() for r in caplog.records if "papers.csv (paper)" in r.getMessage())
    kinds = {line.split()[0]: line.split()[1] for line in summary.splitlines()[2:]}
    assert kinds == {"title": "text", "venue": "category", "year": "number", "published": "date", "open": "boolean"}
    rows = kind_rows()
    x = d.features["paper"].to_dense()
    assert x[:, names.index("open")].tolist() == [float(r["open"] == "true") for r in rows]
    train = [i for i, r in enumerate(rows) if r["split"] == "train"]
    latest = max(np.datetime64(rows[i]["published"]) for i in train)
    years = (np.datetime64(rows[0]["published"]) - latest) / np.timedelta64(1, "D") / YEAR_DAYS
    assert x[0, names.index("published:years")].item() == pytest.approx(years, abs=1e-6)
    assert d.column_encoding["paper"]["fitted_on"] == len(train)


def test_a_numbers_only_table_is_read_as_it_always_was(tmp_path):
    rows = [{k: r[k] for k in ("id", "label", "split", "year")} | {"f": i / 7} for i, r in enumerate(kind_rows())]
    d = load_custom(write_kind_tables(tmp_path / "g", rows))
    want = torch.tensor([[float(r["year"]), float(repr(r["f"]))] for r in rows], dtype=torch.float32)
    assert torch.equal(d.features["paper"], want) and d.feature_names["paper"] == ["year", "f"]
    assert d.column_encoding is None and d.unseen is None  # nothing fitted: nothing kept with a model


def test_a_declared_kind_is_read_as_declared_and_a_cell_that_is_not_one_is_located(tmp_path):
    rows = kind_rows()
    rows[3]["year"] = ""
    d = load_custom(write_kind_tables(tmp_path / "a", rows, {"year": "number", "venue": "text"}))
    names = d.feature_names["paper"]
    assert "year:missing" in names and "venue:kdd" in names  # text: lower-cased words
    train = [int(r["year"]) for i, r in enumerate(rows) if r["split"] == "train" and i != 3]
    x = d.features["paper"].to_dense()
    assert x[3, names.index("year")].item() == pytest.approx(np.mean(train)) and x[3, names.index("year:missing")] == 1
    rows[5]["year"] = "2015a"
    message = refused(write_kind_tables(tmp_path / "b", rows, {"year": "number"}))
    assert "papers.csv: line 7: feature column 'year' (number) holds '2015a', which is not a number" in message
    rows = kind_rows()
    rows[4]["year"] = ""  # an inferred number with a gap: refused, as a numbers table always was
    assert "papers.csv: line 6: feature column 'year' is empty" in refused(write_kind_tables(tmp_path / "c", rows))
    rows[4]["year"] = "n/a"
    assert "feature column 'year' holds text (line 6: 'n/a') among numbers" in refused(
        write_kind_tables(tmp_path / "d", rows)
    )
    assert "kind 'word' is not one of number, category" in refused(
        write_kind_tables(tmp_path / "e", None, {"t": "word"})
    )
    assert "columns names 'label', which is not one of its feature columns" in refused(
        write_kind_tables(tmp_path / "f", None, {"label": "category"})
    )


def test_no_encoder_statistic_comes_from_validation_or_test_nodes(tmp_path):
    """Two graphs that differ only in their validation and test nodes' cells: fitted on every node, the
    vocabulary, the categories, the fill of a gap and the date reference would differ, and with them the training
    nodes' features; fitted on the training nodes, nothing of it does."""
    a = kind_rows()
    b = [dict(r) for r in a]
    for r in b:
        if r["split"] != "train":
            r |= {"title": "hypergraph sampling", "venue": "ICDE", "year": "", "published": "2031-01-01"}
    declared = {"year": "number"}
    da = load_custom(write_kind_tables(tmp_path / "a", a, declared))
    db = load_custom(write_kind_tables(tmp_path / "b", b, declared))
    assert da.column_encoding == db.column_encoding and da.feature_names == db.feature_names
    train = da.splits["train"]
    assert torch.equal(da.features["paper"].to_dense()[train], db.features["paper"].to_dense()[train])
    others = torch.cat([db.splits["val"], db.splits["test"]])
    assert set(db.unseen["paper"][others]) == {"title;venue;year"} and set(db.unseen["paper"][train]) == {""}
    x, names = db.features["paper"].to_dense(), db.feature_names["paper"]
    assert (x[others, names.index("venue:unseen")] == 1).all() and (x[others, names.index("title:unseen")] == 1).all()
