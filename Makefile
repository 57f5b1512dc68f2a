# regnn: run `make help` for the targets. Every target that needs Python sets up .venv first (once).
SHELL := /bin/bash
# the environment (VENV=.venv-3.12 PYTHON=python3.12 keeps one per Python beside the default, as CI does)
VENV ?= .venv
export VENV
PY := $(VENV)/bin/python
export REGNN_DATA_MIRROR ?= $(abspath ../shared/datasets)
FORCE ?=
# where an experiment's cells train (conf/hydra/launcher/, docs/scale.md): empty = one after another in this
# process; parallel = joblib, n_jobs cells at a time here; slurm = one SLURM job per cell; local = submitit processes
LAUNCHER ?=

.DEFAULT_GOAL := help
SMOKE ?= outputs/smoke/$(shell date +%Y-%m-%d_%H-%M-%S)
.PHONY: help setup venv data train test test-all benchmark tables reproduce readme scale-benchmark

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2}'
	@for e in $(EXPERIMENT_TARGETS); do printf "  \033[36m%-22s\033[0m %s (and $$e-smoke)\n" $$e \
		"$$(sed -n 's/^ *what: *"\(.*\)"$$/\1/p' conf/experiment/$$(echo $$e | tr - _).yaml)"; done

venv: ## create .venv (once) with the pinned stack and regnn in editable mode
	@REGNN_VENV=$(VENV) ./scripts/setup/setup.sh

setup: venv data ## venv + data: everything a fresh machine needs

data: venv ## copy DBLP/ACM/IMDB from $REGNN_DATA_MIRROR (or REGNN_DATA_URL) into data/ and verify checksums (FORCE=1 replaces differing files)
	@$(PY) -m regnn.data.fetch $(if $(FORCE),--force)

train: setup ## the main job: RE-GCN on DBLP, 10 runs, mean ± std Macro/Micro-F1
	$(PY) train.py dataset=dblp model=re_gcn

# tests run in one pytest-xdist worker per core this process may use (at most 8; one torch thread each);
# TEST_WORKERS=0 runs them in the pytest process itself
TEST_WORKERS ?= $(shell $(PY) -c 'import os; print(min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))' 2>/dev/null || echo 0)

.PHONY: lint
lint: venv ## the package's import layers (pyproject.toml: a lower layer never imports a higher one), ruff's rules and ruff's format (pyproject.toml; `make format` applies it)
	$(PY) -c 'import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))'
	$(PY) -m ruff check src scripts tests train.py predict.py explain.py
	$(PY) -m ruff format --check src scripts tests train.py predict.py explain.py

.PHONY: format
format: venv ## format the code as `make lint` checks it (ruff format, lines of at most 120 characters)
	$(PY) -m ruff format src scripts tests train.py predict.py explain.py

# tests marked serial (multi-process DDP) run afterwards, alone; TEST_MARKS narrows both (CI spreads the onepython
# tests over its Pythons instead: REGNN_ONEPYTHON_SHARE, tests/conftest.py)
TEST_MARKS ?=
test: setup lint ## the import layers and ruff's rules, then the fast test suite (CPU only; every test runs without DGL)
	@$(PY) -c 'import sys, numpy, torch; print(f"test: Python {sys.version.split()[0]}, numpy {numpy.__version__}, torch {torch.__version__} ($(VENV))")'
	$(PY) -m pytest -m "not slow and not serial and not slurm$(if $(TEST_MARKS), and $(TEST_MARKS))" -q -n $(TEST_WORKERS) --dist worksteal
	$(PY) -m pytest -m "serial and not slow$(if $(TEST_MARKS), and $(TEST_MARKS))" -q

test-all: setup ## the fast suite plus the tests marked slow (pyproject.toml lists the markers)
	$(PY) -m pytest -m "not serial and not slurm" -q -n $(TEST_WORKERS) --dist worksteal
	$(PY) -m pytest -m serial -q

