"""Same node, same answer: a trained model meets a graph by name (regnn.data.graph_record), never by row position.

A small tables graph (papers with two features and classes a/b/c; authors and terms without features, so each has
one learned input vector per node) is trained once; then its tables are reordered, relabelled, edited, grown and
moved, and predict, explain and the fingerprint must each say the same thing for the same node and name every
change in the user's terms.
"""

import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from omegaconf import OmegaConf

from conftest import cfg
from regnn.errors import ConfigError, DataError


def write_graph(root, seed=0, n=120, na=40, nt=30):
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    y = rng.integers(0, 3, n)
    split = rng.choice(["train", "val", "test"], n, p=[0.5, 0.25, 0.25])
    pd.DataFrame(
        {"id": [f"p{i}" for i in range(n)], "f0": rng.normal(size=n) + y, "f1": rng.normal(size=n)}
        | {"label": np.array(list("abc"))[y], "split": split}
    ).to_csv(root / "papers.csv", index=False)
    pd.DataFrame({"id": [f"a{i}" for i in range(na)]}).to_csv(root / "authors.csv", index=False)
    pd.DataFrame({"id": [f"t{i}" for i in range(nt)]}).to_csv(root / "terms.csv", index=False)
    group = rng.integers(0, 3, na)  # authors write papers of their group's class, mostly
    writes = {
        (f"a{a}", f"p{i}")
        for i in range(n)
        for a in rng.choice(np.flatnonzero(group == y[i]) if rng.random() < 0.8 else np.arange(na), 2, replace=False)
    }
    pd.DataFrame(sorted(writes), columns=["author", "paper"]).to_csv(root / "writes.csv", index=False)
    has = [(f"p{i}", f"t{t}") for i in range(n) for t in rng.choice(nt, 2, replace=False)]
    pd.DataFrame(has, columns=["paper", "term"]).to_csv(root / "has.csv", index=False)
    meta = {
        "format": "tables",
        "target": "paper",
        "nodes": {"paper": {"file": "papers.csv"}, "author": {"file": "authors.csv"}, "term": {"file": "terms.csv"}},
        "edges": {
            "writes": {"file": "writes.csv", "source": "author", "target": "paper"},
            "has": {"file": "has.csv", "source": "paper", "target": "term"},
        },
    }
    (root / "dataset.yaml").write_text(yaml.safe_dump(meta))
    return root


def train(out, graph, *overrides):
    import regnn.pipeline as pipeline

    pipeline.train(
        cfg(
            "dataset=custom",
            f"dataset.path={graph}",
            "model=re_gcn",
            "runs=2",
            "trainer.max_epochs=25",
            "threads=1",
            *overrides,
        ),
        out,
    )
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("same_node")
    graph = write_graph(root / "graph")
    return graph, train(root / "cell", graph)


def pcfg(run, **kw):
    base = {"run": str(run), "ensemble": True, "embeddings": False, "dataset_path": None, "inference": "auto"}
    return OmegaConf.create({**base, "device": "cpu", "threads": 1, "check_scores": True, "allow_missing": False, **kw})


def predictions(run, out, **kw):
    from regnn.pipeline.predict import predict

    result = predict(pcfg(run, **kw), out)
    return pd.read_csv(out / "predictions.csv").set_index("node"), result


def copy(graph, to, change=None):
    shutil.copytree(graph, to)
    if change is not None:
        change(to)
    return to


def edit(folder, name, fn):
    df = pd.read_csv(folder / name, dtype=str, keep_default_na=False)
    fn(df).to_csv(folder / name, index=False)


def shuffled(folder):
    for f in ("authors.csv", "terms.csv", "papers.csv"):
        edit(folder, f, lambda d: d.sample(frac=1, random_state=3))


def test_the_same_graph_with_its_rows_reordered_predicts_identically(trained, tmp_path):
    graph, cell = trained
    before, _ = predictions(cell, tmp_path / "p1")
    other = copy(graph, tmp_path / "shuffled", shuffled)
    after, result = predictions(cell, tmp_path / "p2", dataset_path=str(other))
    after = after.loc[before.index]
    probs = [c for c in before.columns if c.startswith("p_")]
    assert np.abs(after[probs].values - before[probs].values).max() == 0
    assert (after.predicted == before.predicted).all() and not after.new_node.any()
    assert result["graph"]["reordered"] and not result["graph"]["changed"]  # and the scores were compared


