"""Writers of a user's own dataset in the custom formats, with node types and relations unlike DBLP/ACM/IMDB.

The graph is the synthetic one (class signal planted in the relations and in the `shop` features), renamed:
customer (target) -buys-> shop -trusted/noise-, shop -located_in-> city (and for MAGNN a fourth type, region).
"""

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import yaml

from regnn.data import make_synthetic

TYPES = {"item": "customer", "source": "shop", "tag": "city"}
RELS = {"item->source": "trusts", "item->noise": "visits", "source->tag": "located_in"}


def synthetic(num_items=240, seed=0):
    return make_synthetic(num_items=num_items, num_sources=120, num_tags=12, seed=seed)


def npz_arrays(seed=0) -> dict[str, np.ndarray]:
    """The arrays of the npz format for the shops graph (one direction per relation; cities without features)."""
    d = synthetic(seed=seed)
    z = {}
    for s, e, t in d.graph.canonical_etypes:
        if e in RELS:
            z[f"edges:{TYPES[s]}:{RELS[e]}:{TYPES[t]}"] = np.stack([x.numpy() for x in d.graph.edges(etype=(s, e, t))])
    z["features:customer"], z["features:shop"] = d.features["item"].numpy(), d.features["source"].numpy()
    z["num_nodes:city"] = np.array(d.graph.num_nodes("tag"))
    z["labels"] = d.labels.numpy()
    z["train"] = d.splits["train"].numpy()  # ids
    for s in ("val", "test"):  # masks
        m = np.zeros(d.graph.num_nodes("item"), dtype=bool)
        m[d.splits[s].numpy()] = True
        z[s] = m
    return z


def write_npz(root: Path, meta_overrides: dict | None = None, seed=0, change=None) -> Path:
    """graph.npz + dataset.yaml (format: npz); change(arrays) may edit the arrays first; returns the yaml path."""
    z = npz_arrays(seed)
    if change is not None:
        change(z)
    root.mkdir(parents=True, exist_ok=True)
    np.savez(root / "graph.npz", **z)
    meta = {"format": "npz", "graph": "graph.npz", "target": "customer", **(meta_overrides or {})}
    (root / "dataset.yaml").write_text(yaml.safe_dump(meta))
    return root / "dataset.yaml"


def edit_npz(root: Path, change) -> None:
    with np.load(root / "graph.npz") as f:
        z = dict(f)
    change(z)
    np.savez(root / "graph.npz", **z)


def write_dgl(root: Path, meta_overrides: dict | None = None, seed=0) -> Path:
    """A dgl.save_graphs file (one direction per relation) + dataset.yaml; returns the yaml path. Skips the calling
    test where DGL is not installed (format: dgl is the one part of regnn that needs it)."""
    dgl = pytest.importorskip("dgl", reason="format: dgl reads dgl.save_graphs files, which needs DGL (not installed)")
    d = synthetic(seed=seed)
    data = {}
    for s, e, t in d.graph.canonical_etypes:
        if e in RELS:
            data[(TYPES[s], RELS[e], TYPES[t])] = d.graph.edges(etype=(s, e, t))
    g = dgl.heterograph(data, num_nodes_dict={TYPES[t]: d.graph.num_nodes(t) for t in d.graph.ntypes})
    for t, x in d.features.items():
        if t != "tag":  # cities have no features: one-hot ids
            g.nodes[TYPES[t]].data["x"] = x
    n = g.num_nodes("customer")
    g.nodes["customer"].data["y"] = d.labels
    for s in ("train", "val", "test"):
        m = torch.zeros(n, dtype=torch.bool)
        m[d.splits[s]] = True
        g.nodes["customer"].data[f"{s}_mask"] = m
    root.mkdir(parents=True, exist_ok=True)
    dgl.save_graphs(str(root / "shops.bin"), [g])
    meta = {
        "format": "dgl",
        "graph": "shops.bin",
        "target": "customer",
        "label": "y",
        "features": "x",
        "splits": {"train": "train_mask", "val": "val_mask", "test": "test_mask"},
        **(meta_overrides or {}),
    }
    (root / "dataset.yaml").write_text(yaml.safe_dump(meta))
    return root / "dataset.yaml"


