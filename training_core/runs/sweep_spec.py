"""A sweep's specification: what every point shares (`[base]`), the axes of its grid (`[grid]`), and the
points they make (every combination, seeds innermost), each with its run's configuration.

Why a module of its own, Qt-free and TensorFlow-free: the launcher (cli/sweep.py) checks a spec and writes
the sweep directory from it, and the window and the table read the points back; a typo in a spec must
answer at once with one line that names the problem and the fix, before TensorFlow loads and before
anything is written.

The axes (in a TOML file's `[grid]`, or `--grid NAME=V1,V2,...` on the command line):

    ratio = ["1:1", "5:1"]                    fixed alternation ratios
    lr = [{D = 1e-4, G = 1e-4}, {D = 4e-4}]   learning-rate tables (each merged over the base's)
    lr.D = [1e-4, 4e-4]                       one phase's learning rate (an axis per phase)
    freeze = ["none", "discriminator", "discriminator@300", "generator/dense_1+generator/out"]
                                              a freeze set (scopes joined by +), or "SCOPES@N": frozen from
                                              step N on (a planned change, base/planned.py); in TOML also a
                                              list of scopes, or {scopes = [...], from = N}
    method = ["exact", "gate"]                the freeze method
    seed = [0, 1, 2]                          seeds (always the innermost axis)
    batch_size = [64, 256], steps = [...]     other settings of the run
"""
from __future__ import annotations

import difflib
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from training_core.base.alternation import parse_ratio
from training_core.base.config import MAX_SEED, RunConfig, check_learning_rate
from training_core.base.errors import UserError

MAX_POINTS = 10_000  # a grid larger than this is a typo (a seed range of 1e5), not a sweep
#: what a sweep varies besides ratio, lr, freeze and method: (config key, what a value must be)
PLAIN_AXES = {"seed": "seed", "batch_size": "batch_size", "steps": "steps"}
#: the base may not name what each point's axis sets, nor what the sweep decides for every point
NOT_IN_BASE = {"run_dir": "each point's run directory is in the sweep directory (--sweep-dir DIR)"}


@dataclass(frozen=True)
class Axis:
    """One axis: its name as written (`ratio`, `lr.D`), its values in the sweep file's form, and each value's
    text (what a directory name, a table row and a legend say)."""

    name: str
    values: tuple[Any, ...]
    texts: tuple[str, ...]


@dataclass(frozen=True)
class Point:
    """One grid point: `index` (0-based, the order points run in), `name` (its run directory's name),
    `values` (axis -> value in the sweep file's form) and `texts` (axis -> text)."""

    index: int
    name: str
    values: dict[str, Any]
    texts: dict[str, str]

    @property
    def seed(self) -> int | None:
        s = self.values.get("seed")
        return s if isinstance(s, int) else None

    def setting(self) -> dict[str, str]:
        """What this point's group is: every axis but the seed (groups.group_runs' `settings`)."""
        return {k: v for k, v in self.texts.items() if k != "seed"}


@dataclass
class SweepSpec:
    base: dict[str, Any] = field(default_factory=dict)  # config keys every point shares
    axes: list[Axis] = field(default_factory=list)

    def points(self) -> list[Point]:
        """Every combination of the axes, in the order written, seeds innermost."""
        axes = sorted(self.axes, key=lambda a: a.name == "seed")  # (sorted is stable)
        width = max(3, len(str(max(0, self.count() - 1))))
        out = []
        for i, combo in enumerate(itertools.product(*[range(len(a.values)) for a in axes])):
            values = {a.name: a.values[j] for a, j in zip(axes, combo)}
            texts = {a.name: a.texts[j] for a, j in zip(axes, combo)}
            out.append(Point(i, f"{i:0{width}d}-{_slug(texts)}", values, texts))
        return out

    def count(self) -> int:
        return math.prod(len(a.values) for a in self.axes)

    def config(self, point: Point) -> RunConfig:
        """The point's run configuration (without its run directory: that is the sweep's to place)."""
        d = dict(self.base)
        for name, value in point.values.items():
            _apply(d, name, value)
        return RunConfig.from_dict(d)

    def to_dict(self) -> dict[str, Any]:
        """The sweep file's form (`sweep.toml`): [base] and [grid], read back by `spec_from_dict`."""
        return {"base": dict(self.base), "grid": {a.name: list(a.values) for a in self.axes}}