def test_a_renamed_class_is_refused_naming_it(trained, tmp_path):
    graph, cell = trained
    renamed = copy(graph, tmp_path / "renamed", lambda f: edit(f, "papers.csv", lambda d: d.replace({"c": "d"})))
    with pytest.raises(DataError, match=r"class 'd' is not one the model was trained on \('a', 'b', 'c'\)"):
        predictions(cell, tmp_path / "p", dataset_path=str(renamed))


def test_classes_are_bound_by_name_when_one_is_absent(trained, tmp_path):
    """Without any paper of class a, the reader numbers b and c as 0 and 1; the model's b and c are 1 and 2."""
    graph, cell = trained

    def unlabel_a(f):
        edit(
            f, "papers.csv", lambda d: d.assign(split=d.split.where(d.label != "a", ""), label=d.label.replace("a", ""))
        )

    fewer = copy(graph, tmp_path / "fewer", unlabel_a)
    got, result = predictions(cell, tmp_path / "p", dataset_path=str(fewer))
    base, _ = predictions(cell, tmp_path / "base")
    labelled = got.label.notna()
    assert set(got.label[labelled]) == {"b", "c"} and (got.label[labelled] == base.label[labelled]).all()
    assert list(got.columns[3:6]) == ["p_a", "p_b", "p_c"] and (got.predicted == base.predicted).all()
    assert result["graph"]["unlabelled"] > 0 and not result["graph"]["changed"]


def test_a_changed_label_split_edge_or_feature_is_named_wherever_it_lies(trained, tmp_path):
    graph, cell = trained

    def flip_train_labels(d):
        rows = d.index[d.split == "train"][:3]
        d.loc[rows, "label"] = d.loc[rows, "label"].map({"a": "b", "b": "c", "c": "a"})
        return d

    def move_two(d):
        rows = d.index[d.split == "val"][:2]
        d.loc[rows, "split"] = "test"
        return d

    def nudge(d):
        d.loc[0, "f1"] = str(float(d.f1[0]) + 1)
        return d

    cases = {
        "labels of 3 known nodes changed (3 train)": lambda f: edit(f, "papers.csv", flip_train_labels),
        "2 known nodes moved to another split": lambda f: edit(f, "papers.csv", move_two),
        "features of 1 known paper nodes changed": lambda f: edit(f, "papers.csv", nudge),
        "edges of writes: 240 then, 239 now": lambda f: edit(f, "writes.csv", lambda d: d.iloc[1:]),
    }
    for k, (words, change) in enumerate(cases.items()):
        changed = copy(graph, tmp_path / f"g{k}", change)
        with pytest.raises(DataError, match="differs from the one .* was trained on: .*" + re.escape(words)):
            predictions(cell, tmp_path / f"p{k}", dataset_path=str(changed))
    # in place, in a subfolder and hidden: the cell's own graph edited after training; explain names it too
    moved = copy(graph, tmp_path / "moved")
    cell2 = train(tmp_path / "cell2", moved, "runs=1")
    (moved / "sub").mkdir()
    shutil.move(moved / "terms.csv", moved / "sub" / ".terms.csv")
    meta = yaml.safe_load((moved / "dataset.yaml").read_text())
    meta["nodes"]["term"]["file"] = "sub/.terms.csv"
    (moved / "dataset.yaml").write_text(yaml.safe_dump(meta))
    (moved / "README.md").write_text("notes")
    predictions(cell2, tmp_path / "same")  # the same graph, moved and described anew: nothing changed
    edit(moved / "sub", ".terms.csv", lambda d: pd.concat([d, pd.DataFrame({"id": ["t_new"]})]))
    with pytest.raises(DataError, match="1 new term nodes"):
        predictions(cell2, tmp_path / "p_new")
    import regnn

    with pytest.raises(DataError, match="1 new term nodes"):
        regnn.explain(cell2)


