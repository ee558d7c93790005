"""From a file to an `Experiment`: the built-in examples, importing an experiment file, calling its
`build()` (or the GAN shortcut), and checking what came back.

Every call into user code goes through `usercode.user_code`, so a file that raises, a `build()` that
raises and models that do not fit all end as the same kind of one-line `UserError`. Importing this
module loads no TensorFlow: the file being loaded does that.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import training_core
from training_core.base.alternation import check_counts
from training_core.base.config import file_sha256, wrong_file
from training_core.base.errors import UserError
from training_core.experiment.api import SAMPLE_KINDS, Experiment, Models, Phase
from training_core.experiment.data import describe, is_dataset
from training_core.experiment.gan import GAN_NAMES, gan_experiment
from training_core.experiment.usercode import user_code

__all__ = ["EXAMPLES_DIR", "builtin_examples", "example_path", "require_file", "file_sha256", "load_module",
           "build_experiment", "refuse_inside_experiment"]

# `resources` (a package: pyproject.toml installs its files) lies beside the `training_core` package, in the
# repository as installed; found from the package, not this module (which may move), and not by importing
# it by name (a `resources` in the working directory would shadow it in `python -m training_core.service`).
EXAMPLES_DIR = Path(training_core.__file__).resolve().parent.parent / "resources" / "experiments"


def builtin_examples() -> list[str]:
    return sorted(p.stem for p in EXAMPLES_DIR.glob("*.py") if not p.stem.startswith("_"))


def example_path(name: str) -> Path:
    """A built-in example's file. Only a name from `builtin_examples()`: `example = "../../x"` in a config
    would otherwise run any file, without the sha256 a file gets recorded with."""
    p = EXAMPLES_DIR / f"{name}.py"
    if name not in builtin_examples():
        raise UserError(f"unknown example {name!r}; choose one of {', '.join(builtin_examples())}")
    return p


def require_file(path: str | Path) -> Path:
    path = Path(path)
    if path.is_dir():
        raise UserError(f"experiment file {path} is a directory; give the .py file in it")
    if not path.is_file():
        raise UserError(f"experiment file {path} does not exist; check the path")
    if path.suffix != ".py":  # Python imports nothing else; said before TensorFlow loads, not 5 s later
        raise UserError(wrong_file(path, "--experiment") or f"experiment file {path} is not a Python file; give a "
                        f".py file")
    return path


_IMPORTING: list[Path] = []  # the experiment files being imported now (innermost last)


def refuse_inside_experiment(call: str) -> None:
    """`start_run(...)`/`Monitor(...)` in a file Freezeframe imports as an experiment: that file is a script
    training with training_core.monitor, and importing it ran its training inside Freezeframe's training
    process (which then trained the user's run on its own). One line, before the call opens any run."""
    if _IMPORTING:
        name = _IMPORTING[-1].name
        raise UserError(f"{name} calls {call}: it is a script that trains with training_core.monitor, not an "
                        f"experiment file; run it with python {name} (the window can attach to its run)")


def load_module(path: str | Path) -> ModuleType:
    """Import an experiment file; a file that is missing or raises becomes a one-line `UserError`.

    The file imports what lies beside it, as `python file.py` would: its folder comes first on `sys.path`
    (and stays there, as it does for a script, for imports made later inside its functions), and `sys.argv` is
    `[path]` while it is imported (a file that parses arguments at import read main.py's flags). Modules that an
    earlier load imported from that folder are forgotten first, so a file edited between two runs of the
    window's training process is imported as it is now."""
    path = require_file(path)
    _put_folder_first(path.resolve().parent)
    name = f"freezeframe_experiment_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"experiment file {path} is not a Python file; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    _IMPORTING.append(path)
    argv, sys.argv = sys.argv, [str(path)]  # what `python file.py` gives it, not main.py's flags
    try:
        with user_code(f"experiment file {path.name}", path):
            spec.loader.exec_module(module)
    except UserError as e:
        sys.modules.pop(name, None)
        used = _monitor_use(module)  # a script failing at import, where `python file.py ARGS` would not: say so
        if used is None or e.detail is None:  # (detail: a failure of the file's code, not a line of our own)
            raise
        raise UserError(_script_line(path, used), detail=e.detail) from None
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        sys.argv = argv
        _IMPORTING.pop()
    return module


def _put_folder_first(folder: Path) -> None:
    where = str(folder)
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None)
        if file and Path(file).parent == folder and not name.startswith("freezeframe_experiment_"):
            del sys.modules[name]
    if where in sys.path:
        sys.path.remove(where)
    sys.path.insert(0, where)


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
    elif (used := _monitor_use(module)) is not None:  # no experiment, and the monitor's: a training script
        raise UserError(_script_line(path, used))
    elif any(hasattr(module, a) for a in GAN_NAMES):  # the GAN shortcut, not quite: name what is missing
        missing = [a for a in GAN_NAMES if not hasattr(module, a)]
        raise UserError(f"experiment file {path.name} defines {', '.join(a for a in GAN_NAMES if a not in missing)} "
                        f"but not {', '.join(missing)}; the GAN shortcut needs all four (docs/experiments.md)")
    else:
        raise UserError(f"experiment file {path.name} defines neither build() nor {', '.join(GAN_NAMES[:-1])} "
                        f"and {GAN_NAMES[-1]}; see docs/experiments.md")
    _check(exp, path)
    return exp


