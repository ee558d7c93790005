"""training_core.observers.base."""
