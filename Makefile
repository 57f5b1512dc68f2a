# regnn: run `make help` for the targets. Every target that needs Python sets up .venv first (once).
SHELL := /bin/bash
PY := .venv/bin/python
export REGNN_DATA_MIRROR ?= $(abspath ../shared/datasets)
FORCE ?=
# where an experiment's cells train (conf/hydra/launcher/, docs/scale.md): empty = one after another in this
# process; parallel = joblib, n_jobs cells at a time here; slurm = one SLURM job per cell; local = submitit processes
LAUNCHER ?=

.DEFAULT_GOAL := help
SMOKE ?= outputs/smoke/$(shell date +%Y-%m-%d_%H-%M-%S)
.PHONY: help setup venv data train test test-all benchmark tables reproduce readme scale-benchmark table-baselines

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2}'

venv: ## create .venv (once) with the pinned stack and regnn in editable mode
	@./scripts/setup.sh

setup: venv data ## venv + data: everything a fresh machine needs

data: venv ## copy DBLP/ACM/IMDB from $REGNN_DATA_MIRROR (or REGNN_DATA_URL) into data/ and verify checksums (FORCE=1 replaces differing files)
	@$(PY) -m regnn.data.fetch $(if $(FORCE),--force)

train: setup ## the main job: RE-GCN on DBLP, 10 runs, mean ± std Macro/Micro-F1
	$(PY) train.py dataset=dblp model=re_gcn

# tests run in one pytest-xdist worker per core this process may use (at most 8; one torch thread each);
# TEST_WORKERS=0 runs them in the pytest process itself
TEST_WORKERS ?= $(shell $(PY) -c 'import os; print(min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))' 2>/dev/null || echo 0)

.PHONY: lint
lint: venv ## the package's import layers (pyproject.toml: a lower layer never imports a higher one) and ruff's error rules
	$(PY) -c 'import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))'
	$(PY) -m ruff check src scripts tests train.py

# tests marked serial (multi-process DDP) run afterwards, alone
test: setup lint ## the import layers and ruff's error rules, then the fast test suite (CPU only; every test runs without DGL)
	$(PY) -m pytest -m "not slow and not serial and not slurm" -q -n $(TEST_WORKERS) --dist worksteal
	$(PY) -m pytest -m "serial and not slow" -q

test-all: setup ## the fast suite plus the tests marked slow (pyproject.toml lists the markers)
	$(PY) -m pytest -m "not serial and not slurm" -q -n $(TEST_WORKERS) --dist worksteal
	$(PY) -m pytest -m serial -q

.PHONY: test-slurm slurm-start slurm-stop
test-slurm: setup ## sweeps through a real single-node SLURM: launch, preemption, time limit, two sweeps at once (root)
	@./scripts/local_slurm.sh start
	@$(PY) -m pytest -m slurm -q; status=$$?; ./scripts/local_slurm.sh stop; exit $$status

slurm-start: ## start a single-node SLURM on this machine (installs slurm-wlm + munge where missing; root)
	@./scripts/local_slurm.sh start

slurm-stop: ## stop the single-node SLURM of slurm-start
	@./scripts/local_slurm.sh stop

# $(call experiment,<experiment config>,<renderer modules>): train the sweep's cells (finished ones are skipped),
# then render (ALLOW_MISSING=1: render what exists, naming the missing cells). The -smoke twin runs the same sweep on the synthetic graph (2 runs, 4 epochs) under $(SMOKE).
define experiment
$(PY) train.py experiment=$(1) $(if $(LAUNCHER),hydra/launcher=$(LAUNCHER))
$(foreach r,$(2),$(PY) -m regnn.reporting.$(r) $(if $(ALLOW_MISSING),--allow-missing)
)
endef
define smoke
$(PY) train.py experiment=$(1) debug=smoke hydra.sweeper.params.dataset=synthetic hydra.sweep.dir=$(SMOKE)/cells $(if $(LAUNCHER),hydra/launcher=$(LAUNCHER))
$(foreach r,$(2),$(PY) -m regnn.reporting.$(r) --cells $(SMOKE)/cells --out $(SMOKE)/results --datasets synthetic
)
endef

.PHONY: table-classification table-ablation fig-backbones fig-lambda fig-case-study table-clustering fig-tsne
table-classification: setup ## Table 2: GCN, GAT, RE-GCN, RE-GAT x DBLP, ACM, IMDB (10 runs per cell, resumable) -> results/
	$(call experiment,table_classification,classification)
table-ablation: setup ## Table 5: GCN/GAT plain, -S, -E, RE on DBLP -> results/table_ablation.*
	$(call experiment,table_ablation,ablation)
fig-backbones: setup ## Figure 3: every backbone of regnn.catalog (GCN, GAT, GraphSAGE, ...) plain vs RE on DBLP and ACM -> results/fig_backbones.png
	$(call experiment,fig_backbones,backbones)
fig-lambda: setup ## Figure 6: RE-GCN on DBLP, lambda in {0.001, 1, 100, 1000} -> results/fig_lambda.png
	$(call experiment,fig_lambda,lambda_study)
