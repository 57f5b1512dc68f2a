"""Experiments over many cells that are no table of the paper: experiment=compare (compare_sweep.py), every model on one
graph the same way. The paper's tables are rendered by regnn.reporting; the validation search is regnn.tuning."""
