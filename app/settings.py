"""What the window remembers between launches: recent experiment files and runs, the runs folder, its
geometry.

`FREEZEFRAME_SETTINGS=/path/file.ini` points the store at a file of its own, so tests (and anyone
who wants a clean slate) never read or overwrite the user's real settings.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

ENV_VAR = "FREEZEFRAME_SETTINGS"
MAX_RECENT = 8


def open_settings() -> QSettings:
    path = os.environ.get(ENV_VAR)
    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "Freezeframe", "Freezeframe")


class Settings:
    def __init__(self) -> None:
        self._s = open_settings()

    def _list(self, key: str) -> list[str]:
        v = self._s.value(key, [])
        if v is None:
            return []
        if isinstance(v, str):  # an INI file stores a one-item list as a plain string
            v = [v]
        return [str(x) for x in v if x]

    # -- recent experiment files -----------------------------------------------------------------------
    def recent_files(self) -> list[str]:
        """Most recent first; files that no longer exist are left out."""
        return [p for p in self._list("recent/files") if Path(p).is_file()]

    def add_recent(self, path: str | Path) -> list[str]:
        p = str(Path(path).resolve())
        files = [p] + [f for f in self._list("recent/files") if f != p]
        self._s.setValue("recent/files", files[:MAX_RECENT])
        self._s.sync()
        return self.recent_files()

    def remove_recent(self, path: str | Path) -> None:
        p = str(Path(path).resolve())
        self._s.setValue("recent/files", [f for f in self._list("recent/files") if f != p])
        self._s.sync()

    # -- recent runs (opened for review, or trained here) -------------------------------------------------
    def recent_runs(self) -> list[str]:
        """Most recent first; directories that no longer exist are left out."""
        return [p for p in self._list("recent/runs") if Path(p).is_dir()]

    def add_recent_run(self, path: str | Path) -> list[str]:
        p = str(Path(path).resolve())
        runs = [p] + [r for r in self._list("recent/runs") if r != p]
        self._s.setValue("recent/runs", runs[:MAX_RECENT])
        self._s.sync()
        return self.recent_runs()

    # -- where runs go ----------------------------------------------------------------------------------
    def runs_folder(self) -> str:
        """'' means the core's default, `runs/` in the working directory."""
        return str(self._s.value("runs/folder", "") or "")

    def set_runs_folder(self, folder: str) -> None:
        self._s.setValue("runs/folder", folder)
        self._s.sync()

    # -- window --------------------------------------------------------------------------------------------
    def geometry(self, key: str) -> QByteArray | None:
        v = self._s.value(f"window/{key}")
        return v if isinstance(v, QByteArray) and not v.isEmpty() else None

    def set_geometry(self, key: str, value: QByteArray) -> None:
        self._s.setValue(f"window/{key}", value)
        self._s.sync()

    def restore_window(self, window: Any, splitter: Any) -> None:
        """The window's geometry and its splitter's sizes as they were when it last closed."""
        for key, restore in (("geometry", window.restoreGeometry), ("splitter", splitter.restoreState)):
            saved = self.geometry(key)
            if saved is not None:
                restore(saved)

    def save_window(self, window: Any, splitter: Any) -> None:
        self.set_geometry("geometry", window.saveGeometry())
        self.set_geometry("splitter", QByteArray(splitter.saveState()))
