"""The resolved configuration of a run, as written to `config.toml`.

It holds the starting state only; every later change is a command logged in `events.jsonl`. Together
they are enough to run the same training again. Also here, as this module reads TOML and knows the keys: what
a file given to an option for another kind of file is (`wrong_file`, `file_not_dir`), in one wording for
every option that takes a path.
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import math
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import tomli_w

from training_core.base.commands import FREEZE_METHODS, SetLearningRate
from training_core.base.device_names import check_device_name
from training_core.base.errors import UserError
from training_core.base.planned import planned_commands

STRATEGIES = ("single", "mirrored", "multiworker")
#: the largest float32 (numpy.finfo(numpy.float32).max): optimizers hold their learning rate in float32
FLOAT32_MAX = 3.4028234663852886e38


def check_learning_rate(value: Any, what: str) -> float:
    """A learning rate the step can take: a number >= 0 that float32 holds. `what` names it in the error
    (`learning rate for D`, `--lr D`). One check for `--lr`, `config.toml` and a live or remote
    `SetLearningRate`: 1e39 is finite in Python's float64 but infinite in the optimizer's float32, and the
    NaN that followed was blamed on whichever phase stepped next."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    if not ok:
        raise UserError(f"{what} must be a finite number >= 0, got {value!r}")
    if value > FLOAT32_MAX:
        raise UserError(f"{what} is {value:g}, more than float32 holds (at most {FLOAT32_MAX:.3g}; the optimizer "
                        f"keeps its rate in float32, where this is infinite); give a smaller rate, e.g. 1e-3")
    return float(value)


