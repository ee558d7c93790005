"""training_core.base."""