def write_magnn(root: Path, seed=0) -> Path:
    """MAGNN-style files for four node types (customer, shop, city, region) + dataset.yaml with the schema."""
    d = synthetic(seed=seed)
    n = {t: d.graph.num_nodes(t) for t in ("item", "source", "tag")}
    n_region = 3
    off = {"item": 0, "source": n["item"], "tag": n["item"] + n["source"]}
    region_off = off["tag"] + n["tag"]
    total = region_off + n_region
    rows, cols = [], []
    for s, e, t in d.graph.canonical_etypes:
        if e in RELS:
            u, v = d.graph.edges(etype=(s, e, t))
            rows.append(u.numpy() + off[s])
            cols.append(v.numpy() + off[t])
    city = np.arange(n["tag"])
    rows.append(city + off["tag"])
    cols.append(city % n_region + region_off)  # city -in-> region
    r, c = np.concatenate(rows), np.concatenate(cols)
    adj = sp.coo_matrix((np.ones_like(r, dtype=np.float32), (r, c)), shape=(total, total)).tocsr()
    adj.data[:] = 1
    root.mkdir(parents=True, exist_ok=True)
    sp.save_npz(root / "adjM.npz", adj)
    node_types = np.concatenate(
        [np.full(n["item"], 0), np.full(n["source"], 1), np.full(n["tag"], 2), np.full(n_region, 3)]
    )
    np.save(root / "node_types.npy", node_types)
    np.save(root / "features_0.npy", d.features["item"].numpy())
    np.save(root / "features_1.npy", d.features["source"].numpy())
    np.save(root / "labels.npy", d.labels.numpy())
    np.savez(root / "train_val_test_idx.npz", **{f"{s}_idx": d.splits[s].numpy() for s in ("train", "val", "test")})
    meta = {
        "format": "magnn",
        "name": "shops",
        "schema": {
            "node_types": ["customer", "shop", "city", "region"],
            "target": "customer",
            "features": {"customer": "features_0.npy", "shop": "features_1.npy"},  # city and region: one-hot ids
            "relations": [
                ["customer", "shop"],
                ["shop", "city", "located_in", "hosts"],
                ["city", "region", "in", "has"],
            ],
            "num_classes": 3,
        },
    }
    (root / "dataset.yaml").write_text(yaml.safe_dump(meta))
    return root / "dataset.yaml"


KIND_WORDS = {"a": ["graph", "neural", "network", "embedding"], "b": ["query", "index", "database", "transaction"]}
KIND_VENUES = {"a": ["KDD", "NeurIPS"], "b": ["VLDB", "SIGMOD"]}