def load_toml(path: str | Path, name: str, missing: str, not_text: str, invalid: str = "fix it") -> dict[str, Any]:
    """A TOML file read, each way it can fail one line: `name` (how the file is named in the line) and what to
    do when it is missing, not text, or not TOML. Shared by the run's config.toml and the sweep files."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise UserError(f"{name} does not exist; {missing}") from None
    except OSError as e:
        raise UserError(f"{name} cannot be read ({e.strerror}); check its permissions") from None
    except UnicodeDecodeError:
        raise UserError(f"{name} is not UTF-8 text; {not_text}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{name} is not valid TOML ({e}); {invalid}") from None


def refuse_no_steps(steps: Any, where: str, fix: str) -> None:
    """`steps = 0` in a file a new run is made from trained no step, wrote an empty run and exited 0,
    as `--steps 0` on the command line did (cli/options.check_steps): refused in one line where such a file is
    read (`--config`, a sweep file's `[base]`; its `[grid]` checks its own values; `validate` refuses a
    negative one). Not in `validate`: `RunConfig(steps=0)` from Python still prepares a run without training
    it. `where` names the key in its file (`config file c.toml: steps`), `fix` says what to write instead."""
    if isinstance(steps, int) and not isinstance(steps, bool) and steps < 1:
        raise UserError(f"{where} = {steps} trains no step; {fix}")


#: what each option that takes a path takes, for the line that says a file was given to the wrong one
TAKES = {"--open": "a run or sweep directory", "--export": "a run or sweep directory", "--attach": "a run directory",
         "--resume": "a run directory", "--replay": "a run directory", "--sweep": "a sweep file",
         "--config": "a run's config.toml", "--experiment": "an experiment file"}


def file_kind(path: str | Path) -> str:
    """What a file is, from its contents: `sweep` (TOML with [base] or [grid]), `config` (TOML of RunConfig's
    keys), `script` (Python that trains with training_core.monitor), `experiment` (other Python), or `other`."""
    p = Path(path)
    try:
        if p.stat().st_size > 1 << 20:
            return "other"
        text = p.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return "other"
    if p.suffix == ".py":
        return "script" if "training_core.monitor" in text and ("start_run" in text or "Monitor(" in text) \
            else "experiment"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "other"
    if any(isinstance(raw.get(t), dict) for t in ("base", "grid")):
        return "sweep"
    keys = {f.name for f in dataclasses.fields(RunConfig)} | {"pause_on_nan"}
    return "config" if raw and set(raw) <= keys else "other"


def wrong_file(path: str | Path, flag: str) -> str | None:
    """One line for a file given to `flag`, which takes something else (TAKES): what the file is and the
    option that takes it. None for a file of no kind known here, which the caller refuses in its own words.
    (A sweep file given to --open said "does not exist"; a config.toml to --attach, "has no events.jsonl".)"""
    p = Path(path)
    kind, wanted = file_kind(p), TAKES.get(flag, "a run directory")
    # a run's own config.toml (its directory began, even if it never recorded a step): the directory is meant
    in_run = "directory" in wanted and (p.name == "config.toml" or (p.parent / "events.jsonl").is_file())
    if kind == "sweep" and flag != "--sweep":
        return f"{p} is a sweep file, not {wanted}; run it with python main.py --headless --sweep {p}"
    if kind == "config" and flag != "--config":
        if in_run:
            return f"{p} is the config.toml of the run in {p.parent}; pass {flag} {p.parent}"
        return f"{p} is a run's configuration, not {wanted}; run it again with python main.py --headless --config {p}"
    if kind == "experiment" and flag != "--experiment":
        return f"{p} is an experiment file, not {wanted}; train it with python main.py --experiment {p}"
    if kind == "script":
        return (f"{p} is a script that trains with training_core.monitor, not {wanted}; run it with python {p} "
                f"(the window can attach to its run)")
    return None


def file_not_dir(path: str | Path, flag: str) -> str:
    """The line for a file given to `flag`, an option that takes a directory (--open, --export, --attach,
    --resume): what the file is and the option that takes it, or the run directory it is in."""
    p = Path(path)
    if (line := wrong_file(p, flag)) is not None:
        return line
    if (p.parent / "events.jsonl").is_file():
        return f"{p} is a file of the run in {p.parent}; pass {flag} {p.parent}"
    wanted = TAKES.get(flag, "a run directory")
    return f"{p} is a file; {flag} takes {wanted}, the folder a run{'' if 'sweep' not in wanted else ' or a sweep'} wrote"


def file_sha256(path: str | Path) -> str:
    """The `experiment_sha256` of a file: how a rerun (or the window's Start) tells the file was edited."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass
class RunConfig:
    #: a built-in example name (`ring`, `digits`, `shapes`, `factorization`) ...
    example: str | None = "ring"
    #: ... or a Python experiment file (takes precedence over `example`)
    experiment_file: str | None = None
    #: sha256 of the experiment file when the run started, so a replay can tell it changed
    experiment_sha256: str | None = None
    steps: int | None = None  # None: until stopped
    #: which phase's steps `steps` counts (GAN papers count generator iterations: `--steps 100 --count G`);
    #: None: every phase's steps together
    count: str | None = None
    seed: int = 0
    batch_size: int | None = None  # None: the experiment's own
    schedule: dict[str, Any] = field(default_factory=dict)  # {} = 1:1:...
    lr: dict[str, float] = field(default_factory=dict)  # phase -> learning rate override
    freeze: list[str] = field(default_factory=list)
    freeze_method: str = "exact"
    update_frozen_stats: bool = False
    #: changes the run sends itself at given steps, `[[planned]]` tables of `step` and a command's fields
    #: (`kind = "freeze"`, `scopes = [...]`): "freeze X from step N" (base/planned.py)
    planned: list[dict[str, Any]] = field(default_factory=list)
    device: str = "auto"  # auto | cpu | gpu:N | mirrored (= strategy mirrored)
    #: single (one device), mirrored (every local GPU, or `replicas` logical CPU devices without GPUs) or
    #: multiworker (the cluster in TF_CONFIG); see engine/distribute.py
    strategy: str = "single"
    replicas: int = 0  # mirrored: how many replicas (0: every GPU, or 2 CPU replicas without a GPU)
    #: multiworker: the chief's commands reach every worker at step counts that are multiples of this
    sync_every: int = 10
    jit: bool = False  # XLA-compile the steps
    run_dir: str | None = None
    #: metrics come to the host every `fetch_every` steps or `fetch_seconds`, whichever is first
    fetch_every: int = 200
    fetch_seconds: float = 0.25
    #: per-variable rows go to disk every `var_every` steps (losses: every step)
    var_every: int = 25
    checkpoint_every: int = 5000  # 0: only at the end
    sample_seconds: float = 2.0  # samples while a window shows them (each also goes to samples/)
    sample_every: float = 10.0  # samples for the record when nobody watches (headless); 0: only at the end
    metrics_seconds: float = 2.0  # the experiment's metrics(ctx) (GAN health), also headless
    tensorboard: bool = True
    #: a NaN or Inf loss: `pause` (the window), `stop` (headless default), `rollback` (to the last good
    #: checkpoint, with the phase's learning rate times `nan_lr_factor`; at most 3 times), `continue`
    on_nan: str = "pause"
    nan_lr_factor: float = 0.5
    #: TensorFlow's op determinism (tf.config.experimental.enable_op_determinism): on the CPU a resumed run
    #: then reproduces the uninterrupted one exactly, and a replay the original. Process-wide once on, and
    #: some ops run slower.
    deterministic: bool = False
    #: TensorFlow's intra-op threads; 0 = its default (all cores). The window asks for one core fewer, so
    #: drawing never competes with the training step for a core. Applies once per process, before TF starts.
    intra_op_threads: int = 0
    #: read commands appended to RUN_DIR/commands.jsonl (rundir/commands_file.py); off: only this process steers
    command_file: bool = True
    #: the run is trained by the user's own code through training_core.monitor ("fit" or "loop"), not by an
    #: experiment file: only that code can continue or replay it (`experiment_file` names the script)
    monitor: str | None = None
    #: the file this configuration was read from (a config.toml, a sweep file), while all its values are that
    #: file's: an error about one names the file and its key (`lr.D`), not a command-line option the user never
    #: gave (`--lr`). Not a field: never written, and lost by `dataclasses.replace`.
    source: ClassVar[str | None] = None

    def refuse_monitored(self, run_dir: str | Path, what: str) -> None:
        """A run the monitor recorded cannot be resumed or replayed from its directory: its steps are the user's
        code's, which `experiment_file` names but Freezeframe cannot run (importing it would run the script). The
        script itself can: the line says how (`resume=True`, `replay=`)."""
        if self.monitor:
            if what == "--replay":  # the script replays its own run, which the monitor can (monitor/control_replay.py)
                call = "start_run(NEW_DIR, ..." if self.monitor == "loop" else "Monitor(NEW_DIR"
                how = f"run the script again with {call}, replay={str(run_dir)!r})"
            else:
                how = ("run it again with start_run(..., resume=True)" if self.monitor == "loop"
                       else "fit() cannot be resumed by the Monitor")
            raise UserError(f"{run_dir} was recorded by training_core.monitor from {self.experiment_file or 'a script'}, "
                            f"whose own code trains it, so {what} cannot run it; {how}")

    def refuse_monitored_script(self) -> None:
        """A monitored run's script is never imported as an experiment: importing it runs the user's training
        (the window's training process once resumed and trained such a run on its own). Said in one line."""
        if self.monitor:
            name = Path(self.experiment_file).name if self.experiment_file else "the script"
            how = ("run your script again with start_run(..., resume=True) to continue" if self.monitor == "loop"
                   else "run your script again for a new run")
            raise UserError(f"{name} is the script of a run training_core.monitor records (monitor = "
                            f"{self.monitor!r}): its own code trains the run, so Freezeframe does not import it; {how}")

    def validate(self, in_file: bool = False) -> "RunConfig":
        """Every value checked; `in_file`: they were read from a file, so a bad one is named by its key there
        (`nan_lr_factor = 2`), not by the option that sets it on the command line (`--nan-lr-factor 2`)."""
        _check_types(self)

        def name(key: str, flag: str) -> str:
            return f"{key} = {getattr(self, key)!r}" if in_file else f"{flag} {getattr(self, key)}"

        if not 0 <= self.seed <= MAX_SEED:
            raise UserError(f"seed must be a whole number from 0 to {MAX_SEED}, got {self.seed}; "
                            f"{'set another seed' if in_file else 'pass another --seed'}")
        if self.example is not None and not self.experiment_file and (
                not self.example or any(c in self.example for c in "/\\.")):
            raise UserError(f"example {self.example!r} is not a built-in example name; use --experiment FILE for a file")
        if self.on_nan not in ON_NAN:
            raise UserError(f"on_nan {self.on_nan!r} is unknown; use one of {', '.join(ON_NAN)}")
        if not (0 < self.nan_lr_factor <= 1):
            raise UserError(f"{name('nan_lr_factor', '--nan-lr-factor')} must be in (0, 1] (the factor a rollback "
                            f"multiplies the learning rate by), e.g. 0.5")
        if not (self.fetch_seconds > 0 and self.sample_seconds >= 0):
            raise UserError(f"fetch_seconds must be > 0 and sample_seconds >= 0, got {self.fetch_seconds} and "
                            f"{self.sample_seconds}")
        if self.steps is not None and self.steps < 0:
            raise UserError(f"steps must be a whole number >= 1 (or left out, to train until stopped), "
                            f"got {self.steps}")
        if self.count is not None and self.steps is None:
            raise UserError(f"count = {self.count!r} says which phase's steps `steps` counts, but steps is not set; "
                            f"set steps = N, or remove count" if in_file else
                            f"--count {self.count} says which phase's steps --steps counts, but no --steps is given; "
                            f"add --steps N, or drop --count")
        if self.freeze_method not in FREEZE_METHODS:
            raise UserError(f"freeze method {self.freeze_method!r} is unknown; use 'exact' or 'gate'")
        for name in ("fetch_every", "var_every"):
            if getattr(self, name) < 1:
                raise UserError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.intra_op_threads < 0:
            raise UserError(f"intra_op_threads must be >= 0 (0 = TensorFlow's default), got {self.intra_op_threads}")
        for name in ("sample_seconds", "sample_every", "metrics_seconds"):
            if not getattr(self, name) >= 0:
                raise UserError(f"{name} must be >= 0 seconds, got {getattr(self, name)}")
        if self.checkpoint_every < 0:
            raise UserError(f"checkpoint_every must be >= 0, got {self.checkpoint_every}")
        for phase, v in self.lr.items():
            check_learning_rate(v, f"lr.{phase}" if in_file else f"learning rate for {phase}")
        for step, command in planned_commands(self.planned):
            if isinstance(command, SetLearningRate):
                check_learning_rate(command.value, f"the learning rate for {command.phase} planned at step {step}")
        check_device_name(self.device)
        if self.strategy not in STRATEGIES:
            raise UserError(f"strategy {self.strategy!r} is unknown; use {', '.join(STRATEGIES)}")
        if self.replicas < 0:
            raise UserError(f"replicas must be a whole number >= 1, got {self.replicas}")
        if self.replicas and self.strategy != "mirrored":
            raise UserError(f"replicas are given with strategy mirrored, got {self.replicas} with {self.strategy}; "
                            + ("set strategy = \"mirrored\" or remove replicas" if in_file else
                               "add --strategy mirrored or drop --replicas"))
        if self.sync_every < 1:
            raise UserError(f"{'sync_every' if in_file else '--sync-every'} must be a whole number of steps >= 1 "
                            f"(commands apply every N steps; 10 when left out), got {self.sync_every}")
        if self.batch_size is not None and self.batch_size < 1:
            raise UserError(f"batch size must be >= 1, got {self.batch_size}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """TOML has no null: unset optional fields are left out."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any], in_file: bool = False) -> "RunConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise UserError(f"unknown configuration key(s) {', '.join(_suggest(k) for k in sorted(unknown))}; "
                            f"fix or remove them")
        d = dict(d)
        if "experiment_file" in d and "example" not in d:
            d["example"] = None
        return cls(**d).validate(in_file)

    @classmethod
    def from_toml_dict(cls, d: dict[str, Any], in_file: bool = False) -> "RunConfig":
        """`from_dict` for a `config.toml`: also reads what older versions wrote (`pause_on_nan`)."""
        d = dict(d)
        if "pause_on_nan" in d and "on_nan" not in d:
            d["on_nan"] = "pause" if d.pop("pause_on_nan") is not False else "continue"
        d.pop("pause_on_nan", None)
        return cls.from_dict(d, in_file)

    def write_toml(self, path: str | Path) -> None:
        Path(path).write_bytes(tomli_w.dumps(self.to_dict()).encode("utf-8"))

    @classmethod
    def read_toml(cls, path: str | Path) -> "RunConfig":
        p = Path(path)
        if p.suffix == ".py" and p.is_file():  # (not TOML: it would read as a parse error at its first line)
            raise UserError(wrong_file(p, "--config") or f"config file {p} is Python, not TOML; pass a config.toml")
        if p.is_dir():
            raise UserError(f"{p} is a directory; pass the config.toml inside it ({p / 'config.toml'}), "
                            f"or --resume {p} to continue that run")
        raw = load_toml(p, f"config file {p}", missing="pass the config.toml of a run directory",
                        not_text="pass the config.toml of a run directory", invalid="fix or replace it")
        if any(isinstance(raw.get(t), dict) for t in ("base", "grid")):  # a sweep file: its tables read as two
            raise UserError(wrong_file(p, "--config") or "")  # unknown keys, which said nothing of what it is
        try:
            cfg = cls.from_toml_dict(raw, in_file=True)
        except UserError as e:
            raise UserError(f"config file {p}: {e}") from None
        cfg.source = f"config file {p}"
        return cfg


#: what the keys are called elsewhere: a Phase's and Keras' learning_rate, the command line's options
_OTHER_NAMES = {"learning_rate": "lr", "learning_rates": "lr", "ratio": "schedule", "adaptive": "schedule",
                "method": "freeze_method", "metrics_every": "metrics_seconds"}


def _suggest(key: str) -> str:
    """`key`, with "(did you mean x?)" when a configuration key (or another name of one) is close to it."""
    names = [f.name for f in dataclasses.fields(RunConfig)] + list(_OTHER_NAMES)
    close = difflib.get_close_matches(str(key), names, n=1)
    return f"{key} (did you mean {_OTHER_NAMES.get(close[0], close[0])}?)" if close else str(key)


MAX_SEED = 2**32 - 1  # numpy's and Python's seeds (keras.utils.set_random_seed seeds both)
ON_NAN = ("pause", "stop", "rollback", "continue")
_WHAT = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", list: "a list",
         dict: "a table", type(None): "left out"}


def _fits(value: Any, hint: Any) -> bool:
    """Whether `value` is of the annotated type: bool is not a number, a whole number is a float, and the
    elements of list[str] and dict[str, float] are checked too."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in typing.get_args(hint))
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    if origin is dict:
        key, item = typing.get_args(hint) or (Any, Any)
        return isinstance(value, dict) and all(_fits(k, key) and _fits(v, item) for k, v in value.items())
    return isinstance(value, hint)


def _describe(hint: Any) -> str:
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    args = [a for a in typing.get_args(hint) if a is not type(None)] if union else [hint]
    base = typing.get_origin(args[0]) or args[0]
    inner = typing.get_args(args[0])
    what = _WHAT.get(base, getattr(base, "__name__", str(base)))
    if base is list and inner:
        what = "a list of strings" if inner[0] is str else "a list of tables" if typing.get_origin(inner[0]) is dict \
            else "a list"
    if base is dict and len(inner) == 2 and inner[1] is float:
        what = "a table of numbers"
    return what


def _check_types(config: RunConfig) -> None:
    hints = typing.get_type_hints(RunConfig)
    for f in dataclasses.fields(RunConfig):
        value = getattr(config, f.name)
        if not _fits(value, hints[f.name]):
            raise UserError(f"{f.name} = {value!r} must be {_describe(hints[f.name])}; fix that value")
