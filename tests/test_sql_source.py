"""A graph read from a database (format: sql, docs/custom_data.md): a SQLite file and a DuckDB file give the graph
their tables give as CSV, to the last bit, and so the same cells and predictions; a database changed after training
is named by predict; every refusal names the table, the column and the row, in one line."""

import sqlite3

import numpy as np
import pytest
import torch
import yaml

from custom_data import write_shop_csv, write_shop_database
from regnn.data.custom import load_custom
from regnn.data.fingerprint import data_files
from regnn.errors import DataError, RegnnError

FAST = ["model=re_gcn", "runs=2", "trainer.max_epochs=4", "trainer.patience=4", "threads=1", "model.hidden=16"]
SOURCES = ["csv", "sqlite", "duckdb"]


def write(root, source):
    return write_shop_csv(root / source) if source == "csv" else write_shop_database(root / source, source)


def bits(x: torch.Tensor) -> np.ndarray:
    return x.to_dense().contiguous().numpy().view(np.uint32)


@pytest.mark.parametrize("source", ["sqlite", "duckdb"])
def test_a_database_gives_the_graph_its_tables_give_as_csv_to_the_last_bit(tmp_path, source):
    a, b = load_custom(write(tmp_path, "csv")), load_custom(write(tmp_path, source))
    assert a.graph.canonical_etypes == b.graph.canonical_etypes and a.graph.ntypes == b.graph.ntypes
    assert {"venue", "writes"} <= {e for _, e, _ in b.graph.canonical_etypes}  # a foreign key, a link table
    for et in a.graph.canonical_etypes:
        assert all(torch.equal(x, y) for x, y in zip(a.graph.edges(etype=et), b.graph.edges(etype=et))), et
    for t in a.features:
        assert np.array_equal(bits(a.features[t]), bits(b.features[t])), t
        assert np.array_equal(a.node_ids[t], b.node_ids[t]) and a.unseen[t].tolist() == b.unseen[t].tolist()
    assert a.feature_names == b.feature_names and a.column_encoding == b.column_encoding
    assert "score:missing" in b.feature_names["paper"] and "published:week_sin" in b.feature_names["paper"]
    assert torch.equal(a.labels, b.labels) and all(torch.equal(a.splits[s], b.splits[s]) for s in a.splits)
    assert a.graph.num_edges(("paper", "venue", "venue")) == 59  # the paper whose venue is NULL has no such edge


def test_csv_sqlite_and_duckdb_train_the_same_cells_and_predict_the_same(tmp_path):
    import regnn

    cells = {}
    for source in SOURCES:
        path = write(tmp_path, source)
        cells[source] = regnn.run(
            ["dataset=custom", f"dataset.path={path}", *FAST], run_dir=tmp_path / f"cell_{source}"
        )
    first = cells["csv"]
    for source, out in cells.items():
        assert [r["val_micro_f1"] for r in out.summary["per_run"]] == [
            r["val_micro_f1"] for r in first.summary["per_run"]
        ]
        assert [r["test_micro_f1"] for r in out.summary["per_run"]] == [
            r["test_micro_f1"] for r in first.summary["per_run"]
        ]
        for run in ("run_00", "run_01"):
            w = torch.load(out.run_dir / "runs" / run / "model.pt", weights_only=True)
            w0 = torch.load(first.run_dir / "runs" / run / "model.pt", weights_only=True)
            assert w.keys() == w0.keys() and all(torch.equal(w[k], w0[k]) for k in w), (source, run)
        p, p0 = regnn.predict(out.run_dir).predictions(), regnn.predict(first.run_dir).predictions()
        assert p.equals(p0), source


def test_a_database_changed_after_training_is_named_by_predict(tmp_path):
    import regnn

    path = write_shop_database(tmp_path / "db", "sqlite")
    assert [f.name for f in data_files({"format": "custom", "path": str(path)})] == ["dataset.yaml", "shop.sqlite"]
    out = regnn.run(["dataset=custom", f"dataset.path={path}", *FAST[:1], "runs=1", *FAST[2:]], run_dir=tmp_path / "c")
    regnn.predict(out.run_dir).predictions()  # unchanged: predicts, its scores the run's
    con = sqlite3.connect(path.parent / "shop.sqlite")
    con.execute("UPDATE paper SET title = 'graph graph graph study' WHERE id = 'p0'")
    con.commit()
    con.close()
    with pytest.raises(DataError) as e:
        regnn.predict(out.run_dir).predictions()
    assert "shop.sqlite changed since" in str(e.value) and "features of 1 known paper nodes changed" in str(e.value)
    with pytest.raises(RegnnError, match=r"trained on another graph .*shop.sqlite differ"):  # nor is it resumed
        regnn.run(
            ["dataset=custom", f"dataset.path={path}", *FAST[:1], "runs=1", *FAST[2:], "resume=true"],
            run_dir=tmp_path / "c",
        )


