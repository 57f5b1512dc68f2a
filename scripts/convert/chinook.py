"""Build the Chinook music store (a public sample database nobody here wrote) as a regnn graph, twice: a SQLite file
read with `format: sql` and the same tables exported as CSV read with `format: tables` (docs/relational_example.md).

    .venv/bin/python scripts/convert/chinook.py --out data/chinook

Source: github.com/lerocha/chinook-database, commit 7f67772503d71ba90f19283c38e93923addb43fa,
ChinookDatabase/DataSources/Chinook_Sqlite.sql (MIT licence, copyright Luis Rocha), pinned beside this script in
chinook_source/ with its licence; its SHA-256 is checked before anything is built.

The task: a track's genre. What changes from the source, and why:
- Track.GenreId, a foreign key to Genre, becomes Track.Genre, the genre's name (the label), and the Genre table is
  left out: a relation to the genre would give the label away.
- Genres with fewer than MIN_TRACKS tracks are no class: their tracks keep their place in the graph, unlabelled and
  in no split (a class of 1 to 17 tracks has too few validation and test tracks to score).
- Track.Split: per genre, the tracks in TrackId order shuffled with a fixed seed, then 60/20/20 train/val/test.
Every other table is the source's, its rows in their stored order. The description reads only the columns in
COLUMNS beside the primary keys (names, addresses, phones and e-mails of customers and employees are left out:
unique per row, they say nothing a model could learn).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import sqlite3
from pathlib import Path

import numpy as np
import yaml

SOURCE = Path(__file__).parent / "chinook_source" / "Chinook_Sqlite.sql"
SOURCE_SHA256 = "caf31d698a4a79c628215b552dfe6575e71be052ae02b8f18e763498f55f5d44"
MIN_TRACKS, SEED, SHARES = 20, 0, (0.6, 0.2)
# the columns read beside each table's primary key: its features and its foreign keys (each one a relation)
COLUMNS = {
    "Album": ["Title", "ArtistId"],
    "Artist": ["Name"],
    "Customer": ["City", "Country", "SupportRepId"],
    "Employee": ["Title", "ReportsTo", "BirthDate", "HireDate"],
    "Invoice": ["CustomerId", "InvoiceDate", "BillingCountry", "Total"],
    "InvoiceLine": ["InvoiceId", "TrackId", "UnitPrice", "Quantity"],
    "MediaType": ["Name"],
    "Playlist": ["Name"],
    "PlaylistTrack": ["PlaylistId", "TrackId"],
    "Track": ["Name", "AlbumId", "MediaTypeId", "Composer", "Milliseconds", "Bytes", "UnitPrice"],
}
KINDS = {"Customer": {"City": "category", "Country": "category"}, "Invoice": {"BillingCountry": "category"}}
TRACK_DDL = """CREATE TABLE [Track]
(
    [TrackId] INTEGER  NOT NULL,
    [Name] NVARCHAR(200)  NOT NULL,
    [AlbumId] INTEGER,
    [MediaTypeId] INTEGER  NOT NULL,
    [Genre] NVARCHAR(120),
    [Split] TEXT,
    [Composer] NVARCHAR(220),
    [Milliseconds] INTEGER  NOT NULL,
    [Bytes] INTEGER,
    [UnitPrice] NUMERIC(10,2)  NOT NULL,
    CONSTRAINT [PK_Track] PRIMARY KEY  ([TrackId]),
    FOREIGN KEY ([AlbumId]) REFERENCES [Album] ([AlbumId]),
    FOREIGN KEY ([MediaTypeId]) REFERENCES [MediaType] ([MediaTypeId])
)"""


def source() -> sqlite3.Connection:
    """The pinned source, loaded into memory after its checksum is checked."""
    data = SOURCE.read_bytes()
    got = hashlib.sha256(data).hexdigest()
    if got != SOURCE_SHA256:
        raise SystemExit(f"{SOURCE}: SHA-256 {got}, expected {SOURCE_SHA256}; restore it from git")
    con = sqlite3.connect(":memory:")
    con.executescript(data.decode("utf-8"))
    return con


def splits(genres: list[str | None]) -> list[str | None]:
    """Per class, its tracks (in TrackId order) shuffled with SEED, then 60/20/20 train/val/test."""
    out: list[str | None] = [None] * len(genres)
    rng = np.random.default_rng(SEED)
    for g in sorted({g for g in genres if g is not None}):
        idx = rng.permutation([i for i, x in enumerate(genres) if x == g])
        n_train, n_val = round(SHARES[0] * len(idx)), round(SHARES[1] * len(idx))
        for k, i in enumerate(idx):
            out[i] = "train" if k < n_train else "val" if k < n_train + n_val else "test"
    return out


def track_rows(src: sqlite3.Connection) -> list[tuple]:
    rows = src.execute(
        "SELECT t.TrackId, t.Name, t.AlbumId, t.MediaTypeId, g.Name, t.Composer, t.Milliseconds, t.Bytes, "
        "t.UnitPrice FROM Track t LEFT JOIN Genre g ON g.GenreId = t.GenreId ORDER BY t.rowid"
    ).fetchall()
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[4]] = counts.get(r[4], 0) + 1
    genres = [r[4] if counts[r[4]] >= MIN_TRACKS else None for r in rows]
    return [(*r[:4], g, s, *r[5:]) for r, g, s in zip(rows, genres, splits(genres))]


def build_database(src: sqlite3.Connection, path: Path) -> None:
    path.unlink(missing_ok=True)
    out = sqlite3.connect(path)
    for table in COLUMNS:
        if table == "Track":
            out.execute(TRACK_DDL)
            out.executemany(f"INSERT INTO Track VALUES ({', '.join('?' * 10)})", track_rows(src))
            continue
        (ddl,) = src.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        out.execute(ddl)
        rows = src.execute(f"SELECT * FROM [{table}] ORDER BY rowid").fetchall()
        out.executemany(f"INSERT INTO [{table}] VALUES ({', '.join('?' * len(rows[0]))})", rows)
    out.commit()
    out.execute("VACUUM")
    out.close()


def cell(v) -> str:
    """A value as a CSV export writes it (format: sql reads the database the same way)."""
    return "" if v is None else repr(v) if isinstance(v, float) else str(v)


def keys(db: sqlite3.Connection, table: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(primary key columns, [(foreign key column, referenced table)] in column order)."""
    info = db.execute(f"PRAGMA table_info([{table}])").fetchall()
    pk = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
    fks = {r[3]: r[2] for r in db.execute(f"PRAGMA foreign_key_list([{table}])").fetchall()}
    return pk, [(r[1], fks[r[1]]) for r in info if r[1] in fks]


