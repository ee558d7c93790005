"""The resolved configuration of a run, as written to `config.toml`.

It holds the starting state only; every later change is a command logged in `events.jsonl`. Together
they are enough to run the same training again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from .commands import FREEZE_METHODS
from .errors import UserError


def file_sha256(path: str | Path) -> str:
    """The `experiment_sha256` of a file: how a rerun (or the window's Start) tells the file was edited."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass
class RunConfig:
    #: a built-in example name (`ring`, `digits`, `factorization`) ...
    example: str | None = "ring"
    #: ... or a Python experiment file (takes precedence over `example`)
    experiment_file: str | None = None
    #: sha256 of the experiment file when the run started, so a replay can tell it changed
    experiment_sha256: str | None = None
    steps: int | None = None  # None: until stopped
    seed: int = 0
    batch_size: int | None = None  # None: the experiment's own
    schedule: dict[str, Any] = field(default_factory=dict)  # {} = 1:1:...
    lr: dict[str, float] = field(default_factory=dict)  # phase -> learning rate override
    freeze: list[str] = field(default_factory=list)
    freeze_method: str = "exact"
    update_frozen_stats: bool = False
    device: str = "auto"  # auto | cpu | gpu:N
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
    pause_on_nan: bool = True
    #: TensorFlow's intra-op threads; 0 = its default (all cores). The window asks for one core fewer, so
    #: drawing never competes with the training step for a core. Applies once per process, before TF starts.
    intra_op_threads: int = 0

    def validate(self) -> "RunConfig":
        if self.steps is not None and self.steps < 0:
            raise UserError(f"--steps must be >= 0, got {self.steps}")
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
            if not (isinstance(v, (int, float)) and v >= 0):
                raise UserError(f"learning rate for {phase} must be a number >= 0, got {v!r}")
        if self.batch_size is not None and self.batch_size < 1:
            raise UserError(f"batch size must be >= 1, got {self.batch_size}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """TOML has no null: unset optional fields are left out."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise UserError(f"unknown configuration key(s) {', '.join(sorted(unknown))}")
        d = dict(d)
        if "experiment_file" in d and "example" not in d:
            d["example"] = None
        return cls(**d).validate()

    def write_toml(self, path: str | Path) -> None:
        Path(path).write_bytes(tomli_w.dumps(self.to_dict()).encode("utf-8"))

    @classmethod
    def read_toml(cls, path: str | Path) -> "RunConfig":
        try:
            with open(path, "rb") as f:
                return cls.from_dict(tomllib.load(f))
        except FileNotFoundError:
            raise UserError(f"config file {path} does not exist; pass the config.toml of a run directory") from None
        except tomllib.TOMLDecodeError as e:
            raise UserError(f"config file {path} is not valid TOML ({e})") from None
