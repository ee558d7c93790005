"""From a file to an `Experiment`: the built-in examples, importing an experiment file, calling its
`build()` (or the GAN shortcut), and checking what came back.

Every call into user code goes through `usercode.user_code`, so a file that raises, a `build()` that
raises and models that do not fit all end as the same kind of one-line `UserError`. Importing this
module loads no TensorFlow: the file being loaded does that.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from .config import file_sha256
from .errors import UserError
from .experiment import SAMPLE_KINDS, Experiment, Models
from .gan import GAN_NAMES, gan_experiment
from .usercode import user_code

__all__ = ["EXAMPLES_DIR", "builtin_examples", "example_path", "require_file", "file_sha256", "load_module",
           "build_experiment"]

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "resources" / "experiments"


def builtin_examples() -> list[str]:
    return sorted(p.stem for p in EXAMPLES_DIR.glob("*.py") if not p.stem.startswith("_"))


def example_path(name: str) -> Path:
    p = EXAMPLES_DIR / f"{name}.py"
    if not p.is_file():
        raise UserError(f"unknown example {name!r}; choose one of {', '.join(builtin_examples())}")
    return p


def require_file(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"experiment file {path} does not exist; check the path")
    return path


def load_module(path: str | Path) -> ModuleType:
    """Import an experiment file; a file that is missing or raises becomes a one-line `UserError`."""
    path = require_file(path)
    name = f"freezeframe_experiment_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"experiment file {path} is not a Python file; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with user_code(f"experiment file {path.name}", path):
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def build_experiment(module: ModuleType, path: Path) -> Experiment:
    """Turn an imported experiment file into a checked `Experiment` (calls user code: models get built
    here; the GAN shortcut also dry-runs them)."""
    if callable(getattr(module, "build", None)):
        with user_code(f"build() in {path.name}", path):
            exp = module.build()
        if not isinstance(exp, Experiment):
            raise UserError(f"build() in {path.name} returned {type(exp).__name__}, not an Experiment; "
                            f"return training_core.Experiment(...)")
    elif all(hasattr(module, a) for a in GAN_NAMES):
        exp = gan_experiment(module, path)
    else:
        raise UserError(f"experiment file {path.name} defines neither build() nor {', '.join(GAN_NAMES[:-1])} "
                        f"and {GAN_NAMES[-1]}; see README 'Experiment files'")
    _check(exp, path)
    return exp


def _check(exp: Experiment, path: Path) -> None:
    if not isinstance(exp.models, Models):
        exp.models = Models(exp.models)  # a plain dict from build() gets attribute access too
    if not exp.phases:
        raise UserError(f"experiment in {path.name} has no phases; give it at least one Phase")
    names = [p.name for p in exp.phases]
    if len(set(names)) != len(names):
        raise UserError(f"experiment in {path.name} has duplicate phase names {names}; name each phase once")
    if exp.metrics is not None and not callable(exp.metrics):
        raise UserError(f"metrics in {path.name} must be a function of ctx returning {{name: number}}, "
                        f"got {type(exp.metrics).__name__}")
    if exp.sample_kind not in SAMPLE_KINDS:
        raise UserError(f"sample_kind {exp.sample_kind!r} in {path.name} is unknown; use one of {SAMPLE_KINDS}")
    for p in exp.phases:
        if not callable(p.loss):
            raise UserError(f"phase {p.name!r} in {path.name} has no callable loss; give loss=fn(ctx)")
        if isinstance(p.trains, str):
            p.trains = [p.trains]
