"""training_core.rundir."""