def kind_rows(n: int = 60, seed: int = 0) -> list[dict]:
    """Papers with a column of every kind (title: text, venue: category, year: number, published: date, open:
    boolean); the class shows in each of them, and ten authors write them."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        c = "ab"[i % 2]
        rows.append(
            {
                "id": f"p{i}",
                "label": c,
                "split": "train" if i < 0.6 * n else "val" if i < 0.8 * n else "test",
                "title": " ".join(rng.choice(KIND_WORDS[c], 3)) + " " + str(rng.choice(["study", "method", "system"])),
                "venue": str(rng.choice(KIND_VENUES[c])),
                "year": 2010 + int(rng.integers(0, 10)),
                "published": f"20{10 + i % 10}-{1 + i % 12:02d}-{1 + i % 28:02d}",
                "open": "true" if (c == "a") != (i % 7 == 0) else "false",
            }
        )
    return rows


def write_kind_tables(root: Path, rows: list[dict] | None = None, columns: dict | None = None) -> Path:
    """papers.csv (the rows of kind_rows), authors.csv (a number column), writes.csv and dataset.yaml."""
    import csv

    rows = kind_rows() if rows is None else rows
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "papers.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (root / "authors.csv").write_text("id,h_index\n" + "".join(f"a{j},{j % 7}\n" for j in range(10)))
    (root / "writes.csv").write_text("author,paper\n" + "".join(f"a{i % 10},{r['id']}\n" for i, r in enumerate(rows)))
    paper = {"file": "papers.csv", **({"columns": columns} if columns else {})}
    meta = {
        "format": "tables",
        "target": "paper",
        "nodes": {"author": {"file": "authors.csv"}, "paper": paper},
        "edges": {"writes": {"file": "writes.csv", "source": "author", "target": "paper"}},
    }
    (root / "dataset.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return root / "dataset.yaml"


VENUE_RANKS = {"KDD": 0.1, "NeurIPS": 1 / 3, "VLDB": 2.5e-7, "SIGMOD": 7.0}


def shop_rows() -> list[dict]:
    """kind_rows with a declared number holding a gap (score), and one paper without a venue."""
    rows = kind_rows()
    for i, r in enumerate(rows):
        r["score"] = None if i == 7 else i / 9
    rows[11]["venue"] = None
    return rows


def write_shop_csv(root: Path) -> Path:
    """The shop graph as CSV tables (a foreign key's pairs as an edge table), in the order format: sql reads the
    database of write_shop_database: node types by table name, relations by table and column."""
    import csv

    rows = shop_rows()
    root.mkdir(parents=True, exist_ok=True)

    def save(name, header, data):
        with open(root / name, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows([["" if v is None else repr(v) if isinstance(v, float) else v for v in r] for r in data])

    cols = ["id", "label", "split", "title", "year", "published", "open", "score"]
    save("paper.csv", cols, [[r[c] for c in cols] for r in rows])
    save("author.csv", ["id", "h_index"], [[f"a{j}", j % 7] for j in range(10)])
    save("venue.csv", ["name", "rank"], list(VENUE_RANKS.items()))
    save("paper_venue.csv", ["id", "venue"], [[r["id"], r["venue"]] for r in rows if r["venue"]])
    save("writes.csv", ["author", "paper"], [[f"a{i % 10}", r["id"]] for i, r in enumerate(rows)])
    meta = {
        "format": "tables",
        "target": "paper",
        "nodes": {
            "author": {"file": "author.csv"},
            "paper": {"file": "paper.csv", "columns": {"score": "number"}},
            "venue": {"file": "venue.csv", "id": "name"},
        },
        "edges": {
            "venue": {"file": "paper_venue.csv", "source": "paper", "target": "venue", "columns": ["id", "venue"]},
            "writes": {"file": "writes.csv", "source": "author", "target": "paper"},
        },
    }
    (root / "dataset.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return root / "dataset.yaml"


def write_shop_database(root: Path, kind: str = "sqlite") -> Path:
    """The shop graph as a SQLite or DuckDB file with its keys declared, and a format: sql description that reads
    it without nodes: or edges:. DuckDB keeps its own types (BOOLEAN, DATE, DOUBLE); SQLite, which has no boolean
    or date type, text."""
    rows = shop_rows()
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"shop.{kind}"
    if kind == "sqlite":
        import sqlite3

        con, date, boolean = sqlite3.connect(path), "TEXT", "TEXT"
    else:
        duckdb = pytest.importorskip("duckdb", reason="a DuckDB file needs duckdb (pip install duckdb)")
        con, date, boolean = duckdb.connect(str(path)), "DATE", "BOOLEAN"
    con.execute("CREATE TABLE author (id VARCHAR PRIMARY KEY, h_index INTEGER)")
    con.execute("CREATE TABLE venue (name VARCHAR PRIMARY KEY, rank DOUBLE)")
    con.execute(
        "CREATE TABLE paper (id VARCHAR PRIMARY KEY, label VARCHAR, split VARCHAR, title VARCHAR, venue VARCHAR "
        f"REFERENCES venue (name), year INTEGER, published {date}, open {boolean}, score DOUBLE)"
    )
    con.execute("CREATE TABLE writes (author VARCHAR REFERENCES author (id), paper VARCHAR REFERENCES paper (id))")
    con.executemany("INSERT INTO author VALUES (?, ?)", [(f"a{j}", j % 7) for j in range(10)])
    con.executemany("INSERT INTO venue VALUES (?, ?)", list(VENUE_RANKS.items()))
    cols = ["id", "label", "split", "title", "venue", "year", "published", "open", "score"]
    con.executemany(f"INSERT INTO paper VALUES ({', '.join('?' * len(cols))})", [[r[c] for c in cols] for r in rows])
    con.executemany("INSERT INTO writes VALUES (?, ?)", [(f"a{i % 10}", r["id"]) for i, r in enumerate(rows)])
    con.commit()
    con.close()
    meta = {"format": "sql", "database": path.name, "target": "paper", "label": "label", "split": "split"}
    meta["columns"] = {"paper": {"score": "number"}}
    (root / "dataset.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return root / "dataset.yaml"
