"""Experiments: named Keras models plus the phases that train them.

A phase has a name, a loss, the scopes it trains and its own optimizer. Experiments come from plain
Python files (see README, "Experiment files"): either a `build()` that returns an `Experiment`, or the
GAN shortcut, a file that defines `generator`, `discriminator`, `real_data` and `noise_dim` and gets
the standard non-saturating GAN losses. The built-in examples are such files, in
`resources/experiments/`, so they use exactly the API a user does.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping, Sequence

from .errors import UserError

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "resources" / "experiments"
SAMPLE_KINDS = ("none", "points2d", "images", "matrix")


class Models(dict):
    """Models by name, reachable as `ctx.models.generator` or `ctx.models["generator"]`."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no model named {name!r}; models are {', '.join(self)}") from None


@dataclass
class Phase:
    name: str
    #: `loss(ctx) -> scalar tensor`, traced into the compiled step; see `StepContext`
    loss: Callable[["StepContext"], Any]
    #: scope prefixes whose trainable variables this phase updates, e.g. ["discriminator"]
    trains: Sequence[str]
    #: a Keras 3 optimizer; default Adam(learning_rate, beta_1=0.5)
    optimizer: Any = None
    learning_rate: float = 2e-4


@dataclass
class Experiment:
    name: str
    models: Mapping[str, Any]
    phases: list[Phase]
    #: real data; each step draws `batch_size` rows of it at random (on the device) into `ctx.batch`
    data: Any = None
    batch_size: int | None = 64  # None: the whole of `data` every step
    #: `sample(ctx) -> dict` for the samples view; kind says how to draw it
    sample: Callable[["SampleContext"], dict] | None = None
    sample_kind: str = "none"
    default_ratio: Sequence[int] | None = None
    description: str = ""
    extra: dict = field(default_factory=dict)


class StepContext:
    """What a loss function sees inside the compiled step.

    `models`, `batch` (a random batch of the real data), `data` (all of it), `batch_size`, and
    random draws from the run's seeded generator (`normal`, `uniform`), which a checkpoint saves, so
    that a resumed run draws the same numbers.
    """

    def __init__(self, models: Models, rng: Any, batch: Any, data: Any, batch_size: int, training: bool = True):
        self.models, self.rng, self.batch, self.data = models, rng, batch, data
        self.batch_size, self.training = batch_size, training

    def normal(self, shape: Sequence[int], stddev: float = 1.0) -> Any:
        return self.rng.normal(shape, stddev=stddev)

    def uniform(self, shape: Sequence[int], minval: float = 0.0, maxval: float = 1.0) -> Any:
        return self.rng.uniform(shape, minval=minval, maxval=maxval)


class SampleContext(StepContext):
    """What `sample(ctx)` sees: the same, with `training=False` and `n` samples wanted."""

    def __init__(self, models: Models, rng: Any, batch: Any, data: Any, n: int):
        super().__init__(models, rng, batch, data, n, training=False)
        self.n = n


def builtin_examples() -> list[str]:
    return sorted(p.stem for p in EXAMPLES_DIR.glob("*.py") if not p.stem.startswith("_"))


def example_path(name: str) -> Path:
    p = EXAMPLES_DIR / f"{name}.py"
    if not p.is_file():
        raise UserError(f"unknown example {name!r}; choose one of {', '.join(builtin_examples())}")
    return p


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _first_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def _user_frame(e: BaseException, path: Path) -> str:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == path.resolve()]
    return f" at line {frames[-1].lineno}" if frames else ""


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
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001 - any failure of user code is the user's to fix
        sys.modules.pop(name, None)
        if isinstance(e, KeyboardInterrupt):
            raise
        raise UserError(f"experiment file {path.name} raised {_first_line(e)}{_user_frame(e, path)}; fix the file",
                        detail=traceback.format_exc()) from None
    return module


def build_experiment(module: ModuleType, path: Path) -> Experiment:
    """Turn an imported experiment file into an `Experiment` (calls user code: models get built here)."""
    try:
        if callable(getattr(module, "build", None)):
            exp = module.build()
            if not isinstance(exp, Experiment):
                raise UserError(f"build() in {path.name} returned {type(exp).__name__}, not an Experiment; "
                                f"return training_core.Experiment(...)")
        elif all(hasattr(module, a) for a in ("generator", "discriminator", "real_data", "noise_dim")):
            from .gan import gan_experiment
            exp = gan_experiment(module, path.stem)
        else:
            raise UserError(f"experiment file {path.name} defines neither build() nor generator, discriminator, "
                            f"real_data and noise_dim; see README 'Experiment files'")
    except UserError:
        raise
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        raise UserError(f"experiment file {path.name} raised {_first_line(e)}{_user_frame(e, path)} while building "
                        f"its models; fix the file", detail=traceback.format_exc()) from None
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
    if exp.sample_kind not in SAMPLE_KINDS:
        raise UserError(f"sample_kind {exp.sample_kind!r} in {path.name} is unknown; use one of {SAMPLE_KINDS}")
    for p in exp.phases:
        if not callable(p.loss):
            raise UserError(f"phase {p.name!r} in {path.name} has no callable loss; give loss=fn(ctx)")
        if isinstance(p.trains, str):
            p.trains = [p.trains]
