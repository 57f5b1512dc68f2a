"""format: tables reads every id, label and split exactly as written, and no quirk of a table's file loads as another
graph: a byte-order mark, CRLF or CR line ends, blank lines, quoting every field, UTF-16, or parquet instead of CSV
give the graph of the plain CSV twin; a repeated header line or a column named twice is refused; a bad cell is
refused in one line naming the file and the line it is on (CSV; the header is line 1) or its row (parquet).

The property tests generate small graphs whose ids and class names include what CSV readers like to reinterpret
(`01`, `NA`, `null`, `nan`, `None`, numbers past int64, commas, quotes, line breaks), write them with a quirk and
perhaps one planted bad cell, and compare what loads with what was written.
"""

from __future__ import annotations

import csv
import io
import re
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regnn.data.custom import load_custom
from regnn.errors import DataError

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)
EXAMPLES = 40
TRICKY = ["01", "1", "001", "1.0", "-0", "1e3", "NA", "null", "NULL", "nan", "NaN", "None", "N/A", "#N/A", "n/a"]
TRICKY += ["TRUE", "false", "18446744073709551616", "a,b", 'say "hi"', "two\nlines", " x", "é", ""]
# the header names are never ids here (a row equal to the header is refused: test_a_repeated_header_is_refused)
ALPHABET = "abcxyz0189 ,\"'-.é"
CLASSES = ["NA", "null", "nan", "None", "N/A", "0", "1", "01", "b,c"]
PAPER_HEADER = ["id", "label", "split", "f0", "f1"]
AUTHOR_HEADER = ["author"]
EDGE_HEADER = ["source", "target"]
FILES = {"paper": "papers", "author": "authors", "writes": "writes"}


def breaks(text: str) -> int:
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def csv_row(fields, quote_all=False, end="\n") -> str:
    """One row as a CSV writer gives it (a value holding a line break quoted, whatever the line end)."""
    quote_all = quote_all or any("\n" in f or "\r" in f for f in fields)
    buf = io.StringIO()
    csv.writer(buf, lineterminator=end, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL).writerow(fields)
    return buf.getvalue()


@st.composite
def graphs(draw):
    """{table: (header, rows)} of a small graph, every class with a training node, and its class order."""
    ident = st.one_of(st.sampled_from([t for t in TRICKY if t]), st.text(ALPHABET, min_size=1, max_size=4))
    papers = draw(st.lists(ident, min_size=3, max_size=8, unique=True))
    authors = draw(st.lists(ident, min_size=1, max_size=6, unique=True))
    first = draw(st.sampled_from(CLASSES))
    rows, seen = [], {first}
    for i, p in enumerate(papers):  # the first three: one class in train, val and test; then anything
        label = first if i < 3 else draw(st.sampled_from([*CLASSES, ""]))
        split = ("train", "val", "test")[i] if i < 3 else "" if not label else "train" if label not in seen else None
        split = draw(st.sampled_from(["train", "val", "test", ""])) if split is None else split
        seen.add(label)
        f = [repr(draw(st.integers(-8, 8)) / 4), draw(st.sampled_from(["0", "1", "007", "1e3", "-2.5", "0.125"]))]
        rows.append([p, label, split, *f])
    pairs = draw(st.lists(st.tuples(st.sampled_from(authors), st.sampled_from(papers)), min_size=1, max_size=10))
    tables = {"paper": (PAPER_HEADER, rows), "author": (AUTHOR_HEADER, [[a] for a in authors])}
    tables["writes"] = (EDGE_HEADER, [list(pair) for pair in pairs])
    return tables, [c for c in CLASSES if c in seen]