def test_a_graph_that_grew_is_predicted_on_purpose_with_its_new_nodes_marked(trained, tmp_path):
    graph, cell = trained

    def grow(f):
        edit(f, "authors.csv", lambda d: pd.concat([d, pd.DataFrame({"id": ["a_new1", "a_new2"]})]))
        new_paper = pd.DataFrame({"id": ["p_new"], "f0": ["1.0"], "f1": ["0.0"], "label": [""], "split": [""]})
        edit(f, "papers.csv", lambda d: pd.concat([d, new_paper]))
        more = pd.DataFrame({"author": ["a_new1", "a_new2", "a1"], "paper": ["p_new"] * 3})
        edit(f, "writes.csv", lambda d: pd.concat([d, more]))

    grown = copy(graph, tmp_path / "grown", grow)
    with pytest.raises(
        DataError,
        match=r"2 new author nodes \('a_new1', 'a_new2'\); 1 new paper nodes \('p_new'\); edges of writes: 240 then",
    ):
        predictions(cell, tmp_path / "p", dataset_path=str(grown))
    got, result = predictions(cell, tmp_path / "p2", dataset_path=str(grown), changed_graph=True)
    base, _ = predictions(cell, tmp_path / "base")
    assert got.loc["p_new"].new_node and got.loc["p_new"].new_neighbours == 2
    assert not got.drop("p_new").new_node.any() and result["graph"]["changed_graph"]
    near = set(pd.read_csv(graph / "writes.csv").query("author == 'a1'").paper)  # a1 also wrote the new paper
    far = base.index.difference(sorted(near))
    assert (got.loc[far].predicted == base.loc[far].predicted).all()
    assert got.new_in_reach[sorted(near) + ["p_new"]].all()  # a1's papers rest on the new paper (two hops)
    probs = [c for c in base.columns if c.startswith("p_")]
    moved = (got.loc[base.index, probs] - base[probs]).abs().max(axis=1) > 0
    assert moved.any() and got.new_in_reach[moved[moved].index].all()  # every prediction that moved rests on a new node
    assert result["graph"]["new"] == {"author": 2, "paper": 1}


def test_a_model_json_in_another_run_folder_and_a_partial_ensemble_are_named(trained, tmp_path, caplog):
    _, cell = trained
    c = tmp_path / "cell"
    shutil.copytree(cell, c)
    shutil.rmtree(c / "runs" / "run_01")
    with caplog.at_level("WARNING", logger="regnn"):
        _, result = predictions(c, tmp_path / "p")
    assert "1 of the cell's 2 runs: run_01" in result["chosen"] and "run_01" in caplog.text
    shutil.copytree(c / "runs" / "run_00", c / "runs" / "run_01")
    with pytest.raises(DataError, match="run_01/results.json is of run 0 \\(seed 0\\), not of the folder's run 1"):
        predictions(c, tmp_path / "p2")


def test_yes_no_options_refuse_strings_and_outputs_never_land_in_a_cell(trained, tmp_path):
    import regnn

    _, cell = trained
    for bad in ("false", "no", "0"):
        with pytest.raises(TypeError, match=f"ensemble={bad!r} must be True or False"):
            regnn.predict(cell, ensemble=bad)
    with pytest.raises(ConfigError, match="check_scores='false' must be true or false"):
        predictions(cell, tmp_path / "p", check_scores="false")
    with pytest.raises(ConfigError, match="lies inside the trained cell"):
        regnn.explain(cell, ablation="retrain", retrain_dir=cell / "ablation")
    assert not (cell / "ablation").exists()


def test_explain_refuses_a_model_without_relation_weights(tmp_path):
    import regnn

    graph = write_graph(tmp_path / "g")
    cell = train(tmp_path / "gcn", graph, "model=gcn", "runs=1", "trainer.max_epochs=3")
    with pytest.raises(ConfigError, match="learns no relation weights"):
        regnn.explain(cell)


