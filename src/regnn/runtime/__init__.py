"""What a training process needs around the model, importing nothing of regnn above it: stopping on a signal
without losing anything (interrupt), process-level speed settings and peak memory (perf), and the experiment
loggers (loggers)."""