def write(folder: Path, tables: dict, classes: list, quirk: str = "plain", data=None) -> tuple[Path, dict]:
    """The graph's files with one quirk; returns the yaml and, per table, the line on which each data row starts."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"format": "tables", "target": "paper", "classes": classes, "reverse": "add"}
    meta["nodes"] = {"paper": {"file": "papers.csv"}, "author": {"file": "authors.csv", "id": "author"}}
    meta["edges"] = {"writes": {"file": "writes.csv", "source": "author", "target": "paper"}}
    which = data.draw(st.sampled_from(sorted(tables))) if data is not None else None
    lines = {}
    for name, (header, rows) in tables.items():
        file = folder / f"{FILES[name]}.csv"
        if quirk == "parquet":
            file = file.with_suffix(".parquet")
            pq.write_table(parquet_table(header, rows), file)
            lines[name] = [f"row {i + 1}" for i in range(len(rows))]
        else:
            text, lines[name] = csv_text(
                header, rows, quirk if name == which or quirk in ("crlf", "cr") else "plain", data
            )
            encoding = {"bom": "utf-8-sig", "utf16": "utf-16"}.get(quirk if name == which else "", "utf-8")
            file.write_bytes(text.encode(encoding))
        (meta["nodes"] if name in meta["nodes"] else meta["edges"])[name]["file"] = file.name
    (folder / "dataset.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return folder / "dataset.yaml", {**lines, "file": {n: FILES[n] for n in tables}, "which": which}


def csv_text(header, rows, quirk: str, data) -> tuple[str, list[str]]:
    end = {"crlf": "\r\n", "cr": "\r"}.get(quirk, "\n")
    parts = [csv_row(header, quirk == "quote_all", end)] + [csv_row(r, quirk == "quote_all", end) for r in rows]
    if quirk == "blank_line":
        parts.insert(data.draw(st.integers(1, len(parts))), end)
    if quirk == "repeat_header":
        parts.insert(data.draw(st.integers(2, len(parts))), parts[0])
    if quirk == "duplicate_column":
        parts = [csv_row([*f, f[0]], end=end) for f in [header, *rows]]
    text = "".join(parts)
    if quirk == "no_final_newline":
        text = text[: -len(end)]
    starts, at = [], 0
    for p in parts:
        starts.append(f"line {breaks(text[:at]) + 1}")
        at += len(p)
    return text, [s for i, s in enumerate(starts) if i and parts[i] not in (end, parts[0])]  # the data rows


def parquet_table(header, rows) -> pa.Table:
    cols = {}
    for j, name in enumerate(header):
        values = [r[j] for r in rows]
        if name.startswith("f"):
            try:
                values = pa.array([None if v == "" else float(v) for v in values], pa.float64())
            except ValueError:
                values = pa.array(values, pa.string())
        cols[name] = values
    return pa.table(cols)


def loaded(d) -> dict:
    """Everything a loaded graph is made of, as plain values."""
    g = d.graph
    return {
        "ids": {t: list(map(str, d.node_ids[t])) for t in g.ntypes},
        "edges": {et: [x.tolist() for x in g.edges(etype=et)] for et in g.canonical_etypes},
        "labels": d.known_labels().tolist(),
        "splits": {s: d.splits[s].tolist() for s in ("train", "val", "test")},
        "features": {t: d.features[t].to_dense().tolist() for t in g.ntypes},
        "classes": list(d.class_names),
    }


def expected(tables: dict, classes: list) -> dict:
    """What the written graph is, by hand: ids as written, edges by position, labels by class name."""
    papers = [r[0] for r in tables["paper"][1]]
    authors = [r[0] for r in tables["author"][1]]
    src = [authors.index(a) for a, _ in tables["writes"][1]]
    dst = [papers.index(p) for _, p in tables["writes"][1]]
    rows = tables["paper"][1]
    return {
        "ids": {"author": authors, "paper": papers},
        "pairs": sorted(zip(src, dst)),
        "labels": [classes.index(r[1]) if r[1] else -1 for r in rows],
        "splits": {s: [i for i, r in enumerate(rows) if r[2] == s] for s in ("train", "val", "test")},
        "features": [[float(np.float32(float(v))) for v in r[3:]] for r in rows],
    }


QUIRKS_SAME = ["plain", "bom", "crlf", "cr", "quote_all", "blank_line", "no_final_newline", "utf16", "parquet"]


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(graphs(), st.sampled_from(QUIRKS_SAME), st.data())
def test_a_quirk_of_the_file_gives_the_graph_as_written(graph, quirk, data):
    tables, classes = graph
    with tempfile.TemporaryDirectory() as tmp:
        plain = loaded(load_custom(write(Path(tmp) / "plain", tables, classes)[0]))
        got = loaded(load_custom(write(Path(tmp) / "quirk", tables, classes, quirk, data)[0]))
    assert got == plain, quirk
    want = expected(tables, classes)
    assert got["ids"] == want["ids"] and got["classes"] == classes
    assert sorted(zip(*got["edges"][("author", "writes", "paper")])) == want["pairs"]
    assert got["labels"] == want["labels"]
    assert got["splits"] == want["splits"] and got["features"]["paper"] == want["features"]


def refused(yaml_path: Path) -> str:
    with pytest.raises(DataError) as e:
        load_custom(yaml_path)
    message = str(e.value)
    assert "\n" not in message and "\r" not in message and len(message) < 600, message
    return message


@settings(max_examples=EXAMPLES // 2, **SETTINGS)
@given(graphs(), st.sampled_from(["repeat_header", "duplicate_column"]), st.data())
def test_a_repeated_header_or_a_column_named_twice_is_refused(graph, quirk, data):
    tables, classes = graph
    with tempfile.TemporaryDirectory() as tmp:
        y, lines = write(Path(tmp), tables, classes, quirk, data)
        message = refused(y)
        text = (Path(tmp) / f"{lines['file'][lines['which']]}.csv").read_text()
    assert f"{lines['file'][lines['which']]}.csv" in message
    header = tables[lines["which"]][0]
    if quirk == "duplicate_column":
        assert f"column name {header[0]!r} appears more than once" in message
    else:
        at = [i + 1 for i, line in enumerate(io.StringIO(text, newline="")) if line == csv_row(header)][1]
        assert f"line {at} repeats the header" in message


def plant(tables: dict, kind: str, data) -> tuple[str, int, str]:
    """One bad cell in a copy of the tables: (its table, its data row, a phrase the refusal must hold)."""
    rows = [list(r) for r in tables["paper"][1]]
    k = data.draw(st.integers(0, len(rows) - 1))
    if kind == "dangling":
        edges = [list(r) for r in tables["writes"][1]]
        k = data.draw(st.integers(0, len(edges) - 1))
        edges[k][1] = "zz-nobody"
        tables["writes"] = (EDGE_HEADER, edges)
        return "writes", k, "target id 'zz-nobody' is not in the paper table"
    if kind == "duplicate_id":
        k = data.draw(st.integers(1, len(rows) - 1))
        j = data.draw(st.integers(0, k - 1))
        rows[k][0] = rows[j][0]
        tables["paper"] = (PAPER_HEADER, rows)
        return "paper", k, "appears twice"
    cell = {"empty_id": (0, ""), "bad_split": (2, "Train"), "empty_feature": (3, ""), "nan_feature": (4, "nan")}
    value = data.draw(st.sampled_from(["high", "NA", "null", "N/A"]))
    column, rows[k][cell.get(kind, (3, value))[0]] = cell.get(kind, (3, value))
    tables["paper"] = (PAPER_HEADER, rows)
    phrase = {
        "empty_id": "has no id",
        "bad_split": "split 'Train' is not train, val or test",
        "empty_feature": "feature column 'f0' is empty",
        "nan_feature": "feature column 'f1' holds NaN or inf",
    }
    return "paper", k, phrase.get(kind, "feature column 'f0' holds text")


PLANTED = ["dangling", "duplicate_id", "empty_id", "bad_split", "empty_feature", "nan_feature", "text"]


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(graphs(), st.sampled_from(QUIRKS_SAME), st.data())
def test_a_bad_cell_is_refused_naming_its_file_and_line(graph, quirk, data):
    tables, classes = graph
    kind = data.draw(st.sampled_from(PLANTED))
    planted = dict(tables)
    table, k, phrase = plant(planted, kind, data)
    with tempfile.TemporaryDirectory() as tmp:
        y, lines = write(Path(tmp), planted, classes, quirk, data)
        message = refused(y)
    assert f"{FILES[table]}." in message and phrase in message, (message, kind)
    where = lines[table][k]
    assert re.search(rf"\b{where}\b", message), (message, where)


# Plain cases, one per rule of docs/custom_data.md ("How cells are read").

PAPERS = "id,label,split,f0\np1,a,train,1\np2,b,train,2\np3,a,val,0\np4,b,test,1\n"
AUTHORS = "id\na1\na2\n"
WRITES = "source,target\na1,p1\na2,p2\n"


def files(folder: Path, papers=PAPERS, authors=AUTHORS, writes=WRITES, **nodes) -> Path:
    """papers (target), authors and writes (author -> paper) tables, each given as text, bytes or a pyarrow table
    (then written as parquet); returns the dataset.yaml."""
    folder.mkdir(parents=True, exist_ok=True)
    names = {}
    for stem, content in (("papers", papers), ("authors", authors), ("writes", writes)):
        if isinstance(content, pa.Table):
            names[stem] = f"{stem}.parquet"
            pq.write_table(content, folder / names[stem])
        else:
            names[stem] = f"{stem}.csv"
            (folder / names[stem]).write_bytes(content if isinstance(content, bytes) else content.encode())
    meta = {"format": "tables", "target": "paper"}
    meta["nodes"] = {"paper": {"file": names["papers"], **nodes}, "author": {"file": names["authors"]}}
    meta["edges"] = {"writes": {"file": names["writes"], "source": "author", "target": "paper"}}
    (folder / "dataset.yaml").write_text(yaml.safe_dump(meta))
    return folder / "dataset.yaml"


def edges(d) -> list[list[int]]:
    return [x.tolist() for x in d.graph.edges(etype=("author", "writes", "paper"))]


def test_a_byte_order_mark_leaves_every_id_as_written(tmp_path):
    d = load_custom(files(tmp_path / "a", authors="id\n01\n1\n", writes="\ufeffsource,target\n01,p1\n1,p2\n01,p3\n"))
    assert list(d.node_ids["author"]) == ["01", "1"] and edges(d) == [[0, 1, 0], [0, 1, 2]]
    ids = [f"{i:03d}" for i in range(40)]
    authors = "\ufeffid\n" + "".join(f"{i}\n" for i in ids)
    writes = "\ufeffsource,target\n" + "".join(f"{i},p{1 + k % 4}\n" for k, i in enumerate(ids))
    d = load_custom(files(tmp_path / "b", authors=authors, writes=writes))
    assert list(d.node_ids["author"]) == ids and edges(d)[0] == list(range(40))


@pytest.mark.parametrize("encode", [lambda t: t.encode("utf-16"), lambda t: b"\xfe\xff" + t.encode("utf-16-be")])
def test_utf16_with_its_byte_order_mark_reads_as_its_utf8_twin(tmp_path, encode):
    authors = 'id\n"a,1"\né\n'
    twin = loaded(load_custom(files(tmp_path / "utf8", authors=authors, writes="source,target\né,p1\n")))
    got = loaded(load_custom(files(tmp_path / "utf16", authors=encode(authors), writes="source,target\né,p1\n")))
    assert got == twin and twin["ids"]["author"] == ["a,1", "é"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("id\na1\nb\xe9\n".encode("latin-1"), "authors.csv: line 3 is not UTF-8 text (byte 0xe9)"),
        ("id\xe9\na1\n".encode("latin-1"), "authors.csv: line 1 is not UTF-8 text"),
        ("id\na1\n".encode("utf-16-le"), "authors.csv holds NUL bytes: it is not UTF-8 text"),
        (b"", "authors.csv is empty: a table starts with a header line"),
        (b"id\n", "authors.csv holds no nodes"),
        (b"id", "authors.csv holds no nodes"),
    ],
)
def test_undecodable_or_empty_node_tables_are_refused_in_one_line(tmp_path, content, message):
    assert message in refused(files(tmp_path, authors=content))


def test_null_sentinels_are_ids_and_class_names_and_only_an_empty_cell_is_missing(tmp_path):
    papers = "id,label,split,f0\nNA,null,train,1\nnull,NA,train,2\nnan,None,train,0\nN/A,,,1\n"
    papers += "None,NA,val,1\n#N/A,null,test,1\nNULL,None,test,1\n"
    d = load_custom(files(tmp_path, papers=papers, writes="source,target\na1,NA\na2,null\na2,N/A\n"))
    assert list(d.node_ids["paper"]) == ["NA", "null", "nan", "N/A", "None", "#N/A", "NULL"]
    assert d.class_names == ["NA", "None", "null"] and d.known_labels().tolist() == [2, 0, 1, -1, 0, 2, 1]
    assert edges(d) == [[0, 1, 1], [0, 1, 3]]
    assert "papers.csv: line 3 has no id" in refused(files(tmp_path / "b", papers=papers.replace("null,NA", ",NA")))


def test_ids_stay_text_past_int64_with_commas_quotes_and_leading_zeros(tmp_path):
    authors = 'id\n18446744073709551616\n01\n1\n"a,b"\n"say ""hi"""\n'
    writes = 'source,target\n1,p1\n"a,b",p2\n01,p3\n"say ""hi""",p4\n18446744073709551616,p1\n'
    d = load_custom(files(tmp_path, authors=authors, writes=writes))
    assert list(d.node_ids["author"]) == ["18446744073709551616", "01", "1", "a,b", 'say "hi"']
    assert edges(d) == [[2, 3, 1, 4, 0], [0, 1, 2, 3, 0]]


