"""Whether this machine's BLAS gives a matrix product's rows the same bits whatever other rows it multiplies:
the property that lets a full-batch GCN layer run on the rows a loss reads (src/regnn/core/receptive.py) and
still give the whole layer's numbers. Small products can take other kernels, and BLAS may split the inner
dimension between threads, which rounds differently; receptive.FEWEST_ROWS is the fewest rows that the rows path
multiplies, so every row count that differs here should be below it.

For each thread count, dtype, inner width K and output width N: X (n x K) @ W (K x N), W contiguous (the layer's
forward) or the transpose of a contiguous tensor (its backward), then the same product on k rows picked at random,
compared bit for bit with those rows of the whole product, for k from 1 to 3000.

    .venv/bin/python scripts/checks/blas_rows.py        # -> results/blas_rows.{csv,md}
"""

from __future__ import annotations

import argparse
import itertools
import platform
import time
from pathlib import Path

import pandas as pd
import torch

from regnn.core.receptive import FEWEST_ROWS
from regnn.paths import REPO_ROOT
from regnn.reporting.collect import markdown

ROW_COUNTS = [*range(1, 65), 100, 128, 150, 200, 256, 300, 400, 511, 512, 600, 800, 1000, 1500, 2000, 3000]


def differing_rows(k_in: int, n_out: int, dtype: torch.dtype, transposed: bool, n: int = 4000) -> list[int]:
    """The row counts whose product differs, in some bit, from the same rows of the whole product; transposed:
    W is the transpose of a contiguous (N x K) tensor (the layer's backward multiplies by W.t())."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, k_in, generator=g, dtype=dtype)
    shape = (n_out, k_in) if transposed else (k_in, n_out)
    w = torch.randn(shape, generator=g, dtype=dtype)
    w = w.t() if transposed else w
    whole = x @ w
    bad = []
    for k in ROW_COUNTS:
        rows = torch.randperm(n, generator=g)[:k].sort().values
        if not torch.equal(whole[rows], x.index_select(0, rows) @ w):
            bad.append(k)
    return bad


def scan(thread_counts: list[int], widths: list[int]) -> list[dict]:
    """One record per thread count, dtype, inner width, output width (the inner width and 4 class scores) and
    weight layout; torch's thread count is restored afterwards."""
    records, before = [], torch.get_num_threads()
    try:
        for threads, dtype, k_in in itertools.product(thread_counts, (torch.float32, torch.float64), widths):
            torch.set_num_threads(threads)
            for n_out, transposed in itertools.product(sorted({k_in, 4}), (False, True)):
                bad = differing_rows(k_in, n_out, dtype, transposed)
                records.append(
                    {
                        "threads": threads,
                        "dtype": str(dtype).removeprefix("torch."),
                        "inner_width": k_in,
                        "output_width": n_out,
                        "weight": "W.t()" if transposed else "W",
                        "most_rows_differing": max(bad, default=0),
                        "row_counts_differing": " ".join(map(str, bad)),
                    }
                )
                print(records[-1], flush=True)
    finally:
        torch.set_num_threads(before)
    return records


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2, 4, 8, 16])
    ap.add_argument("--widths", nargs="+", type=int, default=[64, 128, 256, 512, 1024, 2048])
    ap.add_argument("--out", default=str(REPO_ROOT / "results" / "blas_rows"))
    a = ap.parse_args(argv)
    records = scan(a.threads, a.widths)
    df = pd.DataFrame(records)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out.with_suffix(".csv"), index=False)
    worst = int(df["most_rows_differing"].max())
    verdict = "every differing count is below it" if worst < FEWEST_ROWS else "SOME DIFFERING COUNTS ARE NOT BELOW IT"
    head = (
        f"# Matrix products on some rows against the whole product\n\n{platform.machine()}, torch {torch.__version__}"
        f", {time.strftime('%Y-%m-%d %H:%M')}; `python scripts/checks/blas_rows.py`. Row counts tried: 1 to 64, then"
        f" up to 3000, of 4000 rows. The most rows whose product differed: **{worst}**; the rows path multiplies at"
        f" least receptive.FEWEST_ROWS = {FEWEST_ROWS} rows"
        f" ({verdict}).\n\n"
    )
    table = markdown(df.drop(columns="row_counts_differing"))
    out.with_suffix(".md").write_text(head + table + "\n")
    print(f"wrote {out}.csv and .md; most rows differing: {worst}")
    return 0 if worst < FEWEST_ROWS else 1


if __name__ == "__main__":
    raise SystemExit(main())