def save_csv(path: Path, header: list[str], rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows([[cell(v) for v in r] for r in rows])


def export_tables(db: sqlite3.Connection, folder: Path) -> dict:
    """Every table of the database as CSV, and the format: tables description of the graph format: sql reads
    from it: node types by table name, relations by table and column (a link table's after its name)."""
    nodes, edges = {}, {}
    for table, keep in COLUMNS.items():
        pk, fks = keys(db, table)
        order = "ORDER BY rowid"
        if len(pk) != 1:
            (a, ra), (b, rb) = fks
            save_csv(folder / f"{table}.csv", [a, b], db.execute(f"SELECT [{a}], [{b}] FROM [{table}] {order}"))
            edges[table] = {"file": f"{table}.csv", "source": ra, "target": rb, "columns": [a, b]}
            continue
        always = {pk[0], "Genre", "Split"} if table == "Track" else {pk[0]}
        fk_cols = {c for c, _ in fks}
        cols = [r[1] for r in db.execute(f"PRAGMA table_info([{table}])") if r[1] in always or r[1] in keep]
        cols = [c for c in cols if c not in fk_cols]
        save_csv(folder / f"{table}.csv", cols, db.execute(f"SELECT {', '.join(cols)} FROM [{table}] {order}"))
        nodes[table] = {"file": f"{table}.csv", "id": pk[0]}
        if table == "Track":
            nodes[table] |= {"label": "Genre", "split": "Split"}
        if table in KINDS:
            nodes[table]["columns"] = KINDS[table]
        for c, ref in fks:
            rows = db.execute(f"SELECT [{pk[0]}], [{c}] FROM [{table}] WHERE [{c}] IS NOT NULL {order}")
            save_csv(folder / f"{table}.{c}.csv", [pk[0], c], rows)
            edges[c] = {"file": f"{table}.{c}.csv", "source": table, "target": ref, "columns": [pk[0], c]}
    return {"name": "chinook_tables", "format": "tables", "target": "Track", "nodes": nodes, "edges": edges}


def write(desc: dict, path: Path) -> None:
    path.write_text(yaml.safe_dump(desc, sort_keys=False, allow_unicode=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("data/chinook"))
    a = ap.parse_args()
    (a.out / "sql").mkdir(parents=True, exist_ok=True)
    (a.out / "tables").mkdir(parents=True, exist_ok=True)
    build_database(source(), a.out / "sql" / "chinook.sqlite")
    sql = {"name": "chinook", "format": "sql", "database": "chinook.sqlite", "target": "Track", "label": "Genre"}
    write({**sql, "split": "Split", "tables": COLUMNS, "columns": KINDS}, a.out / "sql" / "dataset.yaml")
    db = sqlite3.connect(a.out / "sql" / "chinook.sqlite")
    write(export_tables(db, a.out / "tables"), a.out / "tables" / "dataset.yaml")
    db.close()
    print(f"wrote {a.out}/sql (format: sql) and {a.out}/tables (format: tables)")


if __name__ == "__main__":
    main()