def test_parquet_integer_ids_are_their_digits(tmp_path):
    writes = pa.table({"source": pa.array([1, 1], pa.int64()), "target": pa.array(["p1", "p2"])})
    d = load_custom(files(tmp_path, authors="id\n01\n1\n", writes=writes))
    assert edges(d) == [[1, 1], [0, 1]]
    writes = pa.table({"source": pa.array([1.0, None]), "target": pa.array(["p1", "p2"])})
    assert "writes.parquet: row 2 has no source id" in refused(
        files(tmp_path / "b", authors="id\n01\n1\n", writes=writes)
    )
    # past 2^53 a float is not the integer that was written (2^53 + 1 reads as 2^53): refused, not guessed
    writes = pa.table({"source": pa.array([1.0, 1e20]), "target": pa.array(["p1", "p2"])})
    assert "writes.parquet: column 'source' (the source ids) holds the float 1e+20, past 2^53" in refused(
        files(tmp_path / "c", authors="id\n1\n", writes=writes)
    )


@pytest.mark.parametrize(
    "cell, message",
    [
        ("", "papers.csv: line 3: feature column 'f0' is empty"),
        ("nan", "papers.csv: line 3: feature column 'f0' holds NaN or inf (nan)"),
        ("-inf", "papers.csv: line 3: feature column 'f0' holds NaN or inf (-inf)"),
        ("1e39", "papers.csv: line 3: feature column 'f0' holds a value beyond float32"),
        ("NA", "papers.csv: feature column 'f0' holds text (line 3: 'NA')"),
        ("1 ", "papers.csv: feature column 'f0' holds text (line 3: '1 ')"),
    ],
)
def test_a_feature_cell_that_is_not_a_finite_number_is_located(tmp_path, cell, message):
    papers = PAPERS.replace("p2,b,train,2", f"p2,b,train,{cell}")
    assert message in refused(files(tmp_path, papers=papers))


