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


class WriteFailed(Exception):
    """Writing the run directory failed mid-run (a full disk, a directory removed, permissions lost).

    Not bad input: the run ends with its record kept up to the last complete batch, and the one line
    names the directory and the cause."""

    def __init__(self, path: object, cause: str) -> None:
        self.path, self.cause = str(path), cause
        super().__init__(f"cannot write to {path} ({cause}); free space or fix the directory, then resume the run "
                         f"from its last checkpoint")

    @property
    def message(self) -> str:
        return str(self)







def describe(e: BaseException) -> str:
    """The cause of a write failure in a few words ("No space left on device")."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    text = " ".join(str(getattr(e, "message", None) or e).split())
    for known in ("No space left on device", "Permission denied", "Read-only file system", "Disk quota exceeded",
                  "No such file or directory"):
        if known in text:
            return known
    return f"{type(e).__name__}: {text[:200]}"

