"""Scopes: the tree that variable paths (`generator/dense_1/kernel`) form.

A scope is a path prefix on whole components: `generator/dense_1` covers `generator/dense_1/kernel`
but not `generator/dense_10/kernel`. Freezing a scope freezes every variable under it. TF-free, so the
window can show and edit the tree from plain `VarInfo` records.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from training_core.base.errors import UserError


@dataclass(frozen=True)
class VarInfo:
    path: str
    shape: tuple[int, ...]
    dtype: str
    trainable: bool

    def to_dict(self) -> dict:
        return {"path": self.path, "shape": list(self.shape), "dtype": self.dtype, "trainable": self.trainable}

    @classmethod
    def from_dict(cls, d: dict) -> "VarInfo":
        """Inverse of `to_dict`; raises ValueError/TypeError/KeyError on a damaged record."""
        shape = tuple(int(x) for x in d["shape"])
        if not isinstance(d["path"], str) or any(x < 0 for x in shape):
            raise ValueError(f"not a variable: {d!r}")
        return cls(d["path"], shape, str(d.get("dtype", "")), bool(d.get("trainable", True)))

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= int(d)
        return n


@dataclass
class ScopeNode:
    name: str
    path: str  # "" for the root
    children: dict[str, "ScopeNode"] = field(default_factory=dict)
    variables: list[VarInfo] = field(default_factory=list)  # variables directly in this scope

    def walk(self) -> Iterable["ScopeNode"]:
        yield self
        for c in self.children.values():
            yield from c.walk()

    def all_variables(self) -> list[VarInfo]:
        return [v for n in self.walk() for v in n.variables]

    def params(self, trainable: bool | None = None) -> int:
        return sum(v.size for v in self.all_variables() if trainable is None or v.trainable == trainable)


def counted(n: int, noun: str) -> str:
    """`1 phase`, `2 phases`: messages and listings read as written, whatever the count."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def normalize_scope(scope: str) -> str:
    # str(): a non-string scope in a command becomes an unknown scope, which is refused, not a crash
    return "/".join(p for p in str(scope).strip().split("/") if p)


def in_scope(path: str, scope: str) -> bool:
    scope = normalize_scope(scope)
    return path == scope or path.startswith(scope + "/")


def build_scope_tree(variables: Sequence[VarInfo]) -> ScopeNode:
    root = ScopeNode("", "")
    for v in variables:
        node = root
        parts = v.path.split("/")
        for i, part in enumerate(parts[:-1]):
            node = node.children.setdefault(part, ScopeNode(part, "/".join(parts[: i + 1])))
        node.variables.append(v)
    return root


def scope_paths(variables: Sequence[VarInfo]) -> list[str]:
    """Every scope a freeze can name: each variable path and each of its prefixes, in tree order."""
    out: dict[str, None] = {}
    for v in variables:
        parts = v.path.split("/")
        for i in range(1, len(parts) + 1):
            out.setdefault("/".join(parts[:i]))
    return list(out)


#: where a user sees every scope: the CLI's listing; in their own loop, their models' variable paths (a script
#: has no --list-scopes to run)
LIST_SCOPES = "see them all with --list-scopes"
MONITOR_SCOPES = "scopes start with {tops}: prefixes of your models' variable paths, v.path"


def scope_list(scopes: object, what: str) -> list[str]:
    """`freeze=`/`frozen=`/`SetFreeze(scopes=)` as a list: one string is one scope. (`list("discriminator")`
    froze the scopes 'd', 'i', 's', ..., refused as an unknown scope 'd' that nobody wrote.) `what` names
    the argument in the line that refuses anything else."""
    if isinstance(scopes, str):
        return [scopes]
    try:
        out = list(scopes)  # type: ignore[call-overload]
    except TypeError:
        out = None
    if out is None or not all(isinstance(s, str) for s in out):
        raise UserError(f"{what} must be a scope or a list of scopes, e.g. {what}=['discriminator'], got "
                        f"{scopes!r:.60}")
    return out


def unknown_scope_message(scope: str, variables: Sequence[VarInfo], hint: str = LIST_SCOPES) -> str:
    """`unknown scope 'x'; did you mean y? (...)`, or the top-level scopes when nothing is close."""
    close = difflib.get_close_matches(normalize_scope(scope), scope_paths(variables), n=1)
    tops = ", ".join(sorted({v.path.split("/")[0] for v in variables}))
    if "{tops}" in hint:  # (MONITOR_SCOPES: the top-level scopes are said either way)
        hint = hint.format(tops=tops)
        return f"unknown scope {scope!r}; did you mean {close[0]}? ({hint})" if close else \
            f"unknown scope {scope!r}; {hint}"
    if close:
        return f"unknown scope {scope!r}; did you mean {close[0]}? ({hint})"
    return f"unknown scope {scope!r}; scopes start with {tops} ({hint})"


def resolve_scopes(scopes: Iterable[str], variables: Sequence[VarInfo], hint: str = LIST_SCOPES) -> tuple[str, ...]:
    """Normalise scope prefixes and check each covers at least one variable (`hint`: where to see them all)."""
    out = []
    for s in scopes:
        n = normalize_scope(s)
        if not n or not any(in_scope(v.path, n) for v in variables):
            raise UserError(unknown_scope_message(s, variables, hint))
        if n not in out:
            out.append(n)
    return tuple(out)


