"""User-facing errors.

A `UserError` carries one line that names the problem and the fix. Entry points (the headless CLI,
the window) print or show that line instead of a traceback; anything else is a bug and keeps its
traceback.
"""
from __future__ import annotations


class UserError(Exception):
    """Bad input from the user: an unknown scope, an invalid ratio, a broken experiment file."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(" ".join(message.split()))
        #: optional multi-line detail (for example the experiment file's traceback) for a "details" view
        self.detail = detail

    @property
    def message(self) -> str:
        return str(self)
