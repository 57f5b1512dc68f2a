"""Which relations a trained cell rests on: its learned relation weights per layer, and the Micro-F1 lost without
each relation (masked at inference, or retrained without it), means and 95% intervals over the cell's runs.

    python explain.py run=outputs/runs/dblp/re_gcn/<time>
    python explain.py run=outputs/runs/dblp/re_gcn/<time> ablation=retrain

Writes explain.md, explain.csv, explain.png, weights.csv and agreement.csv into the Hydra run directory
(outputs/explain/<graph>/<model>/<time>_<id>; never inside the run). See conf/explain.yaml and docs/explain.md.
"""

import logging
import os
import secrets
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

import regnn.config  # noqa: F401  (the resolvers and the model names the stored configs use)
from regnn.entry import discard_unused_run_dir, run
from regnn.errors import RegnnError
from regnn.runs.listing import trained_name

_ID = f"{os.getpid()}-{secrets.token_hex(2)}"
OmegaConf.register_new_resolver("predict_id", lambda: _ID, replace=True)
OmegaConf.register_new_resolver("predict_of", trained_name, replace=True)  # <graph>/<model> of the cell
OmegaConf.register_new_resolver("cell_folder", lambda run: Path(str(run)).expanduser().resolve().name, replace=True)


@hydra.main(version_base="1.3", config_path="conf", config_name="explain")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from regnn.pipeline.explain import explain, group_of
    from regnn.pipeline.predict_guard import held, refuse_inside_a_cell, refuse_output_inside
    from regnn.reporting.explain import write

    out_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        refuse_output_inside(out_dir, cfg.run, "explain")
        refuse_inside_a_cell(out_dir, "hydra.run.dir", "explain")
        with held(out_dir):
            e = explain(cfg)
            written = write(e, out_dir, f"Relations of {trained_name(e.cell)} ({e.cell.name})", group_of(e))
    except RegnnError as err:  # a problem the user can fix: one line, no traceback, nothing left behind
        logging.getLogger("regnn").error("%s", err)
        discard_unused_run_dir(out_dir)
        sys.exit(2)
    print((out_dir / "explain.md").read_text(), file=sys.stderr)
    for w in written:
        logging.getLogger("regnn").info("explain: wrote %s", w)


if __name__ == "__main__":
    from regnn.pipeline.predict_guard import argv_refusal

    refused = argv_refusal(sys.argv[1:], "explain")  # before Hydra writes .hydra/ and its log into that folder
    if refused:
        print(refused, file=sys.stderr)
        sys.exit(2)
    run(main)