def frozen_mask(paths: Sequence[str], scopes: Sequence[str]) -> tuple[bool, ...]:
    return tuple(any(in_scope(p, s) for s in scopes) for p in paths)


def format_tree(root: ScopeNode) -> str:
    """The tree as `--list-scopes` prints it: scopes with parameter counts, variables with shapes."""
    lines = [f"{'scope / variable':<48} {'shape':>16} {'params':>10}  kind"]

    def emit(node: ScopeNode, depth: int) -> None:
        for child in node.children.values():
            label = "  " * depth + child.path + "/"
            lines.append(f"{label:<48} {'':>16} {child.params():>10,}")
            emit(child, depth + 1)
        for v in node.variables:
            label = "  " * depth + v.path.split("/")[-1]
            kind = "trainable" if v.trainable else "non-trainable"
            lines.append(f"{label:<48} {str(tuple(v.shape)):>16} {v.size:>10,}  {kind}")

    emit(root, 0)
    total = root.params()
    lines.append(f"{'total':<48} {'':>16} {total:>10,}  ({root.params(True):,} trainable)")
    return "\n".join(lines)


def format_phases(phases: Sequence[tuple[str, Sequence[str], Sequence[str]]], variables: Sequence[VarInfo]) -> str:
    """The `Phases:` section under `--list-scopes`: per phase (name, scopes it trains, the variable paths
    they resolve to) one line with how much it trains, then the total over all phases."""
    size = {v.path: v.size for v in variables}
    width = max(len(name) for name, _, _ in phases)
    lines = ["Phases:"]
    trained: set[str] = set()
    for name, trains, paths in phases:
        trained.update(paths)
        lines.append(f"  {name:<{width}}  trains {', '.join(trains)}: {counted(len(paths), 'variable')}, "
                     f"{sum(size[p] for p in paths):,} parameters")
    lines.append(f"  {counted(len(phases), 'phase')} train{'s' if len(phases) == 1 else ''} {len(trained)} of "
                 f"{counted(len(variables), 'variable')}, "
                 f"{sum(size[p] for p in trained):,} of {sum(size.values()):,} parameters")
    return "\n".join(lines)


#: the names Keras gives a model that was not named: its variables' scopes then say nothing of its role
KERAS_DEFAULT_NAME = re.compile(r"(sequential|functional)(_\d+)?")


def default_name_warnings(models: Mapping[str, object]) -> list[str]:
    """One line for each model left with Keras' default name. Freezing, the tree and the figures name
    variables by path (`sequential_1/dense/kernel`), so an unnamed generator and discriminator read alike;
    the run still trains, hence a warning rather than an error."""
    return [f"model {key!r} is named {name!r} by Keras' default, so its variables read {name}/...; "
            f"name it (e.g. keras.Sequential([...], name={key!r})) to freeze and read it by its role"
            for key, name in ((k, str(getattr(m, "name", ""))) for k, m in models.items())
            if KERAS_DEFAULT_NAME.fullmatch(name) and name != key]


def untrained_nested_warnings(models: Mapping[str, object], trained: Iterable[str]) -> list[str]:
    """One line for each model holding trainable variables outside its own scope that no phase trains.

    Keras names a variable by the model that built it: a model built before it was nested in another (a
    pretrained backbone used as a layer, a sub-model built in a subclassed model's `__init__`) keeps its
    own name, so `classifier`'s backbone reads `backbone/...`, and `trains=["classifier"]` leaves it out.
    The run trains the rest; without this line those variables silently never moved."""
    trained, out = set(trained), []
    for key, m in models.items():
        name = str(getattr(m, "name", key))
        own = [v.path for v in getattr(m, "trainable_variables", [])]
        if not any(p.startswith(name + "/") for p in own):
            continue  # a functional model: none of its variables reads name/... (prepare says so if it matters)
        stray = [p for p in own if p not in trained and not p.startswith(name + "/")]
        if stray:
            tops = sorted({p.split("/")[0] for p in stray})
            out.append(f"model {key!r} has {len(stray)} trainable variable{'s' if len(stray) > 1 else ''} outside "
                       f"its scope {name}/ that no phase trains ({stray[0]}{', ...' if len(stray) > 1 else ''}: a "
                       f"model nested in it keeps its own name); add {', '.join(repr(t) for t in tops)} to the "
                       f"trains of the phase that should train {'them' if len(stray) > 1 else 'it'}")
    return out


def untrained_paths(root: ScopeNode, kept: set[str], stats_kept: bool = True) -> set[str]:
    """The scopes and variables under `root` with none of the `kept` paths (trained ones, statistics) nor, when
    `stats_kept`, a non-trainable variable under them: what a window's scope tree offers no box to tick for (a
    loop's EMA copy), since the run would refuse its freeze."""
    out: set[str] = set()

    def visit(node: ScopeNode) -> bool:  # True: something under `node` is kept
        any_kept = False
        for child in node.children.values():
            any_kept |= visit(child)
        for v in node.variables:
            if v.path in kept or (stats_kept and not v.trainable):
                any_kept = True
            else:
                out.add(v.path)
        if not any_kept and node.path:
            out.add(node.path)
        return any_kept

    visit(root)
    return out