_MONITOR = "training_core.monitor"


def _monitor_use(module: ModuleType) -> str | None:
    """What of training_core.monitor the file's namespace holds (`start_run`, `Monitor`, the module itself), or
    None. A script whose `main()` waits behind `if __name__ == "__main__"` never calls `start_run` on import,
    so `refuse_inside_experiment` cannot catch it; without this it read as a GAN shortcut with names missing."""
    for value in vars(module).values():
        if isinstance(value, ModuleType):
            if value.__name__ == _MONITOR or value.__name__.startswith(_MONITOR + "."):
                return value.__name__
        elif (callable(value) and isinstance(getattr(value, "__module__", None), str)
              and value.__module__.startswith(_MONITOR + ".")):
            return getattr(value, "__name__", _MONITOR)
    return None


def _script_line(path: Path, used: str) -> str:
    return (f"{path.name} imports {used}: it is a script that trains with training_core.monitor, not an experiment "
            f"file; run it with python {path.name} (the window can attach to its run)")


def _check(exp: Experiment, path: Path) -> None:
    """What `build()` returned must be usable before anything is traced: each problem one line."""
    if not isinstance(exp.models, dict) or not exp.models:
        got = "an empty dict" if isinstance(exp.models, dict) else type(exp.models).__name__
        raise UserError(f"models of the experiment in {path.name} must be a dict of name -> Keras model, got "
                        f"{got}; write models={{\"generator\": g, ...}}")
    if not isinstance(exp.models, Models):
        exp.models = Models(exp.models)  # a plain dict from build() gets attribute access too
    if isinstance(exp.phases, (str, bytes)) or not isinstance(exp.phases, (list, tuple)) or not exp.phases:
        raise UserError(f"phases of the experiment in {path.name} must be a list of Phase(...), got "
                        f"{exp.phases!r}; write phases=[Phase(\"D\", loss, trains=[...]), ...]")
    for i, p in enumerate(exp.phases):
        if not isinstance(p, Phase):
            raise UserError(f"phase {i} of the experiment in {path.name} is a {type(p).__name__}, not a Phase; "
                            f"write Phase(\"D\", loss, trains=[\"discriminator\"]) for each phase")
    exp.phases = list(exp.phases)
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
        p.loss = _float_loss(p.loss, p.name)
    if exp.default_ratio is not None and not isinstance(exp.default_ratio, str) \
            and len(exp.default_ratio) == len(names):  # (another length is refused with the ratio's other checks)
        check_counts(list(exp.default_ratio), names, "default ratio", f" in {path.name}")
    _check_models(exp, path)
    _check_data(exp, path)


