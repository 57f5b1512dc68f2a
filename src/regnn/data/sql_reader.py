"""A database as the source of a graph (`format: sql`): a SQLite file (Python's sqlite3) or a DuckDB file (the
`duckdb` package), opened read-only, told apart by their first bytes. Its tables, primary and foreign keys are
read from the database's own catalogue, and a table's rows in their stored order (SQLite's rowid, DuckDB's
insertion order) as the text a CSV export writes: integers as their digits, reals as the shortest text that reads
back as the same double, booleans as true/false, dates and times in ISO 8601, NULL as an empty cell. So a graph read
from a database is the graph read from its tables exported as CSV, to the last bit; a BLOB, a list or a struct is
refused naming the table, the column and the row."""

from __future__ import annotations

import datetime
import decimal
import logging
from pathlib import Path

import numpy as np
import pyarrow as pa

from regnn.data.custom_schema import DOC
from regnn.data.table_reader import Table
from regnn.errors import DataError, quote

SQLITE_MAGIC = b"SQLite format 3\x00"
log = logging.getLogger("regnn")


def _q(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


class DbTable(Table):
    """A database table as read: its cells as text, its rows named by their number and primary key."""

    def __init__(self, path: Path, data: pa.Table, key: str | None = None, keys=None, rows=None):
        super().__init__(path, data, None)
        self.key, self.keys, self.rows = key, keys, rows  # primary key column, its values, the stored row numbers

    def where(self, i: int) -> str:
        row = int(self.rows[i]) if self.rows is not None else i + 1
        value = None if self.keys is None else self.keys[i]
        key = f" ({self.key} {quote(value)})" if self.key is not None and value is not None else ""
        return f"row {row}{key}"


def _text(v):
    """A value as a CSV export writes it; None (NULL) stays None; what has no text form raises TypeError."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, decimal.Decimal)):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview, list, tuple, dict)):
        raise TypeError(type(v).__name__)
    return str(v)


class Database:
    """A SQLite or DuckDB file, read-only."""

    def __init__(self, path: Path):
        self.path = path
        if not path.is_file():
            raise DataError(
                f"{path} {'is a folder' if path.is_dir() else 'does not exist'}; database: names a SQLite or DuckDB "
                f"file ({DOC})"
            )
        with open(path, "rb") as f:
            head = f.read(16)
        if head.startswith(SQLITE_MAGIC):
            import sqlite3

            self.kind = "sqlite"
            self.con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        elif head[8:12] == b"DUCK":
            self.kind = "duckdb"
            try:
                import duckdb
            except ImportError:
                raise DataError(f"{path} is a DuckDB file, and reading one needs duckdb: pip install duckdb") from None
            self.con = duckdb.connect(str(path), read_only=True)
        else:
            raise DataError(
                f"{path} is neither a SQLite nor a DuckDB database file (its first bytes say neither); {DOC}"
            )

    def close(self) -> None:
        self.con.close()

    def _all(self, sql: str, args=()) -> list:
        return self.con.execute(sql, args).fetchall()

    def tables(self) -> list[str]:
        if self.kind == "sqlite":
            rows = self._all("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        else:
            rows = self._all("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND NOT temporary")
        return sorted(r[0] for r in rows)

    def columns(self, table: str) -> list[str]:
        if self.kind == "sqlite":
            return [r[1] for r in self._all(f"PRAGMA table_info({_q(table)})")]
        sql = (
            "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ? "
            "ORDER BY column_index"
        )
        return [r[0] for r in self._all(sql, (table,))]

    def primary_key(self, table: str) -> list[str]:
        if self.kind == "sqlite":
            return [r[1] for r in sorted(self._all(f"PRAGMA table_info({_q(table)})"), key=lambda r: r[5]) if r[5]]
        sql = (
            "SELECT constraint_column_names FROM duckdb_constraints() WHERE table_name = ? "
            "AND constraint_type = 'PRIMARY KEY'"
        )
        rows = self._all(sql, (table,))
        return list(rows[0][0]) if rows else []

    def foreign_keys(self, table: str) -> list[tuple[list[str], str, list[str]]]:
        """(columns, referenced table, referenced columns) per foreign key, in the order of their columns."""
        if self.kind == "sqlite":
            by_id: dict = {}
            for fid, _, ref, col, to, *_ in self._all(f"PRAGMA foreign_key_list({_q(table)})"):
                by_id.setdefault(fid, ([], ref, []))
                by_id[fid][0].append(col)
                by_id[fid][2].append(to)
            keys = list(by_id.values())
        else:
            sql = (
                "SELECT constraint_column_names, referenced_table, referenced_column_names FROM duckdb_constraints() "
                "WHERE table_name = ? AND constraint_type = 'FOREIGN KEY'"
            )
            keys = [(list(c), r, list(rc)) for c, r, rc in self._all(sql, (table,))]
        order = {c: i for i, c in enumerate(self.columns(table))}
        return sorted(keys, key=lambda k: order.get(k[0][0], 0))

    def _order(self, table: str) -> str:
        if self.kind == "duckdb":
            return "rowid"
        try:
            self._all(f"SELECT rowid FROM {_q(table)} LIMIT 0")
            return "rowid"
        except Exception:  # noqa: BLE001  (a WITHOUT ROWID table: stored in its primary key's order)
            return ", ".join(_q(c) for c in self.primary_key(table))

    def read(self, table: str, columns: list[str], key: str | None = None, not_null: str | None = None) -> DbTable:
        """The columns of a table as text (NULL: empty), its rows in stored order; not_null: only the rows where
        that column holds a value (a foreign key's edges), still named by their stored row number."""
        have = self.columns(table)
        gone = [c for c in columns if c not in have]
        if gone:
            raise DataError(f"{self.label(table)} has no column(s) {gone}; its columns: {have[:12]}")
        sql = f"SELECT {', '.join(_q(c) for c in columns)} FROM {_q(table)} ORDER BY {self._order(table)}"
        rows = self._all(sql)
        number = np.arange(1, len(rows) + 1)
        if not_null is not None:
            j = columns.index(not_null)
            number = np.array([i + 1 for i, r in enumerate(rows) if r[j] is not None], dtype=np.int64)
            if len(number) < len(rows):  # said, not silent: a NULL foreign key is a node without that edge
                log.info(
                    "data: %s: %d of %d rows have no %s (NULL): no edge for them",
                    self.label(table),
                    len(rows) - len(number),
                    len(rows),
                    not_null,
                )
            rows = [r for r in rows if r[j] is not None]
        data = {}
        for j, c in enumerate(columns):
            data[c] = pa.array([self._cell(table, c, r[j], i, number) for i, r in enumerate(rows)], pa.string())
        keys = None if key is None else data[key].to_pylist()
        return DbTable(self.label(table), pa.table(data), key, keys, number)

    def _cell(self, table: str, column: str, v, i: int, number) -> str | None:
        try:
            return _text(v)
        except TypeError as e:
            raise DataError(
                f"{self.label(table)}: row {int(number[i])}: column {quote(column)} holds a {e} value; regnn reads "
                "numbers, text, dates and booleans: leave the column out (tables: {table: [columns]})"
            ) from None

    def label(self, table: str) -> Path:
        """How messages name a table: the database file and the table."""
        return Path(f"{self.path} (table {table})")
