"""Predict with a trained run: every target node's class and class probabilities, labelled or not.

    python predict.py run=outputs/runs/dblp/re_gcn/<time>          # the cell's best run on validation
    python predict.py run=<cell> ensemble=true                     # the mean of every run's probabilities
    python predict.py run=<cell>/runs/run_03 embeddings=true

Writes predictions.csv (node, split, label, predicted, p_<class>), scores.json and, on request, embeddings.npz
into the Hydra run directory (hydra.run.dir=<folder> chooses it; never inside the run). See conf/predict.yaml.
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
from regnn.pipeline.predict_guard import argv_refusal
from regnn.runs.listing import trained_name

# the default output folder's suffix: two predictions started in the same second get folders of their own
_ID = f"{os.getpid()}-{secrets.token_hex(2)}"
OmegaConf.register_new_resolver("predict_id", lambda: _ID, replace=True)
OmegaConf.register_new_resolver("predict_of", trained_name, replace=True)  # <graph>/<model> of the run


@hydra.main(version_base="1.3", config_path="conf", config_name="predict")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from regnn.pipeline.predict import predict

    out_dir = HydraConfig.get().runtime.output_dir
    try:
        predict(cfg, Path(out_dir))
    except RegnnError as e:  # a problem the user can fix: one line, no traceback, nothing left behind
        logging.getLogger("regnn").error("%s", e)
        discard_unused_run_dir(out_dir)
        sys.exit(2)


if __name__ == "__main__":
    refused = argv_refusal(sys.argv[1:])  # before Hydra writes .hydra/ and its log into that folder
    if refused:
        print(refused, file=sys.stderr)
        sys.exit(2)
    run(main)