def _check_models(exp: Experiment, path: Path) -> None:
    """Every model has weights, and every variable path is unique across models: a scope names one thing,
    so freezing `generator` can never freeze a second model that happens to share the name."""
    owner: dict[str, tuple[str, int]] = {}
    import keras
    for name, m in exp.models.items():
        if not isinstance(m, keras.layers.Layer):  # a function or an array: "build it" would not help
            raise UserError(f"model {name!r} in {path.name} is a {type(m).__name__}, not a Keras model; give a "
                            f"keras.Model or layer (e.g. keras.Sequential([...], name={name!r}))")
        variables = list(getattr(m, "variables", None) or [])
        if not variables:
            if getattr(m, "built", False):
                raise UserError(f"model {name!r} in {path.name} has no weights (none of its layers has variables); "
                                f"leave it out of models, or give it a layer with weights")
            raise UserError(f"model {name!r} in {path.name} has no variables yet; build it (keras.Input or "
                            f"model.build(shape)) before returning it")
        for v in variables:
            p = str(getattr(v, "path", ""))
            other, ident = owner.setdefault(p, (name, id(v)))
            if other != name and ident != id(v):  # the same variable in both is a shared layer: one thing
                top = p.split("/")[0]
                fix = (f"give each model its own name (keras.Sequential(..., name=\"{name}\"))"
                       if top in (other, name, getattr(m, "name", name)) else
                       f"the layer or model {top!r} in each keeps its own name; name them apart")
                raise UserError(f"models {other!r} and {name!r} in {path.name} both have a variable {p}; {fix}")


def data_name(module: ModuleType, path: Path) -> str:
    """How a data error names the data: `real_data() in x.py` for a GAN-shortcut file (the function the user wrote,
    as its other data errors say), `the data of the experiment in x.py` for one with `build()`."""
    return f"the data of the experiment in {path.name}" if callable(getattr(module, "build", None)) else \
        f"real_data() in {path.name}"


def _check_data(exp: Experiment, path: Path) -> None:
    """What the data may be (experiment/data.py), each wrong kind one line; NaN or Inf in it would show up as a NaN
    loss, which reads as a learning rate that is too high."""
    if exp.data is not None:
        describe(exp.data, f"the data of the experiment in {path.name}")


def check_batch_size(batch_size: int, exp: Experiment, path: Path) -> None:
    """The batch size a run asks for (`--batch-size`, or the `batch_size` of a `config.toml`) is at most the
    rows of in-memory data: each step draws its batch from the rows at random, with replacement, so a larger one
    repeats rows instead of taking the whole data (which `batch_size=None` in the experiment does), and it
    passed without a word. The experiment's own batch size, which a run records and a resume or replay asks
    for again, is the experiment's to choose (it is not refused: files that worked keep working). A Dataset's
    rows are not counted (its batches are made from it repeated)."""
    rows = None if exp.data is None or is_dataset(exp.data) else \
        describe(exp.data, f"the data of the experiment in {path.name}").count
    if rows is not None and batch_size > rows and batch_size != exp.batch_size:
        raise UserError(f"batch size {batch_size} is larger than the data of the experiment in {path.name} "
                        f"({rows} rows); give --batch-size {rows} or less")


def _float_loss(loss: Callable[[Any], Any], phase: str) -> Callable[[Any], Any]:
    """The loss, checked when it is traced to return a floating-point value: a string or an integer has no
    gradient, and TensorFlow would only say "No gradients provided for any variable"."""
    if getattr(loss, "_freezeframe_checked", False):
        return loss

    @functools.wraps(loss)
    def checked(ctx: Any) -> Any:
        out = loss(ctx)
        dtype = getattr(out, "dtype", None)
        if isinstance(out, (str, bytes)) or (dtype is not None and not getattr(dtype, "is_floating", True)) or \
                (dtype is not None and "float" not in str(getattr(dtype, "name", dtype))):
            what = type(out).__name__ if dtype is None else f"a {getattr(dtype, 'name', dtype)} tensor"
            raise TypeError(f"phase {phase}'s loss returned {what}, which has no gradient; return a float scalar")
        return out

    checked._freezeframe_checked = True  # type: ignore[attr-defined]
    return checked