def test_relation_names_reverses_and_edge_columns_are_read_by_name(tmp_path):
    from regnn.data.custom import load_custom

    graph = write_graph(tmp_path / "g")
    meta = yaml.safe_load((graph / "dataset.yaml").read_text())
    # a user relation named as regnn names a reverse: refused, not merged
    edit(graph, "writes.csv", lambda d: d)
    shutil.copy(graph / "writes.csv", graph / "authored.csv")
    edit(graph, "authored.csv", lambda d: d[["paper", "author"]].iloc[5:])  # another relation, not the reverse
    meta["edges"]["rev_writes"] = {"file": "authored.csv", "source": "paper", "target": "author"}
    (graph / "dataset.yaml").write_text(yaml.safe_dump(meta))
    with pytest.raises(
        DataError, match="relation rev_writes .* and the reverse of writes .* are both named rev_writes"
    ):
        load_custom(graph)
    # declared as writes' reverse: kept as the user's, every other relation still reversed
    meta["reverse"] = {"writes": "rev_writes"}
    (graph / "dataset.yaml").write_text(yaml.safe_dump(meta))
    d = load_custom(graph)
    assert sorted(d.graph.etypes) == ["has", "rev_has", "rev_writes", "writes"]
    assert d.graph.num_edges(("paper", "rev_writes", "author")) == 235  # the user's edges, as given
    # both pairs held and undeclared: both named at once, with advice that keeps the other reverses
    shutil.copy(graph / "has.csv", graph / "in_paper.csv")
    edit(graph, "in_paper.csv", lambda d: d[["term", "paper"]])
    meta["edges"]["in_paper"] = {"file": "in_paper.csv", "source": "term", "target": "paper"}
    shutil.copy(graph / "writes.csv", graph / "authored.csv")
    edit(graph, "authored.csv", lambda d: d[["paper", "author"]])  # now writes' reverse exactly
    meta["reverse"] = "add"
    meta["edges"]["authored"] = meta["edges"].pop("rev_writes")
    (graph / "dataset.yaml").write_text(yaml.safe_dump(meta))
    with pytest.raises(DataError, match="writes .* and authored .*; has .* and in_paper .* are each other's") as e:
        load_custom(graph)
    assert "reverse: {writes: authored, has: in_paper}" in str(e.value)
    # an edge table whose header names its columns the other way round is read by name; a third column refused
    g2 = write_graph(tmp_path / "g2")
    edit(g2, "writes.csv", lambda d: d[["paper", "author"]])
    by_name = load_custom(g2)
    base = load_custom(write_graph(tmp_path / "g3"))
    assert torch.equal(
        torch.sort(by_name.graph.edges(etype="writes")[0]).values,
        torch.sort(base.graph.edges(etype="writes")[0]).values,
    )
    edit(g2, "writes.csv", lambda d: d.assign(weight="1"))
    with pytest.raises(DataError, match="column\\(s\\) \\['weight'\\] beside the id columns"):
        load_custom(g2)
    meta2 = yaml.safe_load((g2 / "dataset.yaml").read_text())
    meta2["edges"]["writes"]["ignore"] = ["weight"]
    (g2 / "dataset.yaml").write_text(yaml.safe_dump(meta2))
    assert load_custom(g2).graph.num_edges(("author", "writes", "paper")) == base.graph.num_edges(
        ("author", "writes", "paper")
    )


def test_a_key_given_twice_and_a_float_id_past_2_53_are_refused(tmp_path):
    from regnn.data.custom import load_custom

    graph = write_graph(tmp_path / "g")
    text = (graph / "dataset.yaml").read_text()
    (graph / "dataset.yaml").write_text(text + "target: author\n")
    with pytest.raises(DataError, match="key 'target' is given twice"):
        load_custom(graph)
    (graph / "dataset.yaml").unlink()
    meta = yaml.safe_load(text)
    (graph / "dataset.json").write_text(
        json.dumps(meta).replace('"target": "paper"', '"target": "paper", "target": "x"')
    )
    with pytest.raises(DataError, match="key 'target' is given twice"):
        load_custom(graph)
    (graph / "dataset.json").write_text(json.dumps(meta))
    pd.DataFrame({"id": [1e20, 2.0]}).to_parquet(graph / "terms.parquet")
    meta["nodes"]["term"]["file"] = "terms.parquet"
    (graph / "dataset.json").write_text(json.dumps(meta))
    with pytest.raises(DataError, match="holds the float 1e\\+20, past 2\\^53"):
        load_custom(graph)


def test_a_prepared_graph_of_another_relation_count_is_refused():
    from regnn.nn import REGCNConv, typed_adjacency

    ei = torch.tensor([[0, 1, 2], [1, 2, 0]])
    et, nt = torch.tensor([0, 1, 2]), torch.tensor([0, 1, 0])
    conv = REGCNConv(8, 4, num_relations=4, num_node_types=2)
    with pytest.raises(ValueError, match="built for 3 relations .* but this layer has 4"):
        conv(torch.randn(3, 8), typed_adjacency(ei, et, nt, 3))
    conv(torch.randn(3, 8), typed_adjacency(ei, et, nt, 4))


