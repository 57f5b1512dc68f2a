# regnn: run `make help` for the targets. Every target that needs Python sets up .venv first (once).
SHELL := /bin/bash
PY := .venv/bin/python
export REGNN_DATA_MIRROR ?= $(abspath ../shared/datasets)
FORCE ?=

.DEFAULT_GOAL := help
.PHONY: help setup venv data train test test-all table-classification benchmark tables scale-benchmark

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2}'

venv: ## create .venv (once) with the pinned stack and regnn in editable mode
	@./scripts/setup.sh

setup: venv data ## venv + data: everything a fresh machine needs

data: venv ## copy DBLP/ACM/IMDB from $REGNN_DATA_MIRROR (or REGNN_DATA_URL) into data/ and verify checksums (FORCE=1 replaces differing files)
	@$(PY) -m regnn.data.fetch $(if $(FORCE),--force)

train: setup ## the main job: RE-GCN on DBLP, 10 runs, mean ± std Macro/Micro-F1
	$(PY) train.py dataset=dblp model=re_gcn

test: setup ## the fast test suite (a few minutes)
	$(PY) -m pytest -m "not slow" -q

test-all: setup ## every test, the slow end-to-end ones on real data included
	$(PY) -m pytest -q

table-classification: setup ## Table 2 (GCN, GAT, RE-GCN, RE-GAT x DBLP, ACM, IMDB; 10 runs per cell, resumable) -> results/
	$(PY) train.py experiment=table_classification
	$(PY) -m regnn.reporting.classification

benchmark: setup ## seconds per epoch, peak memory, parameters per dataset x model -> results/benchmark.*
	$(PY) scripts/benchmark.py

tables: table-classification ## every reproduced table of the paper

# -- issue 6 ---------------------------------------------------------------------------------------------------
scale-benchmark: setup ## mini-batch RE-GCN/RE-GAT on a generated graph of OGBN-MAG's size -> results/scale_benchmark.* (SCALE=0.05 for a quick one)
	$(PY) scripts/scale_benchmark.py --scale $(or $(SCALE),1)