.PHONY: paper-text
paper-text: setup ## Table 2's plain GCN/GAT rows under the paper's stated settings too (5 cells of 10 runs, resumable) -> results/table_paper_text.{csv,md}
	@for c in dblp:gcn acm:gcn imdb:gat acm:gat dblp:gat; do d=$${c%%:*}; m=$${c##*:}; \
		$(PY) train.py dataset=$$d model=$$m tuned/relation=$${d}_$${m}_plain_paper_text runs=10 resume=true \
			hydra.run.dir=outputs/paper_text/$${d}_$${m} || exit 1; done
	$(PY) -m regnn.reporting.paper_text
	$(PY) -m regnn.reporting.readme

.PHONY: check-cells
check-cells: venv ## compose every cell of the experiments and check that the configs the trained cells stored (outputs/experiments/cells) compute as they compose now
	$(PY) scripts/checks/compose_cells.py --out outputs/check_cells/$$(date +%Y-%m-%d_%H-%M-%S).json --stored outputs/experiments/cells

.PHONY: test-slurm slurm-start slurm-stop
test-slurm: setup ## sweeps through a real single-node SLURM: launch, preemption, time limit, two sweeps at once (root)
	@./scripts/setup/local_slurm.sh start
	@$(PY) -m pytest -m slurm -q; status=$$?; ./scripts/setup/local_slurm.sh stop; exit $$status

slurm-start: ## start a single-node SLURM on this machine (installs slurm-wlm + munge where missing; root)
	@./scripts/setup/local_slurm.sh start

slurm-stop: ## stop the single-node SLURM of slurm-start
	@./scripts/setup/local_slurm.sh stop

# The paper's experiments: every conf/experiment/<name>.yaml that declares its table or figure
# (hydra.callbacks.report) is `make <name>` (underscores as dashes): train its sweep's cells (finished ones are
# skipped), then render (ALLOW_MISSING=1: render what exists, naming the missing cells). The <name>-smoke twin
# runs the same sweep and renderer on the synthetic graph (2 runs, 4 epochs) under $(SMOKE).
EXPERIMENT_TARGETS := $(shell grep -l 'regnn.reporting.experiments.Report' conf/experiment/*.yaml | sed 's|.*/||; s|\.yaml$$||; s|_|-|g')
.PHONY: $(EXPERIMENT_TARGETS) $(addsuffix -smoke,$(EXPERIMENT_TARGETS)) fig-efficiency-smoke compare-smoke
$(EXPERIMENT_TARGETS): setup
	$(PY) train.py experiment=$(subst -,_,$@) ++hydra.callbacks.report.out=$(CURDIR)/results \
		$(if $(LAUNCHER),hydra/launcher=$(LAUNCHER)) $(if $(ALLOW_MISSING),++hydra.callbacks.report.allow_missing=true)
$(addsuffix -smoke,$(EXPERIMENT_TARGETS)): %-smoke: venv
	$(PY) train.py experiment=$(subst -,_,$*) debug=smoke hydra.sweeper.params.dataset=synthetic \
		hydra.sweep.dir=$(SMOKE)/cells ++hydra.callbacks.report.out=$(SMOKE)/results $(if $(LAUNCHER),hydra/launcher=$(LAUNCHER))
compare-smoke: venv ## experiment=compare (docs/custom_data.md) on the synthetic graph -> $(SMOKE)/compare/compare.{csv,md,png}
	$(PY) train.py experiment=compare dataset=synthetic debug=smoke hydra.sweep.dir=$(SMOKE)/compare $(if $(LAUNCHER),hydra/launcher=$(LAUNCHER))
fig-efficiency-smoke: venv
	$(PY) scripts/bench/benchmark.py --efficiency --datasets synthetic --models $(EFFICIENCY_MODELS) --warmup 1 \
		--overrides trainer.max_epochs=4 trainer.patience=4 --out $(SMOKE)/results

.PHONY: relational-example
relational-example: venv ## the Chinook sample database (docs/relational_example.md): built from its pinned source, compare, explain (RE-GCN, retrained on 3 runs), predict and the tabular floor (resumed) -> results/relational/
	$(PY) scripts/convert/chinook.py --out data/chinook
	$(PY) train.py experiment=compare dataset=custom dataset.path=data/chinook/sql model=mlp,gcn,rgcn,re_gcn,re_gat \
		threads=1 workers=1
	cp outputs/compare/chinook/compare.md outputs/compare/chinook/compare.csv results/relational/
	$(PY) explain.py run=outputs/compare/chinook/custom_re_gcn threads=1 hydra.run.dir=outputs/relational/explain_masked
	cp outputs/relational/explain_masked/explain.md results/relational/explain_masked.md
	$(PY) train.py dataset=custom dataset.path=data/chinook/sql model=re_gcn runs=3 threads=1 workers=1 \
		hydra.run.dir=outputs/relational/re_gcn_3runs
	$(PY) explain.py run=outputs/relational/re_gcn_3runs ablation=retrain threads=1 \
		hydra.run.dir=outputs/relational/explain_retrain
	cp outputs/relational/explain_retrain/explain.md results/relational/explain_retrain.md
	cp outputs/relational/explain_retrain/explain.csv results/relational/explain_retrain.csv
	$(PY) predict.py run=outputs/compare/chinook/custom_re_gcn threads=1 hydra.run.dir=outputs/relational/predict
	cp outputs/relational/predict/scores.json results/relational/predict_scores.json
	$(PY) -m regnn.experiments.tabular_floor data/chinook/sql --out results/relational/floor

.PHONY: explain-planted
explain-planted: setup ## relation weights vs masked and retrained ablation on graphs with planted relations (RE-GCN, 10 seeds per setting; resumed) -> results/explain_planted/
	$(PY) -m regnn.experiments.planted_study

.PHONY: weight-study
weight-study: setup ## which weight-derived quantity tracks the retrained ablation: DBLP/ACM/IMDB and graded/indirect planted graphs, every group retrained (RE-GCN, 10 runs per cell; resumed) -> results/weight_study/
	$(PY) -m regnn.experiments.weight_study

.PHONY: pyg-side-by-side
pyg-side-by-side: setup ## regnn's R-GCN, HGT and Simple-HGN beside PyG's (RGCNConv, HGTConv, MessagePassing; same start where the weights correspond, same trainer), DBLP/ACM/IMDB, 10 seeds (ARGS="--models hgt --datasets acm --runs 5": some cells, the others' rows kept) -> results/pyg_side_by_side.{csv,md,json}
	$(PY) scripts/bench/pyg_side_by_side.py $(ARGS)

.PHONY: many-relations
many-relations: setup ## R-GCN, HGT and Simple-HGN on a feature-less graph with 80 relation types: s/epoch against RE-GCN, and R-GCN on imbalanced labels against PyG's RGCNConv -> results/many_relations_{timing,collapse}.{csv,md}
	$(PY) scripts/bench/many_relations.py $(ARGS)

.PHONY: zoo
zoo: setup ## `dataset=custom` defaults chosen by leave-one-family-out on a zoo of generated graphs, scored on each family left out and on DBLP/ACM/IMDB read as custom graphs (10 seeds; resumed) -> results/zoo/
	$(PY) -m regnn.experiments.zoo_defaults $(ARGS)

.PHONY: grown-graph
grown-graph: setup ## predictions for a graph that grew: DBLP/ACM/IMDB with 20% of the test targets (or of an id-only type) held out, predicted without retraining beside retrained (RE-GCN, 10 runs per cell; resumed) -> results/grown_graph.{csv,md}
	$(PY) -m regnn.experiments.grown_graph

.PHONY: node-reasons
node-reasons: setup ## per-node reasons checked: fidelity on DBLP/ACM/IMDB and a node-level planted ground truth for every backbone (3 runs per cell; resumed) -> results/node_reasons.{csv,md}
	$(PY) -m regnn.experiments.node_reasons_study

.PHONY: explain-cells
explain-cells: setup ## explain.py on the Table 2 RE-GCN cells and ACM's RE-GAT (trained where missing): masked, and DBLP RE-GCN retrained (resumed) -> results/explain/
	$(PY) train.py -m experiment=base_cells dataset=dblp,acm,imdb model=re_gcn
	$(PY) train.py -m experiment=base_cells dataset=acm model=re_gat
	for c in dblp_re_gcn acm_re_gcn imdb_re_gcn acm_re_gat; do \
		$(PY) explain.py run=outputs/experiments/cells/$$c hydra.run.dir=results/explain/$$c || exit 1; done
	$(PY) explain.py run=outputs/experiments/cells/dblp_re_gcn ablation=retrain hydra.run.dir=results/explain/dblp_re_gcn_retrain

benchmark: setup ## seconds per epoch, peak memory, parameters per dataset x model, and the main job -> results/benchmark.*
	$(PY) scripts/bench/benchmark.py

# every backbone of regnn.catalog plain and RE, then the baselines (evaluated only where used)
EFFICIENCY_MODELS = $(shell $(PY) -m regnn.catalog models plain+re | tr , ' ') rgcn hgt simple_hgn han gtn gcn_m gat_m \
	metapath2vec magnn magnn_ac rhgnn
# e.g. EFFICIENCY_OVERRIDES="trainer.max_epochs=20 trainer.patience=20" caps every run (the table says so)
EFFICIENCY_OVERRIDES ?=
.PHONY: fig-efficiency
fig-efficiency: setup ## Figure 8: parameters, s/epoch, s/run, peak memory of every model (and baseline) on DBLP, ratios to RE-GCN -> results/fig_efficiency.png
	$(PY) scripts/bench/benchmark.py --efficiency --datasets dblp --models $(EFFICIENCY_MODELS) \
		$(if $(EFFICIENCY_OVERRIDES),--overrides $(EFFICIENCY_OVERRIDES))

# `make tables` renders every declared experiment (regnn.reporting.experiments lists them, `make tables` names each)
tables: venv ## render every reproduced table and figure from the trained cells (no training, seconds), then README/docs
	$(PY) -m regnn.reporting.experiments $(if $(ALLOW_MISSING),--allow-missing)

# fig-efficiency measures timings (minutes); here it runs only when its table is missing (`make fig-efficiency` re-measures)
reproduce: setup ## train every missing cell of the 9 experiments, then `make tables` (a resumed run trains only what is missing)
	$(MAKE) $(EXPERIMENT_TARGETS) $(if $(wildcard results/table_efficiency.csv),,fig-efficiency)
	$(MAKE) tables

readme: venv ## regenerate the results sections of README.md and docs/ from results/ (no rendering of tables)
	$(PY) -m regnn.reporting.readme

scale-benchmark: setup ## mini-batch RE-GCN/RE-GAT on a generated graph of OGBN-MAG's size, one epoch each, profiled -> results/scale_benchmark_epoch.* (SCALE=0.05 for a quick one)
	$(PY) scripts/bench/scale_benchmark.py --scale $(or $(SCALE),1) --profile --sampling-rates

.PHONY: scale-growth
scale-growth: setup ## mini-batch RE-GCN/RE-GAT epochs at 5%, 10%, 25%, 50% of OGBN-MAG's size beside the full-size one (make scale-benchmark first) -> results/scale_growth.*, results/fig_scale_growth.png
	$(PY) scripts/bench/scale_growth.py