@pytest.mark.parametrize(
    "authors, writes, message",
    [
        ("id\na1\nid\na2\n", WRITES, "authors.csv: line 3 repeats the header ('id')"),
        (AUTHORS, "source,target\na1,p1\n\nsource,target\na2,p2\n", "writes.csv: line 4 repeats the header"),
        ("id,id\na1,a2\n", WRITES, "authors.csv: column name 'id' appears more than once"),
        (AUTHORS, "source,target,source\na1,p1,a2\n", "writes.csv: column name 'source' appears more than once"),
    ],
)
def test_a_repeated_header_or_a_column_named_twice_is_named(tmp_path, authors, writes, message):
    assert message in refused(files(tmp_path, authors=authors, writes=writes))


def test_parquet_columns_named_twice_are_named(tmp_path):
    authors = pa.Table.from_arrays([pa.array(["a1", "a2"]), pa.array([1.0, 2.0])], names=["id", "id"])
    assert "authors.parquet: column name 'id' appears more than once" in refused(files(tmp_path, authors=authors))


@pytest.mark.parametrize(
    "writes, message",
    [
        ('source,target\r\n\r\n"a\nb",p1\r\na1,p9\r\n', "writes.csv: line 5: target id 'p9' is not in the paper table"),
        ('source,target\n\n"a\nb",p1\na1\n', "writes.csv: line 5 has 1 field but the header names 2 columns"),
        ('source,target\n"a\nb",p1\n,p2\n', "writes.csv: line 4 has no source id"),
    ],
)
def test_lines_count_blank_lines_and_line_breaks_in_quoted_values(tmp_path, writes, message):
    assert message in refused(files(tmp_path, authors='id\n"a\nb"\na1\n', writes=writes))