fig-case-study: setup ## Figure 7: relation weights per layer of a 4-layer RE-GCN on DBLP -> results/fig_case_study.png
	$(call experiment,fig_case_study,case_study)
table-clustering: setup ## Table 3: NMI/ARI of the baselines, GCN and RE-GCN on DBLP, ACM, IMDB (the Table 2 cells) -> results/table_clustering.*
	$(call experiment,table_clustering,clustering)
fig-tsne: setup ## Figure 5: t-SNE of DBLP authors, GCN vs RE-GCN -> results/fig_tsne.png
	$(call experiment,fig_tsne,tsne)
table-baselines: setup ## Table 2 with every baseline measured here (MLP, Metapath2vec, R-GCN, HGT, Simple-HGN, R-HGNN, HAN, GTN, MAGNN, MAGNN-AC, GCN-M, GAT-M + GCN, GAT, RE-GCN, RE-GAT) -> results/table_baselines.*
	$(call experiment,table_baselines,baselines)

.PHONY: table-classification-smoke table-ablation-smoke fig-backbones-smoke fig-lambda-smoke fig-case-study-smoke \
	table-clustering-smoke fig-tsne-smoke fig-efficiency-smoke table-baselines-smoke compare-smoke
table-classification-smoke: venv ## the same path on the synthetic graph in seconds (likewise every *-smoke target)
	$(call smoke,table_classification,classification)
table-ablation-smoke: venv
	$(call smoke,table_ablation,ablation)
fig-backbones-smoke: venv
	$(call smoke,fig_backbones,backbones)
fig-lambda-smoke: venv
	$(call smoke,fig_lambda,lambda_study)
fig-case-study-smoke: venv
	$(call smoke,fig_case_study,case_study)
table-clustering-smoke: venv
	$(call smoke,table_clustering,clustering)
fig-tsne-smoke: venv
	$(call smoke,fig_tsne,tsne)
table-baselines-smoke: venv
	$(call smoke,table_baselines,baselines)
compare-smoke: venv ## experiment=compare (docs/custom_data.md) on the synthetic graph -> $(SMOKE)/compare/compare.{csv,md,png}
	$(PY) train.py experiment=compare dataset=synthetic debug=smoke hydra.sweep.dir=$(SMOKE)/compare $(if $(LAUNCHER),hydra/launcher=$(LAUNCHER))
fig-efficiency-smoke: venv
	$(PY) scripts/benchmark.py --efficiency --datasets synthetic --models $(EFFICIENCY_MODELS) --warmup 1 \
		--overrides trainer.max_epochs=4 trainer.patience=4 --out $(SMOKE)/results

benchmark: setup ## seconds per epoch, peak memory, parameters per dataset x model, and the main job -> results/benchmark.*
	$(PY) scripts/benchmark.py

# every backbone of regnn.catalog plain and RE, then the baselines (evaluated only where used)
EFFICIENCY_MODELS = $(shell $(PY) -m regnn.catalog models plain+re | tr , ' ') rgcn hgt simple_hgn han gtn gcn_m gat_m \
	metapath2vec magnn magnn_ac rhgnn
# e.g. EFFICIENCY_OVERRIDES="trainer.max_epochs=20 trainer.patience=20" caps every run (the table says so)
EFFICIENCY_OVERRIDES ?=
.PHONY: fig-efficiency
fig-efficiency: setup ## Figure 8: parameters, s/epoch, s/run, peak memory of every model (and baseline) on DBLP, ratios to RE-GCN -> results/fig_efficiency.png
	$(PY) scripts/benchmark.py --efficiency --datasets dblp --models $(EFFICIENCY_MODELS) \
		$(if $(EFFICIENCY_OVERRIDES),--overrides $(EFFICIENCY_OVERRIDES))

# the paper's tables and figures (regnn.reporting.experiments lists them; `make tables` names each one)
EXPERIMENTS := table-classification table-baselines table-clustering table-ablation fig-backbones fig-tsne \
	fig-lambda fig-case-study fig-efficiency

tables: venv ## render every reproduced table and figure from the trained cells (no training, seconds), then README/docs
	$(PY) -m regnn.reporting.experiments $(if $(ALLOW_MISSING),--allow-missing)

# fig-efficiency measures timings (minutes); here it runs only when its table is missing (`make fig-efficiency` re-measures)
reproduce: setup ## train every missing cell of the 9 experiments, then `make tables` (a resumed run trains only what is missing)
	$(MAKE) $(filter-out fig-efficiency,$(EXPERIMENTS)) $(if $(wildcard results/table_efficiency.csv),,fig-efficiency)
	$(MAKE) tables

readme: venv ## regenerate the results sections of README.md and docs/ from results/ (no rendering of tables)
	$(PY) -m regnn.reporting.readme

scale-benchmark: setup ## mini-batch RE-GCN/RE-GAT on a generated graph of OGBN-MAG's size, one epoch each, profiled -> results/scale_benchmark_epoch.* (SCALE=0.05 for a quick one)
	$(PY) scripts/scale_benchmark.py --scale $(or $(SCALE),1) --profile --sampling-rates