# -- reading a spec ---------------------------------------------------------------------------------------
def spec_from_dict(d: Mapping[str, Any], where: str = "the sweep file") -> SweepSpec:
    """A spec from a TOML file's tables (`base`, `grid`); every problem is one `UserError` naming its place."""
    unknown = [k for k in d if k not in ("base", "grid")]
    if unknown:
        raise UserError(f"{where}: unknown table or key {unknown[0]!r}; a sweep file has [base] (what every point "
                        f"shares) and [grid] (the axes)")
    base, grid = d.get("base", {}), d.get("grid", {})
    for name, table in (("base", base), ("grid", grid)):
        if not isinstance(table, Mapping):
            raise UserError(f"{where}: {name} must be a table ([{name}] with keys under it), got {table!r}")
    axes = []
    for name, values in _flatten_grid(grid):
        axes.append(make_axis(name, values, f"{where}: grid.{name}"))
    return check_spec(SweepSpec(dict(base), axes), where)


def _flatten_grid(grid: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """`lr.D = [...]` in TOML is the table lr = {D = [...]}: one axis per phase, named lr.D."""
    out = []
    for name, values in grid.items():
        if name == "lr" and isinstance(values, Mapping):
            out += [(f"lr.{phase}", v) for phase, v in values.items()]
        else:
            out.append((name, values))
    return out


def axis_from_text(item: str) -> Axis:
    """`--grid NAME=V1,V2,...` (`--grid ratio=1:1,5:1`, `--grid lr.D=1e-4,4e-4`, `--grid freeze=none,d@300`)."""
    name, sep, rest = item.partition("=")
    name = name.strip()
    if not sep or not name or not rest.strip():
        raise UserError(f"--grid {item!r} is not NAME=V1,V2,... ; e.g. --grid ratio=1:1,5:1 or --grid seed=0,1")
    texts = [t.strip() for t in rest.split(",")]
    if any(not t for t in texts):
        raise UserError(f"--grid {item!r} has an empty value; separate values by single commas, e.g. seed=0,1")
    parse = _TEXT_VALUES.get(_kind(name), str)
    values = []
    for t in texts:
        try:
            values.append(parse(t))
        except ValueError:
            what = "a whole number" if parse is int else "a number"
            raise UserError(f"--grid {name}: {t!r} is not {what}; e.g. --grid {name}="
                            f"{'0,1' if parse is int else '1e-4,4e-4'}") from None
    return make_axis(name, values, f"--grid {name}")


def check_spec(spec: SweepSpec, where: str) -> SweepSpec:
    """The spec as a whole: a base that is a valid configuration and does not set what an axis sets, no
    axis twice, at least one axis, at most MAX_POINTS points, and every point's configuration valid."""
    names = [a.name for a in spec.axes]
    if not names:
        raise UserError(f"{where}: the grid has no axes; give at least one, e.g. seed = [0, 1] under [grid] "
                        f"(or --grid seed=0,1)")
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice:
        raise UserError(f"{where}: the axis {twice} is given twice; give each axis once, with all its values")
    if "lr" in names and any(n.startswith("lr.") for n in names):
        raise UserError(f"{where}: the axes lr and {next(n for n in names if n.startswith('lr.'))} both set "
                        f"learning rates; use whole tables (lr) or one axis per phase (lr.D), not both")
    for key in spec.base:
        if key in NOT_IN_BASE:
            raise UserError(f"{where}: base.{key}: {NOT_IN_BASE[key]}; drop it from the base")
        owner = next((a for a in names if key in _SETS.get(_kind(a), (a,))), None)
        if owner is not None:
            raise UserError(f"{where}: base.{key} is also set by the axis {owner}; keep one of them")
    try:
        RunConfig.from_dict(spec.base, in_file=True)  # (its errors name the base's keys, not options)
    except UserError as e:
        raise UserError(f"{where}: base: {e}") from None
    n = spec.count()
    if n > MAX_POINTS:
        raise UserError(f"{where}: the grid has {n:,} points, more than {MAX_POINTS:,}; give the axes fewer values "
                        f"(or run several sweeps)")
    for point in spec.points():
        try:
            spec.config(point)
        except UserError as e:  # a value that is fine alone but not with the base (a count without steps)
            raise UserError(f"{where}: the point {point.name}: {e}") from None
    return spec


# -- the axes ---------------------------------------------------------------------------------------------
def _kind(name: str) -> str:
    return "lr." if name.startswith("lr.") else name


#: the config keys each kind of axis sets (the base must leave them to the axis)
_SETS = {"ratio": ("schedule",), "lr": (), "lr.": (), "freeze": ("freeze", "planned"),
         "method": ("freeze_method",), **{k: (v,) for k, v in PLAIN_AXES.items()}}
_TEXT_VALUES: dict[str, Callable[[str], Any]] = {"lr.": float, "seed": int, "batch_size": int, "steps": int}
_SAFE = re.compile(r"[^A-Za-z0-9._=@+-]+")


def make_axis(name: str, values: Any, where: str) -> Axis:
    """An axis from its values as TOML or the command line gives them, each checked (`where` names it)."""
    kind = _kind(name)
    check = _CHECKS.get(kind)
    if check is None:
        known = ["ratio", "lr", "lr.PHASE", "freeze", "method", *PLAIN_AXES]
        close = difflib.get_close_matches(name, known + ["freeze_method", "schedule"], n=1)
        hint = {"freeze_method": "method", "schedule": "ratio"}.get(close[0], close[0]) if close else ""
        raise UserError(f"{where}: unknown axis {name!r}{f' (did you mean {hint}?)' if hint else ''}; axes are "
                        f"{', '.join(known)}")
    if kind == "lr." and not name[3:]:
        raise UserError(f"{where}: lr. needs a phase name, e.g. lr.D")
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise UserError(f"{where} must be a non-empty list of values, e.g. {_EXAMPLES[kind]}")
    canon, texts, seen = [], [], set()
    for i, v in enumerate(values):
        try:
            c, t = check(name, v)
        except UserError as e:
            raise UserError(f"{where}[{i}] = {_show(v)}: {e}") from None
        if t in seen:
            raise UserError(f"{where} lists {t} twice; give each value once")
        seen.add(t)
        canon.append(c)
        texts.append(t)
    return Axis(name, tuple(canon), tuple(texts))


def _show(v: Any) -> str:
    return f'"{v}"' if isinstance(v, str) else repr(v)


def _number(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise UserError(f"{what} must be a number (write it without quotes, e.g. 1e-4)")
    return float(v)


def _whole(v: Any, what: str, low: int, high: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < low or (high is not None and v > high):
        top = f" to {high}" if high is not None else " or more"
        raise UserError(f"{what} must be a whole number from {low}{top}")
    return v


def _ratio(name: str, v: Any) -> tuple[str, str]:
    if not isinstance(v, str):
        raise UserError('a ratio is text A:B, e.g. "5:1"')
    text = ":".join(str(c) for c in parse_ratio(v))
    return text, text


def _lr_table(name: str, v: Any) -> tuple[dict[str, float], str]:
    if not isinstance(v, Mapping) or not v:
        raise UserError("a learning-rate table names phases, e.g. {D = 1e-4, G = 1e-4}")
    table = {str(k): check_learning_rate(_number(x, f"the rate of {k}"), f"the rate of {k}") for k, x in v.items()}
    return table, " ".join(f"{k}={_num_text(x)}" for k, x in table.items())


def _lr_one(name: str, v: Any) -> tuple[float, str]:
    x = check_learning_rate(_number(v, "a learning rate"), "a learning rate")
    return x, _num_text(x)


def _num_text(x: float) -> str:
    return f"{x:g}"


def _freeze(name: str, v: Any) -> tuple[str, str]:
    """Any of the forms, as the text form: "none", "a+b", "a+b@N"."""
    if isinstance(v, Mapping):
        extra = set(v) - {"scopes", "from"}
        if extra or "scopes" not in v:
            raise UserError('a freeze table is {scopes = ["discriminator"], from = 300}'
                            + (f"; {sorted(extra)[0]!r} is not one of its keys" if extra else ""))
        scopes, start = v["scopes"], v.get("from")
        if start is not None:
            _whole(start, "from (the step the scopes are frozen after)", 0)
    elif isinstance(v, list):
        scopes, start = v, None
    elif isinstance(v, str):
        text, at, step = v.strip().partition("@")
        if at and not step.strip().isdigit():
            raise UserError('after @ comes the step to freeze from, a whole number, e.g. "discriminator@300"')
        scopes = [] if text.strip() in ("", "none") else [s.strip() for s in text.split("+")]
        start = int(step) if at else None
    else:
        raise UserError('a freeze set is "none", "scope+scope", "scope@STEP", a list of scopes or '
                        '{scopes = [...], from = STEP}')
    if not isinstance(scopes, list) or not all(isinstance(s, str) and s.strip().strip("/") for s in scopes):
        raise UserError("the scopes must be non-empty names, e.g. discriminator or generator/dense_1")
    scopes = [s.strip().strip("/") for s in scopes]
    if start is not None and not scopes:
        raise UserError(f'"none@{start}" freezes nothing; name the scopes to freeze from step {start}')
    text = "+".join(scopes) or "none"
    if any(c in s for s in scopes for c in "+@,"):
        raise UserError("a scope name cannot hold +, @ or a comma (they separate scopes and the step)")
    text = f"{text}@{start}" if start is not None else text
    return text, text


def parse_freeze(text: str) -> tuple[list[str], int | None]:
    """A freeze value's text form ("a+b@300") as (scopes, the step they are frozen from, or None: static)."""
    scopes, _, step = text.partition("@")
    return ([] if scopes == "none" else scopes.split("+")), (int(step) if step else None)


def _method(name: str, v: Any) -> tuple[str, str]:
    if v not in ("exact", "gate"):
        raise UserError("the method is exact or gate")
    return v, v


def _plain(name: str, v: Any) -> tuple[int, str]:
    low, high = {"seed": (0, MAX_SEED), "batch_size": (1, None), "steps": (1, None)}[name]
    x = _whole(v, {"seed": "a seed", "batch_size": "a batch size", "steps": "the number of steps"}[name], low, high)
    return x, str(x)


_CHECKS: dict[str, Callable[[str, Any], tuple[Any, str]]] = {
    "ratio": _ratio, "lr": _lr_table, "lr.": _lr_one, "freeze": _freeze, "method": _method,
    **{k: _plain for k in PLAIN_AXES}}
_EXAMPLES = {"ratio": '["1:1", "5:1"]', "lr": "[{D = 1e-4}, {D = 4e-4}]", "lr.": "[1e-4, 4e-4]",
             "freeze": '["none", "discriminator@300"]', "method": '["exact", "gate"]', "seed": "[0, 1, 2]",
             "batch_size": "[64, 256]", "steps": "[1000, 5000]"}


def _apply(d: dict[str, Any], name: str, value: Any) -> None:
    """One axis value onto a configuration dict."""
    kind = _kind(name)
    if kind == "ratio":
        d["schedule"] = {"policy": "fixed", "ratio": parse_ratio(value)}
    elif kind == "lr":
        d["lr"] = {**d.get("lr", {}), **value}
    elif kind == "lr.":
        d["lr"] = {**d.get("lr", {}), name[3:]: value}
    elif kind == "freeze":
        scopes, start = parse_freeze(value)
        d["freeze"] = scopes if start is None else []
        if start is not None:
            d["planned"] = [*d.get("planned", []), {"step": start, "kind": "freeze", "scopes": scopes,
                                                    "update_frozen_stats": bool(d.get("update_frozen_stats"))}]
    elif kind == "method":
        d["freeze_method"] = value
    else:
        d[PLAIN_AXES[name]] = value


def _slug(texts: Mapping[str, str]) -> str:
    """A point's run directory name after its index: `ratio=5_1-lr.D=0.0004-freeze=discriminator@300-seed=1`."""
    return _SAFE.sub("_", "-".join(f"{k}={v}" for k, v in texts.items()))[:90].strip("-_")
