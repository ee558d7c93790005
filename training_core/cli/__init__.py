"""training_core.cli.headless."""
