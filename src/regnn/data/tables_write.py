"""Any loaded graph written in `format: tables` (regnn.data.tables): node and edge tables plus dataset.yaml."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from regnn.data.dataset import HeteroDataset
from regnn.data.tables import SPLITS


def write_tables(data: HeteroDataset, folder: str | Path, prefix_ids: bool = True, fmt: str = "csv") -> Path:
    """Writes a dataset as node and edge tables plus dataset.yaml (every relation as stored: reverse: keep). Ids:
    "<type>:<position>" with prefix_ids, else the data's own (or positions). Returns the yaml's path."""
    import yaml

    from regnn.data.scaling import is_placeholder

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    g = data.graph

    def ids_of(t: str) -> np.ndarray:
        own = (data.node_ids or {}).get(t)
        if own is not None and not prefix_ids:
            return np.asarray(own, dtype=str)
        return np.array([f"{t}:{i}" if prefix_ids else str(i) for i in range(g.num_nodes(t))], dtype=object)

    def save(df: pd.DataFrame, stem: str) -> str:
        name = "".join(c if c.isalnum() or c in "_-." else "_" for c in stem) + f".{fmt}"
        if fmt == "parquet":
            df.to_parquet(folder / name, index=False)
        else:
            df.to_csv(folder / name, index=False)
        return name

    meta = {"format": "tables", "target": data.target, "reverse": "keep", "nodes": {}, "edges": {}}
    for t in g.ntypes:
        df = pd.DataFrame({"id": ids_of(t)})
        x = data.features[t]
        if not is_placeholder(x):
            dense = x.to_dense().numpy()
            df = pd.concat([df, pd.DataFrame(dense, columns=[f"f{j}" for j in range(dense.shape[1])])], axis=1)
        if t == data.target:
            names = data.class_names or [str(c) for c in range(data.num_classes)]
            known = data.known_labels()
            df["label"] = [names[y] if y >= 0 else "" for y in known]
            split = np.full(len(df), "", dtype=object)
            for s in SPLITS:
                split[data.splits[s].numpy()] = s
            df["split"] = split
            meta["classes"] = names
        meta["nodes"][t] = {"file": save(df, f"nodes_{t}"), "id": "id"}
    for s, r, t in g.canonical_etypes:
        u, v = (e.numpy() for e in g.edges(etype=(s, r, t)))
        df = pd.DataFrame({"source": ids_of(s)[u], "target": ids_of(t)[v]})
        meta["edges"][r] = {"file": save(df, f"edges_{r}"), "source": s, "target": t}
    (folder / "dataset.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return folder / "dataset.yaml"
