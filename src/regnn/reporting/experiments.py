"""The paper's tables and figures that this project reproduces, and `make tables`: render them all from the cells.

    python -m regnn.reporting.experiments [--cells DIR] [--out results] [--allow-missing] [--list]

Renders every table and figure of EXPERIMENTS from the trained cells (no training; seconds), names each one and
what happened to it, then regenerates the results sections of README.md and docs/ (regnn.reporting.readme).
A cell missing from the pool is read from results/cells/<cell>.json, the summary (results.json and relation
weights) that an earlier rendering kept of it; every rendering writes there the summaries of the pool's cells.
A table whose cells are not all trained is not rendered: its committed files in results/ stay as they are, and the
line names the make target that trains the missing cells (`make reproduce` trains every missing cell).
Figure 8 is a timing, not a set of cells: `make fig-efficiency` measures and renders it (regnn.reporting.efficiency).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from regnn.paths import REPO_ROOT
from regnn.reporting.cells import CELLS, CellPool, MissingCells


ORDER = ("Table", "Figure")  # the paper's tables first, then its figures, each by number


@dataclass(frozen=True)
class Experiment:
    target: str  # make target that trains the missing cells, then renders
    item: str  # the paper's table or figure
    what: str
    outputs: tuple[str, ...]  # files in results/
    renderer: str | None = None  # module in regnn.reporting (None: measured, not rendered from cells)
    datasets: tuple[str, ...] = ("dblp",)
    models: tuple[str, ...] = ()

    @property
    def config(self) -> str:
        """Its experiment config: conf/experiment/<config>.yaml."""
        return self.target.replace("-", "_")


def _sort_key(e: Experiment) -> tuple:
    kind, _, rest = e.item.partition(" ")
    number = rest.split(" ", 1)[0]
    return ORDER.index(kind) if kind in ORDER else len(ORDER), int(number) if number.isdigit() else 0, e.item


def _words(value) -> tuple[str, ...]:
    return tuple(str(value).replace(" ", "").split(",")) if value is not None else ()


def declared(conf_dir: Path = REPO_ROOT / "conf" / "experiment") -> list[Experiment]:
    """Every experiment of conf/experiment/ that declares its table or figure (hydra.callbacks.report), in the
    paper's order: the one declaration the make targets, `make tables`, the smoke tests and README derive from."""
    import regnn.schema  # noqa: F401  (the ${datasets:...} and ${models:...} resolvers of the sweeps)

    out = []
    for path in sorted(conf_dir.glob("*.yaml")):
        y = OmegaConf.load(path)
        report = OmegaConf.select(y, "hydra.callbacks.report")
        if report is None:
            continue
        params = OmegaConf.select(y, "hydra.sweeper.params")
        out.append(
            Experiment(
                path.stem.replace("_", "-"),
                str(report.item),
                str(report.what),
                tuple(report.outputs),
                str(report.renderer),
                _words(params.dataset),
                _words(params.model),
            )
        )
    return sorted(out, key=_sort_key)


# Figure 8 is a timing, not a set of cells: scripts/bench/benchmark.py measures it (`make fig-efficiency`) and
# regnn.reporting.efficiency renders it, again from its stored rows with `python -m regnn.reporting.efficiency`
MEASURED = [
    Experiment(
        "fig-efficiency",
        "Figure 8",
        "parameters, time per epoch and per run, peak memory of every model on DBLP",
        ("table_efficiency.csv", "table_efficiency.md", "fig_efficiency.png"),
    )
]
EXPERIMENTS = sorted(declared() + MEASURED, key=_sort_key)


def experiments_table() -> str:
    """One row per declared experiment: its make target, the paper's table or figure, and its files."""
    rows = ["| target | reproduces | output |", "|---|---|---|"]
    for e in EXPERIMENTS:
        how = " (measures; no cells)" if e.renderer is None else ""
        files = ", ".join(f"`results/{o}`" for o in e.outputs)
        rows.append(f"| `make {e.target}` | {e.item}: {e.what}{how} | {files} |")
    return "\n".join(rows)