def sql(tmp_path, statements, **meta) -> str:
    """A SQLite file of `statements` read as format: sql with `meta`: the refusal's one line."""
    con = sqlite3.connect(tmp_path / "x.sqlite")
    for s in statements:
        con.execute(s)
    con.commit()
    con.close()
    desc = tmp_path / "dataset.yaml"
    desc.write_text(yaml.safe_dump({"format": "sql", "database": "x.sqlite", "target": "p", **meta}))
    with pytest.raises(DataError) as e:
        load_custom(desc)
    assert "\n" not in str(e.value)
    return str(e.value)


P = "CREATE TABLE p (id TEXT PRIMARY KEY, label TEXT, split TEXT, x REAL, v TEXT REFERENCES v (id))"
V = "CREATE TABLE v (id TEXT PRIMARY KEY)"
ROWS = ["INSERT INTO v VALUES ('v1')", "INSERT INTO p VALUES ('p1', 'a', 'train', 1.0, 'v1')"]


@pytest.mark.parametrize(
    "statements, meta, message",
    [
        (
            [P, V, *ROWS, "INSERT INTO p VALUES ('p2', 'b', 'train', 'abc', 'v1')"],
            {"columns": {"p": {"x": "number"}}},
            "x.sqlite (table p): row 2 (id 'p2'): feature column 'x' (number) holds 'abc', which is not a number",
        ),
        (
            [P, V, *ROWS, "INSERT INTO p VALUES ('p2', 'b', 'train', 2.0, 'v9')"],
            {},
            "x.sqlite (table p): row 2 (id 'p2'): target id 'v9' is not in the v table",
        ),
        (
            [P, V, *ROWS, "INSERT INTO p VALUES ('p2', 'b', 'train', NULL, 'v1')"],
            {},
            "x.sqlite (table p): row 2 (id 'p2'): feature column 'x' is empty",
        ),
        (
            [P, V, *ROWS, "CREATE TABLE log (at TEXT, what TEXT)"],
            {},
            "x.sqlite (table log) has neither a one-column primary key (a node type) nor exactly two foreign keys",
        ),
        (
            [P, V, *ROWS, "CREATE TABLE b (id TEXT PRIMARY KEY, blob BLOB)", "INSERT INTO b VALUES ('b1', x'00ff')"],
            {},
            "x.sqlite (table b): row 1: column 'blob' holds a bytes value",
        ),
        (
            [P, V, *ROWS, "INSERT INTO p VALUES (NULL, 'b', 'train', 2.0, 'v1')"],
            {},
            "x.sqlite (table p): row 2 has no id; every node needs one",
        ),
        ([P, V, *ROWS], {"lable": "label"}, "unknown key 'lable'; did you mean 'label'?"),
        ([P, V, *ROWS], {"label": "v"}, "the label column 'v' is a foreign key"),
        ([P, V, *ROWS], {"tables": ["p", "q"]}, "tables names 'q', which x.sqlite lacks"),
    ],
)
def test_a_bad_database_is_refused_naming_its_table_column_and_row(tmp_path, statements, meta, message):
    assert message in sql(tmp_path, statements, **meta)


def test_tables_and_columns_narrow_the_graph_and_nodes_edges_read_as_in_tables(tmp_path):
    path = write_shop_database(tmp_path / "db", "sqlite")
    meta = yaml.safe_load(path.read_text())
    del meta["columns"]  # declares the kind of score, which the narrowed graph does not read
    path.write_text(yaml.safe_dump({**meta, "tables": {"author": [], "paper": ["title"], "writes": None}}))
    d = load_custom(path)
    assert d.graph.ntypes == ["author", "paper"] and {e for _, e, _ in d.graph.canonical_etypes} == {
        "writes",
        "rev_writes",
    }
    assert {n.split(":")[0] for n in d.feature_names["paper"]} == {"title"} and "author" not in (d.feature_names or {})
    explicit = {k: meta[k] for k in ("format", "database", "target", "label", "split")}
    explicit["nodes"] = {
        "author": {"table": "author", "features": []},
        "paper": {"table": "paper", "features": ["title"]},
    }
    explicit["edges"] = {"writes": {"table": "writes", "source": "author", "target": "paper"}}
    path.write_text(yaml.safe_dump(explicit))
    e = load_custom(path)
    assert e.feature_names == d.feature_names and torch.equal(
        e.features["paper"].to_dense(), d.features["paper"].to_dense()
    )


def test_a_duckdb_file_without_duckdb_names_what_to_install(tmp_path, monkeypatch):
    import sys

    path = write_shop_database(tmp_path / "db", "duckdb")
    monkeypatch.setitem(sys.modules, "duckdb", None)
    with pytest.raises(DataError, match="is a DuckDB file, and reading one needs duckdb: pip install duckdb"):
        load_custom(path)