def test_the_python_api_refuses_a_string_of_overrides_and_unknown_keys_in_one_line():
    import regnn

    with pytest.raises(TypeError, match="a list of strings"):
        regnn.run("dataset=dblp")
    with pytest.raises(ConfigError) as e:
        regnn.run(["no_such_key=1"])
    assert "\n" not in str(e.value) and "no_such_key" in str(e.value)


def pyg_dict(d, perm=None):
    """The graph as HeteroData.to_dict() holds it (node_id on every type, the forward relations only), its nodes in
    the order perm[type] gives (identity by default): written without PyG."""
    g, out = d.graph, {"_global_store": {}}
    perm = perm or {t: np.arange(g.num_nodes(t)) for t in g.ntypes}
    inv = {t: np.argsort(p) for t, p in perm.items()}
    for t in g.ntypes:
        store = {"node_id": [str(x) for x in np.asarray(d.node_ids[t])[perm[t]]]}
        if t == d.target:
            store["x"] = d.features[t][torch.from_numpy(perm[t])]
            store["y"] = torch.from_numpy(d.known_labels()[perm[t]])
            for s in ("train", "val", "test"):
                m = torch.zeros(g.num_nodes(t), dtype=torch.bool)
                m[torch.from_numpy(inv[t][d.splits[s].numpy()])] = True
                store[f"{s}_mask"] = m
            store["class_names"] = list(d.class_names)
        else:
            store["num_nodes"] = g.num_nodes(t)
        out[t] = store
    for s, r, t in g.canonical_etypes:
        if not r.startswith("rev_"):
            u, v = (x.numpy() for x in g.edges(etype=(s, r, t)))
            out[(s, r, t)] = {"edge_index": torch.from_numpy(np.stack([inv[s][u], inv[t][v]]))}
    return out


def test_a_pyg_graph_with_its_node_rows_reordered_predicts_identically(tmp_path):
    from regnn.data.custom import load_custom

    d = load_custom(write_graph(tmp_path / "tables"))
    rng = np.random.default_rng(5)
    folders = {}
    for name, perm in (("pyg", None), ("shuffled", {t: rng.permutation(d.graph.num_nodes(t)) for t in d.graph.ntypes})):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        torch.save(pyg_dict(d, perm), folders[name] / "graph.pt")
        (folders[name] / "dataset.yaml").write_text(yaml.safe_dump({"format": "pyg", "target": "paper"}))
    cell = train(tmp_path / "cell", folders["pyg"], "runs=1")
    before, _ = predictions(cell, tmp_path / "p1")
    after, result = predictions(cell, tmp_path / "p2", dataset_path=str(folders["shuffled"]))
    probs = [c for c in before.columns if c.startswith("p_")]
    assert np.abs(after.loc[before.index, probs].values - before[probs].values).max() == 0
    assert result["graph"]["reordered"] and not result["graph"]["changed"]


def test_resuming_a_cell_on_a_graph_whose_labels_changed_names_the_change(tmp_path):
    graph = write_graph(tmp_path / "g")
    cell = train(tmp_path / "cell", graph, "runs=1", "trainer.max_epochs=3")

    def flip_first(d):
        d.loc[0, "label"] = {"a": "b", "b": "c", "c": "a"}[d.label[0]]
        return d

    edit(graph, "papers.csv", flip_first)
    with pytest.raises(ConfigError, match=r"\(papers.csv differ\): labels of 1 known nodes changed \(1 "):
        train(cell, graph, "runs=2", "trainer.max_epochs=3", "resume=true")


def test_an_edit_that_keeps_size_and_modification_time_is_still_seen_and_a_reorder_is_named_as_such(tmp_path):
    import os

    graph = write_graph(tmp_path / "g")
    cell = train(tmp_path / "cell", graph, "runs=1", "trainer.max_epochs=3")
    f = graph / "papers.csv"
    st = f.stat()
    text = f.read_text()
    row = next(line for line in text.splitlines() if line.endswith(",a,val"))
    f.write_text(text.replace(row, row[: -len("a,val")] + "b,val", 1))  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same modification time (as tar or rsync -t leave it)
    with pytest.raises(ConfigError, match="labels of 1 known nodes changed"):
        train(cell, graph, "runs=2", "trainer.max_epochs=3", "resume=true")
    f.write_text(text)
    shuffled(graph)
    with pytest.raises(ConfigError, match="papers.csv.* differ\\): the same graph with its rows in another order"):
        train(cell, graph, "runs=2", "trainer.max_epochs=3", "resume=true")


