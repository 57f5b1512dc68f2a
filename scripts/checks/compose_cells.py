"""Compose every cell of the paper's experiments (the shared cell pool of conf/experiment/base_cells.yaml) as its
sweep would and write each cell's resolved config, what the cell stores as config.yaml; with --against, compare
them with another tree's, as a resume would.

    python scripts/checks/compose_cells.py --out /tmp/cells_new.json
    PYTHONPATH=<old tree>/src python scripts/checks/compose_cells.py --conf <old tree>/conf --out /tmp/cells_old.json
    python scripts/checks/compose_cells.py --out /tmp/cells_new.json --against /tmp/cells_old.json

A cell is one combination of its experiment's hydra.sweeper.params (the basic sweeper's cartesian product). With
--against, every cell of both files is compared: the same resolved config, or, where the files differ, the same
computation (regnn.runs.computation.computation, what a resumed cell compares with the config it stored). Exits 1 when
a cell is missing from either side or computes differently.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _sweep(params) -> list[list[str]]:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    axes = []
    for key, value in params.items():
        o = parser.parse_override(f"{key}={value}")
        values = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.get_value_element_as_str()]
        axes.append([f"{key}={v}" for v in values])
    return [list(c) for c in itertools.product(*axes)]


def _relative(value, root: str):
    """The config with the tree's own location spelt <repo> (paths.root_dir and what derives from it)."""
    if isinstance(value, dict):
        return {k: _relative(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative(v, root) for v in value]
    return "<repo>" + value[len(root) :] if isinstance(value, str) and value.startswith(root) else value


def compose_all(conf: Path) -> dict[str, dict]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import regnn.config  # noqa: F401  (the resolvers the configs use)

    out = {}
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        for f in sorted((conf / "experiment").glob("*.yaml")):
            if f.stem == "base_cells" or "- base_cells" not in f.read_text():
                continue  # only the experiments of the shared cell pool (a search or the user's comparison: not)
            base = compose("train", overrides=[f"experiment={f.stem}"], return_hydra_config=True)
            params = OmegaConf.to_container(base.hydra.sweeper.params, resolve=True) or {}
            for cell in _sweep(params):
                cfg = compose("train", overrides=[f"experiment={f.stem}", *cell])
                plain = _relative(OmegaConf.to_container(cfg, resolve=True), str(conf.parent))
                out.setdefault(str(plain["cell"]), {"experiments": [], "config": plain})["experiments"].append(
                    f"{f.stem}: {' '.join(cell)}"
                )
    return out


def differs(a: dict, b: dict) -> list[str]:
    """The top-level settings in which two configs compute differently (regnn.runs.computation.computation), or []."""
    from regnn.runs.computation import computation

    ca, cb = computation(a), computation(b)
    return sorted(k for k in ca if ca[k] != cb.get(k))


def compare(new: dict, old: dict) -> list[str]:
    problems = []
    for name in sorted(set(new) | set(old)):
        if name not in new or name not in old:
            problems.append(f"{name}: only in {'the new' if name in new else 'the old'} tree")
        elif new[name]["config"] != old[name]["config"] and (keys := differs(new[name]["config"], old[name]["config"])):
            problems.append(f"{name}: computes differently in {keys}")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="where to write the cells' resolved configs (JSON)")
    p.add_argument("--against", type=Path, help="another tree's --out file to compare with")
    p.add_argument(
        "--stored",
        type=Path,
        help="a cell pool (outputs/experiments/cells): compare the config.yaml "
        "each trained cell stored with its composed config",
    )
    p.add_argument("--conf", type=Path, default=REPO / "conf")
    args = p.parse_args(argv)
    cells = compose_all(args.conf.resolve())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(cells, indent=1, sort_keys=True, default=str))
    print(f"{len(cells)} cells composed -> {args.out}")
    problems = []
    if args.stored is not None:
        problems += stored_problems(cells, args.stored)
    if args.against is not None:
        problems += against_problems(cells, json.loads(args.against.read_text()))
    for line in problems:
        print("  " + line)
    return 1 if problems else 0


def stored_problems(cells: dict, pool: Path) -> list[str]:
    import yaml

    problems, n = [], 0
    for f in sorted(pool.glob("*/config.yaml")):
        n += 1
        name, stored = f.parent.name, yaml.safe_load(f.read_text())
        if name not in cells:
            problems.append(f"{name}: stored in {pool} but no experiment composes it")
        elif keys := differs(stored, cells[name]["config"]):
            problems.append(f"{name}: its stored config computes differently in {keys}")
    print(f"{n} stored cell configs in {pool}: {n - len(problems)} compute as composed now")
    return problems


def against_problems(cells: dict, old: dict) -> list[str]:
    same = sum(1 for k in cells if k in old and cells[k]["config"] == old[k]["config"])
    problems = compare(cells, old)
    print(
        f"{same} of {len(cells)} cells have the same resolved config; "
        f"{len(cells) - same - len(problems)} more compute the same; {len(problems)} differ"
    )
    return problems


if __name__ == "__main__":
    sys.exit(main())
