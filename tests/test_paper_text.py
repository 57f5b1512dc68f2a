"""Table 2's plain rows under both settings (regnn.reporting.paper_text): a finished text-setting cell is read and
kept in results/, a missing one is named, and the paper's number and the difference stand beside each row."""

import json

import pandas as pd

from regnn.reporting.paper_text import ROWS, render


def _summary(micro, val, runs=10, finished=10):
    m = lambda v: {"mean": v, "std": 0.5}  # noqa: E731
    return {
        "runs": runs,
        "finished_runs": finished,
        "metrics": {"test_micro_f1": m(micro), "test_macro_f1": m(micro - 1), "val_micro_f1": m(val)},
    }


def test_both_settings_side_by_side_and_the_text_cells_kept(tmp_path):
    cells, runs, out = tmp_path / "cells", tmp_path / "runs", tmp_path / "results"
    cells.mkdir()
    for ds, m in ROWS:
        (cells / f"{ds}_{m}.json").write_text(json.dumps({"results": _summary(90.0, 89.0)}))
    (runs / "dblp_gcn").mkdir(parents=True)
    (runs / "dblp_gcn" / "results.json").write_text(json.dumps(_summary(88.31, 87.5)))
    (runs / "acm_gcn").mkdir(parents=True)  # interrupted: not every run finished, so not kept or shown
    (runs / "acm_gcn" / "results.json").write_text(json.dumps(_summary(99.0, 99.0, finished=4)))
    assert render(runs, cells, out) == ["acm_gcn", "dblp_gat", "acm_gat", "imdb_gat"]
    df = pd.read_csv(out / "table_paper_text.csv")
    text = df[(df.dataset == "dblp") & (df.model == "gcn") & (df.setting == "text")].iloc[0]
    assert text.test_micro_f1 == 88.31 and text.paper_micro_f1 == 88.31 and text.delta_micro_f1 == 0
    assert df[(df.setting == "text") & (df.model == "gat")].test_micro_f1.isna().all()
    md = (out / "table_paper_text.md").read_text()
    assert "| DBLP | GCN | the paper's text | 87.50 | 88.31 ± 0.50 | 87.31 ± 0.50 | 88.31 | +0.00 |" in md
    assert "Not trained yet: acm_gcn, dblp_gat, acm_gat, imdb_gat (`make paper-text`" in md
    assert json.loads((out / "paper_text" / "dblp_gcn.json").read_text())["metrics"]["test_micro_f1"]["mean"] == 88.31
    assert not (out / "paper_text" / "acm_gcn.json").exists()
    # the kept summary stands in once the run folder is gone
    (runs / "dblp_gcn" / "results.json").unlink()
    render(runs, cells, out)
    assert "| DBLP | GCN | the paper's text | 87.50 | 88.31 ± 0.50 |" in (out / "table_paper_text.md").read_text()