def test_labelled_nodes_outside_the_splits_are_named_so_and_a_file_is_not_a_run(trained, tmp_path):
    graph, cell = trained

    def label_outside(f):
        edit(
            f,
            "papers.csv",
            lambda d: pd.concat(
                [d, pd.DataFrame({"id": ["p_x"], "f0": ["0"], "f1": ["0"]} | {"label": ["a"], "split": [""]})]
            ),
        )
        edit(f, "has.csv", lambda d: pd.concat([d, pd.DataFrame({"paper": ["p_x"], "term": ["t1"]})]))

    grown = copy(graph, tmp_path / "g", label_outside)
    got, result = predictions(cell, tmp_path / "p", dataset_path=str(grown), changed_graph=True)
    assert got.loc["p_x"].split == "outside" and got.loc["p_x"].label == "a" and got.loc["p_x"].new_node
    # scored apart from the splits: its one node right or wrong
    right = 100.0 * (got.loc["p_x"].predicted == "a")
    assert all(r["outside_micro_f1"] == right for r in result["runs"].values())
    with pytest.raises(ConfigError, match="is a file; give the run folder"):
        predictions(cell / "runs" / "run_00" / "model.pt", tmp_path / "p2")
    with pytest.raises(DataError, match=r"1 new paper nodes \('p_x'\)"):
        predictions(cell, tmp_path / "p3", dataset_path=str(grown))


def test_the_fingerprint_covers_exactly_the_files_the_description_names(tmp_path, monkeypatch):
    from regnn.data.fingerprint import fingerprint

    monkeypatch.setenv("REGNN_CACHE", str(tmp_path / "cache"))
    graph = write_graph(tmp_path / "g")
    (tmp_path / "shared").mkdir()
    shutil.move(graph / "terms.csv", tmp_path / "shared" / "terms.csv")  # outside the description's folder
    shutil.move(graph / "has.csv", graph / ".has.csv")  # hidden
    meta = yaml.safe_load((graph / "dataset.yaml").read_text())
    meta["nodes"]["term"]["file"] = "../shared/terms.csv"
    meta["edges"]["has"]["file"] = ".has.csv"
    (graph / "dataset.yaml").write_text(yaml.safe_dump(meta))
    ds = {"format": "custom", "path": str(graph)}
    first = fingerprint(ds)
    assert {"g/dataset.yaml", "g/.has.csv", "shared/terms.csv"} <= set(first["files"])
    (graph / "README.md").write_text("notes")  # beside it, never read
    (graph / "make_graph.py").write_text("print(1)")
    assert fingerprint(ds)["digest"] == first["digest"]
    edit(tmp_path / "shared", "terms.csv", lambda d: pd.concat([d, pd.DataFrame({"id": ["t_new"]})]))
    assert fingerprint(ds)["digest"] != first["digest"]


def test_an_ensemble_of_runs_from_two_class_orders_is_refused(trained, tmp_path):
    graph, cell = trained
    ordered = copy(graph, tmp_path / "ordered")
    meta = yaml.safe_load((ordered / "dataset.yaml").read_text())
    (ordered / "dataset.yaml").write_text(yaml.safe_dump({**meta, "classes": ["c", "b", "a"]}))
    other = train(tmp_path / "other", ordered, "runs=2")
    mixed = tmp_path / "mixed"
    shutil.copytree(cell, mixed)
    shutil.rmtree(mixed / "runs" / "run_01")
    shutil.copytree(other / "runs" / "run_01", mixed / "runs" / "run_01")
    with pytest.raises(DataError, match="run_01 was trained on another graph than .*run_00"):
        predictions(mixed, tmp_path / "p", check_scores=False)


