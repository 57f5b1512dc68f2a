"""Table 2 with every row measured here: the MLP and the heterogeneous baselines beside GCN, GAT, RE-GCN and RE-GAT.

python -m regnn.reporting.baselines [--cells DIR] [--out results] [--datasets dblp acm imdb]
"""

from __future__ import annotations

from regnn.catalog import PAPER_DATASETS, TABLE2_BASELINES
from regnn.reporting.classification import MODELS as HOMOGENEOUS
from regnn.reporting.classification import render as render_classification
from regnn.reporting.common import cli

BASELINES = list(TABLE2_BASELINES)


def render(source, out, datasets, **kw):
    return render_classification(
        source,
        out,
        datasets,
        models=BASELINES + HOMOGENEOUS,
        name="table_baselines",
        title="Node classification, every model on this harness (Table 2)",
        **kw,
    )


if __name__ == "__main__":
    raise SystemExit(cli(__doc__, render, list(PAPER_DATASETS)))