@pytest.mark.parametrize(
    "vectors, message",
    [
        ([[1.0, 0.0], [0.0, 1.0], [1.0], [1.0, 1.0]], "papers.parquet: row 3: column 'emb' holds 1 numbers but row 1"),
        ([[1.0, 0.0], None, [1.0, 0.0], [1.0, 1.0]], "papers.parquet: row 2: column 'emb' holds no vector"),
        ([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [None, 1.0]], "papers.parquet: row 4: column 'emb' holds an empty value"),
        ([[1.0, 0.0], [0.0, float("nan")], [1.0, 0.0], [1.0, 1.0]], "papers.parquet: row 2: column 'emb' holds NaN"),
    ],
)
def test_a_ragged_or_missing_vector_is_located(tmp_path, vectors, message):
    papers = pa.table(
        {"id": ["p1", "p2", "p3", "p4"], "label": ["a", "b", "a", "b"], "split": ["train", "train", "val", "test"]}
    )
    good = load_custom(
        files(tmp_path / "good", papers=papers.append_column("emb", pa.array([[1.0, 2.0]] * 4)), features="emb")
    )
    assert good.features["paper"].to_dense().tolist() == [[1.0, 2.0]] * 4
    assert message in refused(files(tmp_path, papers=papers.append_column("emb", pa.array(vectors)), features="emb"))


