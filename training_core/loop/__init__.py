"""training_core.loop."""
