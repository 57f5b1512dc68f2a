"""Figure 8's renderer (regnn.reporting.efficiency): ratios to RE-GCN from the measured rows, and a clear refusal
of a file that is not a table of them."""

import pandas as pd

from regnn.reporting.efficiency import MEASURED, main, write_efficiency


def _rows():
    """Rows as scripts/bench/benchmark.py measures them (its columns in its order)."""
    base = {"dataset": "dblp", "metapath": float("nan"), "run_epochs": 10, "test_micro_f1": 90.0, "threads": 2}
    rows = [
        {**base, "model": "gcn", "num_parameters": 100, "median_epoch_s": 0.5, "run_s": 5.0, "peak_rss_mb": 800},
        {**base, "model": "re_gcn", "num_parameters": 110, "median_epoch_s": 0.25, "run_s": 2.5, "peak_rss_mb": 1000},
        {
            **base,
            "model": "gcn_m",
            "metapath": "APA",
            "num_parameters": 55,
            "median_epoch_s": 1.0,
            "run_s": 10.0,
            "peak_rss_mb": 400,
        },
    ]
    return [{k: r[k] for k in MEASURED if k in r} for r in rows]


def test_ratios_are_to_re_gcn_and_the_figure_is_drawn(tmp_path):
    write_efficiency(_rows(), tmp_path)
    df = pd.read_csv(tmp_path / "table_efficiency.csv")
    assert list(df.median_epoch_s_vs_re_gcn) == [2.0, 1.0, 4.0]
    assert list(df.peak_rss_mb_vs_re_gcn) == [0.8, 1.0, 0.4]
    md = (tmp_path / "table_efficiency.md").read_text()
    assert "| GCN-M (APA) | 55 | 0.500 |" in md and (tmp_path / "fig_efficiency.png").stat().st_size > 10_000


def test_rendering_again_from_the_stored_rows_gives_the_same_table(tmp_path):
    write_efficiency(_rows(), tmp_path / "a")
    assert main(["--rows", str(tmp_path / "a" / "table_efficiency.csv"), "--out", str(tmp_path / "b")]) == 0
    for f in ("table_efficiency.csv", "table_efficiency.md"):
        assert (tmp_path / "a" / f).read_text() == (tmp_path / "b" / f).read_text()


def test_a_missing_or_foreign_file_is_refused(tmp_path, capsys):
    assert main(["--rows", str(tmp_path / "none.csv"), "--out", str(tmp_path)]) == 2
    assert "make fig-efficiency" in capsys.readouterr().err
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    assert main(["--rows", str(tmp_path / "other.csv"), "--out", str(tmp_path)]) == 2
    assert "not a table_efficiency.csv" in capsys.readouterr().err
    assert not (tmp_path / "table_efficiency.md").exists()