@pytest.mark.parametrize(
    "labels, classes",
    [(["10", "9", "1", "01"], ["01", "1", "9", "10"]), (["b", "10", "9", "a"], ["10", "9", "a", "b"])],
)
def test_class_names_are_the_labels_as_written_in_number_order_where_all_are_numbers(tmp_path, labels, classes):
    rows = [
        f"p{i + 1},{y},{s},1" for i, (y, s) in enumerate(zip(labels * 3, ["train"] * 4 + ["val"] * 4 + ["test"] * 4))
    ]
    d = load_custom(files(tmp_path, papers="id,label,split,f0\n" + "\n".join(rows) + "\n"))
    assert d.class_names == classes and [d.class_names[y] for y in d.known_labels()] == labels * 3


@pytest.mark.parametrize(
    "row, message",
    [
        ("p2, ,train,2", "papers.csv: line 3: label ' ' is only blank space"),
        ("p2,b, train,2", "line 3: split ' train'"),
    ],
)
def test_blank_labels_and_padded_splits_are_refused_not_guessed(tmp_path, row, message):
    assert message in refused(files(tmp_path, papers=PAPERS.replace("p2,b,train,2", row)))


def test_two_byte_order_marked_exports_joined_with_cat_are_refused_at_the_second_mark(tmp_path):
    authors = "\ufeffid\r\na1\r\na2\r\n\ufeffid\r\na3\r\n"  # Excel's "CSV UTF-8" twice, joined
    with pytest.raises(DataError) as e:
        load_custom(files(tmp_path / "a", authors=authors, writes="source,target\na1,p1\n"))
    assert "authors.csv: line 4 starts with a byte-order mark" in str(e.value) and "\n" not in str(e.value)


def test_a_graph_to_predict_on_may_have_no_label_at_all():
    """Read for predictions (empty_splits_allowed), a target table with every label empty, or without label and
    split columns, gives every node unlabelled; read for training it is refused."""
    from regnn.data.dataset import empty_splits_allowed

    with tempfile.TemporaryDirectory() as tmp:
        empty = files(Path(tmp) / "empty", papers="id,label,split,f0\np1,,,1\np2,,,2\n")
        without = files(Path(tmp) / "without", papers="id,f0\np1,1\np2,2\n")
        for desc in (empty, without):
            with empty_splits_allowed():
                d = load_custom(desc)
            assert d.unlabelled.all() and all(len(d.splits[s]) == 0 for s in ("train", "val", "test"))
            with pytest.raises(DataError):
                load_custom(desc)


def test_a_large_table_is_read_with_a_line_before_and_after(tmp_path, monkeypatch, caplog):
    import logging

    from regnn.data import table_reader

    small = tmp_path / "small.csv"
    small.write_text("id,x\na,1\nb,2\n")
    with caplog.at_level(logging.INFO, logger="regnn"):
        table_reader.read_table(small)
        assert not caplog.records  # a small table loads in no time: nothing to watch
        monkeypatch.setattr(table_reader, "LOUD_BYTES", 1)
        table_reader.read_table(small)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == f"data: reading {small} (0 MB)" and lines[1].startswith("data: read small.csv: 2 rows (")