class Report(Callback):
    """The end of an experiment's sweep (conf/experiment/<name>.yaml, hydra.callbacks.report): where `out` is given
    (`make <name>` gives results/, `make <name>-smoke` its smoke folder), renders the table or figure from the
    sweep's cells into it; a table that cannot be rendered then fails the command, unless allow_missing, which
    renders what exists and names the missing cells. A plain `train.py -m experiment=<name>` only trains."""

    def __init__(
        self, item: str, what: str, renderer: str, outputs, out: str | None = None, allow_missing: bool = False
    ):
        self.item, self.what, self.renderer, self.outputs = item, what, renderer, tuple(outputs)
        self.out, self.allow_missing = (Path(out) if out else None), allow_missing

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        if self.out is None:
            return
        params = config.hydra.sweeper.params
        target = str(config.hydra.runtime.choices.get("experiment") or "").replace("_", "-")
        e = Experiment(
            target, self.item, self.what, self.outputs, self.renderer, _words(params.dataset), _words(params.model)
        )
        archive = None if e.renderer == "tsne" else self.out / "cells"
        pool = CellPool(config.hydra.sweep.dir, allow_missing=self.allow_missing, archive=archive)
        try:
            line = render_one(e, pool, self.out)
        except Exception as err:  # noqa: BLE001 (Hydra would turn it into a warning; the command must fail)
            print(f"{e.item}: rendering failed: {type(err).__name__}: {err}")
            raise SystemExit(1) from err
        print(line)
        if not line.splitlines()[-1].strip().startswith("rendered"):
            raise SystemExit(1)


def render_one(e: Experiment, pool: CellPool, out: Path) -> str:
    """Renders one experiment; returns the line that says what happened to it."""
    files = ", ".join(f"results/{o}" for o in e.outputs)
    head = f"{e.item:<20} {e.what}\n{'':<20} "
    if e.renderer is None:
        return head + f"kept {files} (a measurement: `make {e.target}` measures and renders it)"
    mod = importlib.import_module(f"regnn.reporting.{e.renderer}")
    try:
        if e.renderer == "tsne":  # one graph, the sweep's models side by side
            mod.render(pool, out, e.datasets[0], list(e.models))
        else:
            mod.render(pool, out, list(e.datasets))
    except MissingCells as err:
        return head + f"kept {files}: {err} (`make {e.target}` trains them)"
    except SystemExit as err:  # a renderer's one-line refusal, e.g. cells trained without what the table needs
        return head + f"kept {files}: {err} (`make {e.target}` trains what it needs)"
    finally:  # the cells that are trained are kept even when their table waits for others
        pool.save_archive()
    partial = f" (cells missing, named in the notes: {', '.join(pool.missing)})" if pool.missing else ""
    return head + f"rendered {files}{partial}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default=str(CELLS), help="the experiment cell pool")
    ap.add_argument("--out", default=str(REPO_ROOT / "results"))
    ap.add_argument(
        "--allow-missing",
        action="store_true",
        help="render tables whose cells are partly trained (the missing cells are named in the notes)",
    )
    ap.add_argument("--list", action="store_true", help="only list the tables and figures and their make targets")
    a = ap.parse_args(argv)
    if a.list:
        for e in EXPERIMENTS:
            print(f"{e.item:<20} make {e.target:<22} {e.what}")
        return 0
    for e in EXPERIMENTS:
        # t-SNE reads the runs' embeddings, which only the pool has; the tables can read archived summaries
        archive = None if e.renderer == "tsne" else Path(a.out) / "cells"
        pool = CellPool(a.cells, allow_missing=a.allow_missing, archive=archive)
        print(render_one(e, pool, Path(a.out)))
    if Path(a.out).resolve() != (REPO_ROOT / "results").resolve():
        return 0  # README.md and docs/ show the committed results only
    from regnn.reporting import readme

    changed = readme.update_all(REPO_ROOT, experiments=experiments_table())
    print(
        f"{'README, docs':<20} results sections regenerated from results/: "
        + (", ".join(changed) if changed else "every page already up to date")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
