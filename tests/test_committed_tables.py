"""Every committed table is what its cells give: rendered again here from the committed cell summaries
(results/cells/, what `make tables` reads when the trained cells are not on this machine), each table and its
data file equal, byte for byte, to the committed ones. A renderer changed without re-rendering, or a committed
table edited by hand, fails."""

import shutil

import pytest

from conftest import REPO
from regnn.reporting.cells import CellPool
from regnn.reporting.experiments import EXPERIMENTS, render_one

RENDERED = [e for e in EXPERIMENTS if e.renderer not in (None, "tsne")]  # t-SNE reads runs' embeddings, not kept


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    out = tmp_path_factory.mktemp("tables")
    shutil.copytree(REPO / "results" / "cells", out / "cells")
    return out


@pytest.mark.parametrize("experiment", RENDERED, ids=[e.item for e in RENDERED])
def test_each_committed_table_is_rendered_again_from_its_cells(experiment, archive, tmp_path):
    pool = CellPool(tmp_path / "no_trained_cells", archive=archive / "cells")
    line = render_one(experiment, pool, tmp_path)
    assert "rendered" in line, line
    compared = 0
    for name in experiment.outputs:
        if name.endswith(".png"):  # a figure's bytes carry the plotting library's version; its data file is compared
            continue
        assert (tmp_path / name).read_bytes() == (REPO / "results" / name).read_bytes(), name
        compared += 1
    assert compared, f"{experiment.item} has no table or data file to compare"