def test_descriptions_are_read_as_named_and_a_comment_is_not_a_change(trained, tmp_path):
    import os

    from regnn.data.custom import load_custom, save_npz

    graph, cell = trained
    # a description linked from another folder reads the tables beside the link, as training does
    linked = copy(graph, tmp_path / "linked", lambda f: (f / "dataset.yaml").unlink())
    os.symlink(graph / "dataset.yaml", linked / "dataset.yaml")
    edit(linked, "papers.csv", lambda d: d.assign(label=d.label.replace({"a": "b"})))
    for given in (linked, linked / "dataset.yaml"):
        with pytest.raises(DataError, match="labels of .* known nodes changed"):
            predictions(cell, tmp_path / f"p{len(str(given))}", dataset_path=str(given))
    # two descriptions in one folder: which one is meant is not guessed
    two = copy(graph, tmp_path / "two")
    (two / "dataset.json").write_text(json.dumps(yaml.safe_load((two / "dataset.yaml").read_text())))
    with pytest.raises(DataError, match="holds dataset.yaml and dataset.json"):
        load_custom(two)
    # save_npz keeps an unlabelled node unlabelled, and the class names
    d = load_custom(graph)
    d.labels[0], d.unlabelled = 0, torch.zeros(len(d.labels), dtype=torch.bool)
    d.unlabelled[0] = True
    d.splits = {s: i[i != 0] for s, i in d.splits.items()}
    back = load_custom(save_npz(d, tmp_path / "npz"))
    assert back.known_labels()[0] == -1 and back.class_names == ["a", "b", "c"]
    # a comment added to the description changes a file but not the graph: a resume goes on
    g2 = copy(graph, tmp_path / "g2")
    c2 = train(tmp_path / "c2", g2, "runs=1", "trainer.max_epochs=3")
    (g2 / "dataset.yaml").write_text("# the shops graph, exported on Monday\n" + (g2 / "dataset.yaml").read_text())
    train(c2, g2, "runs=2", "trainer.max_epochs=3", "resume=true")
    assert (c2 / "runs" / "run_01" / "model.pt").is_file()


def test_a_relative_dataset_path_means_where_training_ran(tmp_path, monkeypatch):
    (tmp_path / "w1").mkdir()
    (tmp_path / "w2").mkdir()
    write_graph(tmp_path / "w1" / "g")
    write_graph(tmp_path / "w2" / "g", seed=1)  # another graph under the same relative name
    monkeypatch.chdir(tmp_path / "w1")
    cell = train(tmp_path / "cell", "g", "runs=1", "trainer.max_epochs=3")
    monkeypatch.chdir(tmp_path / "w2")
    _, result = predictions(cell, tmp_path / "p")
    assert "graph" in result and not result["graph"]["changed"]  # w1/g, as the cell recorded it


@pytest.mark.parametrize(
    "change",
    [{"reverse": "keep"}, {"classes": ["c", "a", "b"]}, {"nodes.paper.features": ["f1", "f0"]}],
    ids=["reverse", "classes", "columns"],
)
def test_a_description_edit_that_changes_relations_or_the_order_of_classes_or_columns_stops_a_resume(tmp_path, change):
    graph = write_graph(tmp_path / "g")
    cell = train(tmp_path / "cell", graph, "runs=1", "trainer.max_epochs=3")
    meta = yaml.safe_load((graph / "dataset.yaml").read_text())
    for key, value in change.items():
        *path, last = key.split(".")
        block = meta
        for k in path:
            block = block[k]
        block[last] = value
    (graph / "dataset.yaml").write_text(yaml.safe_dump(meta))
    with pytest.raises(ConfigError, match="holds results trained on another graph .*dataset.yaml"):
        train(cell, graph, "runs=2", "trainer.max_epochs=3", "resume=true")
    assert not (cell / "runs" / "run_01").exists()


def test_the_training_log_names_labelled_nodes_in_no_split(caplog):
    import dataclasses
    import logging

    from regnn.data.planted import make_planted
    from regnn.pipeline.job import log_data

    data = make_planted(num_items=60, relations=2, planted=1, nodes_per_relation=12)
    with caplog.at_level(logging.INFO, logger="regnn"):
        log_data(data, 0.0)
    assert not any("in no split" in r.getMessage() for r in caplog.records)
    splits = dict(data.splits) | {"train": data.splits["train"][2:]}  # two labelled nodes left out of every split
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="regnn"):
        log_data(dataclasses.replace(data, splits=splits), 0.0)
    assert any("data: 2 labelled item nodes are in no split (outside)" in r.getMessage() for r in caplog.records)
