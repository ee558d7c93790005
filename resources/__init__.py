"""The built-in examples (`experiments/*.py`) and their data (`data/`): a package so that an installed copy
carries them (pyproject.toml's package data), beside `training_core`, where training_core/loading.py looks
for them. Nothing imports it; `docs/` is not installed."""
