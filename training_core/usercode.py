"""The one way the core reports a failure in user code (an experiment file, its `build()`, a loss, the
GAN shortcut's models): a one-line `UserError` naming what failed, the exception and the line of the
user's file, with the full traceback kept as `detail` for the window's "Details" button.

One helper, so every entry point words these failures the same way and none of them leaks a
traceback to the terminal. Kept apart from `loading.py` because the GAN builder needs it too, and
`loading.py` imports the GAN builder.
"""
from __future__ import annotations

import re
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import UserError

MAX_MESSAGE = 300  # a Keras shape error can run to pages; the one line keeps its start, detail has it all
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Keras bolds parts of its messages for terminals


def first_line(e: BaseException) -> str:
    """`TypeError: message`, whitespace folded to one line and cut to MAX_MESSAGE characters."""
    msg = " ".join(_ANSI.sub("", str(e)).split())
    if len(msg) > MAX_MESSAGE:
        msg = msg[:MAX_MESSAGE - 1] + "…"
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def user_line(e: BaseException, path: Path | None) -> str:
    """` at line N` of the innermost frame in the user's file, or "" when the file is not on the stack."""
    if path is None:
        return ""
    target = Path(path).resolve()
    frames = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == target]
    return f" at line {frames[-1].lineno}" if frames else ""


@contextmanager
def user_code(what: str, path: str | Path | None, *, verb: str = "raised",
              fix: str = "fix the file") -> Iterator[None]:
    """Run user code; any exception becomes `UserError("<what> <verb> <Type: msg> at line N; <fix>")`.

    A `UserError` raised inside (a check of our own) passes through unchanged; so does Ctrl-C.
    """
    try:
        yield
    except (UserError, KeyboardInterrupt):
        raise
    except BaseException as e:  # noqa: BLE001 - any failure of user code is the user's to fix
        where = user_line(e, None if path is None else Path(path))
        raise UserError(f"{what} {verb} {first_line(e)}{where}; {fix}", detail=traceback.format_exc()) from None
