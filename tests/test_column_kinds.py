"""Feature columns of every kind in a tables graph (docs/custom_data.md, "Columns and their kinds"): inferred and
declared kinds, the encoders fitted on the training nodes only and kept with the model, unseen values bucketed and
marked, and a numbers-only table read exactly as it always was."""

import json
import logging

import numpy as np
import pytest
import torch

from custom_data import kind_rows, write_kind_tables
from regnn.data.custom import load_custom
from regnn.data.encoders import YEAR_DAYS
from regnn.errors import DataError

FAST = ["model=re_gcn", "runs=1", "trainer.max_epochs=4", "trainer.patience=4", "threads=1", "model.hidden=16"]


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


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    """A cell trained on a graph whose test nodes hold a venue and words no training node has."""
    import regnn

    root = tmp_path_factory.mktemp("kinds")
    rows = kind_rows()
    rows[-1] |= {"venue": "ICDE", "title": "hypergraph query study"}
    path = write_kind_tables(root / "graph", rows)
    out = regnn.run(["dataset=custom", f"dataset.path={path}", *FAST], run_dir=root / "cell")
    return out, rows


def test_a_graph_of_every_kind_trains_predicts_and_explains_with_unseen_values_marked(cell, tmp_path):
    import regnn

    out, rows = cell
    run = out.run_dir / "runs" / "run_00"
    assert json.loads((run / "encoders.json").read_text())["paper"]["fitted_on"] == 36
    p = regnn.predict(out.run_dir)
    df = p.predictions()
    assert p.scores["test_micro_f1"] == out.summary["per_run"][0]["test_micro_f1"]  # the run's own scores
    marks = dict(zip(df.index, df.unseen_values.fillna("")))
    assert marks[rows[-1]["id"]] == "title;venue" and marks[rows[0]["id"]] == ""
    assert len(regnn.explain(out.run_dir).weights)
    # a new paper with a venue and words the training nodes never had: bucketed, marked, predicted
    grown = [*rows, rows[0] | {"id": "new", "split": "", "label": "", "venue": "WWW", "title": "web crawling"}]
    path = write_kind_tables(tmp_path / "grown", grown)
    df = regnn.predict(out.run_dir, dataset_path=str(path), changed_graph=True).predictions()
    assert df.loc["new", "unseen_values"] == "title;venue" and bool(df.loc["new", "new_node"])


def test_encoders_json_changed_or_missing_is_refused(cell, tmp_path):
    import shutil

    import regnn

    out, _ = cell
    copy = tmp_path / "cell"
    shutil.copytree(out.run_dir, copy)
    f = copy / "runs" / "run_00" / "encoders.json"
    state = json.loads(f.read_text())
    state["paper"]["columns"][0]["name"] = "abstract"
    f.write_text(json.dumps(state, sort_keys=True))
    with pytest.raises(DataError, match="encoders.json is not the file training wrote"):
        regnn.predict(copy).predictions()
    f.unlink()
    with pytest.raises(DataError, match="encoders.json is missing"):
        regnn.predict(copy).predictions()


def test_a_table_that_lost_a_column_the_model_read_is_refused(cell, tmp_path):
    import regnn

    out, rows = cell
    path = write_kind_tables(tmp_path / "g", [{k: v for k, v in r.items() if k != "venue"} for r in rows])
    with pytest.raises(DataError, match=r"papers.csv lacks the column\(s\) \['venue'\]"):
        regnn.predict(out.run_dir, dataset_path=str(path), changed_graph=True).predictions()


def test_a_column_empty_in_every_training_node_leaves_every_value_unseen(tmp_path):
    rows = kind_rows()
    for r in rows:
        if r["split"] == "train":
            r["venue"] = ""
    d = load_custom(write_kind_tables(tmp_path / "g", rows, {"venue": "category"}))
    names, x = d.feature_names["paper"], d.features["paper"].to_dense()
    assert [n for n in names if n.startswith("venue")] == ["venue:unseen", "venue:missing"]
    others = torch.cat([d.splits["val"], d.splits["test"]])
    assert (x[others, names.index("venue:unseen")] == 1).all() and all("venue" in u for u in d.unseen["paper"][others])


def test_a_true_false_column_reads_as_0_and_1_as_it_always_did(tmp_path):
    rows = [{k: r[k] for k in ("id", "label", "split", "year", "open")} for r in kind_rows()]
    d = load_custom(write_kind_tables(tmp_path / "g", rows))
    want = torch.tensor([[float(r["year"]), float(r["open"] == "true")] for r in rows])
    assert torch.equal(d.features["paper"], want) and d.column_encoding is None
