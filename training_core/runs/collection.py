"""Several runs side by side: `RunSet`, the Qt-free collection the window's comparison draws.

Why a model of its own: a researcher compares runs (ratios 1:1, 3:1, 5:1; freezing strategies), so a
window shows more than the run it trains. Each `RunEntry` holds one run's `RunData`, its label (the
directory name until the user types another; the legend and the CSV use it), whether it is shown,
and a colour of its own that it keeps while others come and go. Opened runs are read-only: nothing
here can train them. A run still being written (no `stop` event yet) is followed: `poll()` reads only
the bytes its files gained (`RunFollower`), so a view on a timer keeps it current cheaply.

The window's own run joins as the live entry (`set_live`): its `RunData` is fed by the training
service, not by a follower. How runs are drawn together (align by step or wall time, colour by run or
by phase, which scopes the update plot shows) lives here too, so the window's plots and its export
read the same choices.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from psygnal import Signal

from training_core.base.errors import UserError
from training_core.base.scopes import in_scope
from training_core.rundir.layout import is_run_dir
from training_core.runs.data import RunData
from training_core.runs.follow import RunFollower

LIVE = "live"  # the key of the window's own run
MAX_COLOURS = 8  # colours handed out to runs before they repeat (the paper palette's size)


def unique_labels(dirs: Sequence[str | Path]) -> list[str]:
    """Directory names, with as many parent folders as it takes to tell equal names apart."""
    paths = [Path(d).resolve() for d in dirs]
    depth = [1] * len(paths)
    for _ in range(8):
        labels = ["/".join(p.parts[-k:]) for p, k in zip(paths, depth)]
        dup = {lab for lab in labels if labels.count(lab) > 1}
        if not dup:
            return labels
        depth = [k + 1 if lab in dup and k < len(p.parts) else k for p, k, lab in zip(paths, depth, labels)]
    return [str(p) for p in paths]


@dataclass
class RunEntry:
    key: str  # the resolved run directory, or LIVE
    data: RunData
    label: str
    colour: int  # palette index, kept for as long as the entry is open
    visible: bool = True
    follower: RunFollower | None = field(default=None, repr=False)

    @property
    def live(self) -> bool:
        return self.key == LIVE

    @property
    def growing(self) -> bool:
        """Still being written by someone (no `stop` event read yet)."""
        return self.data.stop is None


class RunSet:
    """The runs a window shows. Signals: `changed` (entries added, removed, relabelled, shown or hidden,
    or a drawing option moved), `grew` (a followed run read new records)."""

    changed = Signal()
    grew = Signal()

    def __init__(self) -> None:
        self.entries: list[RunEntry] = []
        self.align = "step"  # or "time": seconds since each run began
        self.colour_by = "run"  # or "phase": colour by phase (or variable), line style by run
        self.scopes: list[str] = []  # the update plot shows variables under these (all when empty)

    # -- opening and closing -------------------------------------------------------------------------------
    def open(self, run_dir: str | Path) -> RunEntry:
        """Open a run directory (read once now, followed while it grows); an open one is returned as is.
        Raises `UserError` naming the fix for a path that is not a run directory."""
        path = Path(run_dir).expanduser()
        if not path.exists():
            raise UserError(f"run directory {run_dir} does not exist; choose a folder a run wrote")
        if not is_run_dir(path):
            raise UserError(f"{run_dir} is not a run directory (no events.jsonl with scalars.csv or variables/); "
                            "choose a folder a training run wrote")
        key = str(path.resolve())
        for e in self.entries:
            if e.key == key:
                return e
        data = RunData(path)
        follower = RunFollower(path, data)
        follower.poll()
        entry = RunEntry(key, data, self._label_for(path), self._free_colour(), True, follower)
        self.entries.append(entry)
        self.changed.emit()
        return entry

    def set_live(self, data: RunData | None, label: str = LIVE) -> None:
        """The window's own run (None: it has none); it is listed first."""
        live = self.get(LIVE)
        if data is None:
            if live is not None:
                self.entries.remove(live)
                self.changed.emit()
            return
        if live is None:
            self.entries.insert(0, RunEntry(LIVE, data, label, self._free_colour(), True))
        elif live.data is data and live.label == label:
            return
        else:
            live.data, live.label = data, label
        self.changed.emit()

    def remove(self, key: str) -> None:
        self.entries = [e for e in self.entries if e.key != key]
        self.changed.emit()

    # -- editing ---------------------------------------------------------------------------------------
    def get(self, key: str) -> RunEntry | None:
        return next((e for e in self.entries if e.key == key), None)

    def set_label(self, key: str, label: str) -> None:
        e = self.get(key)
        label = label.strip()
        if e is not None and label and label != e.label:
            e.label = label
            self.changed.emit()

    def set_visible(self, key: str, visible: bool) -> None:
        e = self.get(key)
        if e is not None and e.visible != visible:
            e.visible = visible
            self.changed.emit()

    def set_option(self, **options: object) -> None:
        """align="step"|"time", colour_by="run"|"phase", scopes=[...]."""
        checks = {"align": ("step", "time"), "colour_by": ("run", "phase")}
        for name, value in options.items():
            if name in checks and value not in checks[name]:
                raise ValueError(f"{name} must be one of {checks[name]}, got {value!r}")
            if name == "scopes":
                value = [s.strip().strip("/") for s in value if s.strip().strip("/")]
            setattr(self, name, value)
        self.changed.emit()

    # -- reading -----------------------------------------------------------------------------------------
    def visible(self) -> list[RunEntry]:
        """The entries to draw: shown, and with something recorded."""
        return [e for e in self.entries if e.visible and (e.data.phases or e.data.events)]

    def labelled(self) -> list[tuple[str, RunData]]:
        """(label, data) of the visible runs, as the figure export takes them."""
        return [(e.label, e.data) for e in self.visible()]

    def shows(self, path: str, variable: str | None = None) -> bool:
        """Whether the update plot shows series `path` under the scope filter; `variable`: the path of the
        variable it is a series of, when that differs (path@phase: a variable several phases train)."""
        return not self.scopes or any(in_scope(path, s) or (variable is not None and in_scope(variable, s))
                                      for s in self.scopes)

    def poll(self, stopped_too: bool = False) -> bool:
        """Follow the runs still being written; True if any of them gained records. With `stopped_too`,
        also look at the runs that have stopped: a run is resumed in its own directory (`--resume`), so
        a finished run can grow again, from a cut back to its checkpoint (the follower rebuilds it)."""
        grew = False
        for e in self.entries:
            if e.follower is not None and (e.growing or stopped_too):
                grew |= e.follower.poll()
        if grew:
            self.grew.emit()
        return grew

    def _label_for(self, path: Path) -> str:
        taken = {e.label for e in self.entries}
        base = path.resolve().name
        label = base
        for parent in path.resolve().parents:
            if label not in taken:
                break
            label = f"{parent.name}/{label}" if parent.name else label + "'"
        return label

    def _free_colour(self) -> int:
        used = {e.colour for e in self.entries}
        return next((c for c in range(MAX_COLOURS) if c not in used), len(self.entries) % MAX_COLOURS)
