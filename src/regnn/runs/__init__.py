"""Run bookkeeping below the pipeline: the cell store (one folder per cell, its runs and summary), claims that keep
one writer per cell, files written whole, and the executor that trains runs side by side. Reporting and tuning
read cells through here without importing the pipeline."""
