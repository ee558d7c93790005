"""training_core.engine."""
