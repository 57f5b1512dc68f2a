"""`format: sql`: a graph read from a SQLite or DuckDB file (regnn.data.sql_reader), by the tables reader's rules
(regnn.data.tables: ids as written, every refusal naming the table, the column and the row).

    format: sql
    database: shop.sqlite        # or a DuckDB file
    target: paper                # the labelled table
    label: venue                 # its label column, and its split column (train, val, test)
    split: split
    tables: [paper, author, writes]                # optional: only these tables; or {paper: [title, year], ...}:
                                                   #   only these columns beside the keys, label and split
    columns: {paper: {title: text, year: number}}  # optional: column kinds per table (regnn.data.column_kinds)

Without `nodes:`/`edges:` every table with a one-column primary key is a node type (its ids: that key), every
foreign key of such a table a relation named after its column, from the table to the one it references (a NULL:
no edge), and a table without one whose two columns are foreign keys (a link table) a relation named after the
table, from the first key's table to the second's; every other column is a feature. Node types in the order of
their tables' names, relations in the order of their tables and columns. With `nodes:` and `edges:` the graph is
as a tables description gives it, each entry naming its `table:` instead of a `file:`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from regnn.data.custom_schema import DOC
from regnn.data.sql_reader import Database
from regnn.data.tables import load_tables
from regnn.errors import DataError, quote

log = logging.getLogger("regnn")


def _narrowed(meta: dict, db: Database, where: Path) -> dict[str, list[str] | None]:
    """The tables to read ({table: its columns to read beside the primary key, or None: all})."""
    spec = meta.get("tables")
    have = db.tables()
    if spec is None:
        return {t: None for t in have}
    spec = {t: None for t in spec} if isinstance(spec, list) else spec
    if not isinstance(spec, dict):
        raise DataError(f"{where}: tables must list table names, or map each to its columns; got {quote(spec)}")
    for t, cols in spec.items():
        if t not in have:
            raise DataError(f"{where}: tables names {quote(t)}, which {db.path.name} lacks (tables: {have})")
        if cols is not None and not (isinstance(cols, list) and all(isinstance(c, str) for c in cols)):
            raise DataError(f"{where}: tables.{t} must list column names, got {quote(cols)}")
    return {t: spec[t] for t in have if t in spec}


def _single(fk: tuple, table: str, db: Database) -> tuple[str, str]:
    """(column, referenced table) of a one-column foreign key to a one-column primary key."""
    cols, ref, to = fk
    if len(cols) != 1:
        raise DataError(
            f"{db.label(table)}: foreign key {cols} spans several columns; regnn reads one-column keys only"
        )
    if to and to[0] is not None and [to[0]] != db.primary_key(ref):
        raise DataError(
            f"{db.label(table)}: foreign key {quote(cols[0])} references {ref}.{to[0]}, not its primary key; node "
            f"ids are primary keys: describe the graph with nodes: and edges: ({DOC})"
        )
    return cols[0], ref


def auto_description(meta: dict, db: Database, where: Path) -> tuple[dict, dict]:
    """(the tables description of the database's graph, {entry key: how to read its table})."""
    tables = _narrowed(meta, db, where)
    pks = {t: db.primary_key(t) for t in tables}
    node_types = [t for t in tables if len(pks[t]) == 1]
    nodes, edges, reads = {}, {}, {}
    target, kinds = meta.get("target"), meta.get("columns") or {}
    for t, keep in tables.items():
        fks = [_single(fk, t, db) for fk in db.foreign_keys(t)]
        fks = [(c, r) for c, r in fks if r in tables and (keep is None or c in keep)]
        fk_cols = {c for c, _ in fks}
        always = set(pks[t]) | ({meta.get("label"), meta.get("split")} if t == target else set())
        cols = [c for c in db.columns(t) if keep is None or c in keep or c in always]
        if t in node_types:
            pk = pks[t][0]
            if t == target and meta.get("label") in fk_cols:
                raise DataError(
                    f"{db.label(t)}: the label column {quote(meta['label'])} is a foreign key, whose relation would "
                    "give the label away; leave it out of the relations with tables: {" + t + ": [columns]}"
                )
            entry = {"file": t, "id": pk, **({"columns": kinds[t]} if t in kinds else {})}
            if t == target:
                entry |= {k: meta[k] for k in ("label", "split") if meta.get(k)}
            nodes[t] = entry
            reads[("nodes", t)] = (t, [c for c in cols if c not in fk_cols], pk, None)
            for c, ref in fks:
                key = f"{t}.{c}"
                edges[key] = {"file": key, "source": t, "target": ref, "columns": [pk, c], "relation": c}
                reads[("edges", key)] = (t, [pk, c], pk, c)
        elif len(fks) == 2 and len(pks[t]) != 1:
            extra = [c for c in cols if c not in fk_cols]
            if extra:
                raise DataError(
                    f"{db.label(t)}: a link table (two foreign keys) that also holds {extra}; regnn reads no edge "
                    f"attributes: narrow it with tables: {{{t}: {[c for c, _ in fks]}}}"
                )
            (a, ra), (b, rb) = fks
            edges[t] = {"file": t, "source": ra, "target": rb, "columns": [a, b]}
            reads[("edges", t)] = (t, [a, b], None, None)
        else:
            raise DataError(
                f"{db.label(t)} has neither a one-column primary key (a node type) nor exactly two foreign keys (a "
                "relation); leave it out with tables: [...], or describe the graph with nodes: and edges:"
            )
    return {**meta, "nodes": nodes, "edges": edges}, reads


def given_description(meta: dict, db: Database, where: Path) -> tuple[dict, dict]:
    """nodes: and edges: as in a tables description, each naming its table."""
    out, reads = {**meta, "nodes": {}, "edges": {}}, {}
    for block in ("nodes", "edges"):
        given = meta.get(block)
        if not isinstance(given, dict) or not given:
            raise DataError(f"{where}: nodes: and edges: come together, each mapping names to {{table: ...}}; {DOC}")
        for name, e in given.items():
            e = {"table": e} if isinstance(e, str) else dict(e or {})
            if "file" in e or not e.get("table"):
                raise DataError(f"{where}: {block}.{name} names its database table with table: <name>, not a file")
            t = e.pop("table")
            pk = db.primary_key(t)
            if block == "nodes":
                e.setdefault("id", pk[0] if len(pk) == 1 else "id")
                if name == meta.get("target"):
                    e |= {k: meta[k] for k in ("label", "split") if meta.get(k) and k not in e}
                if t in (meta.get("columns") or {}):
                    e.setdefault("columns", meta["columns"][t])
            out[block][name] = {"file": t, **e}
            reads[(block, name)] = (t, db.columns(t), e.get("id") if block == "nodes" else None, None)
    return out, reads


def load_sql(meta: dict, where: Path, name: str, feats_type: str):
    """The graph of a `format: sql` description (the module's text)."""
    from regnn.data.user_graph import need

    db = Database(where.parent / need(meta, "database", where, "the SQLite or DuckDB file"))
    try:
        if meta.get("nodes") is not None or meta.get("edges") is not None:
            if meta.get("tables") is not None:
                raise DataError(
                    f"{where}: tables: narrows the graph read without nodes: and edges:; give one or the other"
                )
            desc, reads = given_description(meta, db, where)
        else:
            desc, reads = auto_description(meta, db, where)
        for k in ("database", "tables", "columns", "label", "split"):
            desc.pop(k, None)

        def read(block: str, key: str, entry: dict):
            table, cols, pk, not_null = reads[(block, key)]
            return db.read(table, cols, key=pk, not_null=not_null)

        return load_tables(desc, where, name, feats_type, read=read)
    finally:
        db.close()
