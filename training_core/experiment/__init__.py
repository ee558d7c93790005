"""training_core.experiment.api."""
