"""The one way the core reports a failure in user code (an experiment file, its `build()`, a loss, the
GAN shortcut's models): a one-line `UserError` naming what failed, the exception and the line of the
user's file, with the full traceback kept as `detail` for the window's "Details" button.

One helper, so every entry point words these failures the same way and none of them leaks a
traceback to the terminal. Kept apart from `experiment/loading.py` because the GAN builder needs it too, and
`experiment/loading.py` imports the GAN builder.
"""
from __future__ import annotations

import re
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from training_core.base.errors import UserError, WriteFailed

MAX_MESSAGE = 300  # a Keras shape error can run to pages; the one line keeps its start, detail has it all
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Keras bolds parts of its messages for terminals


def first_line(e: BaseException) -> str:
    """`TypeError: message`, whitespace folded to one line and cut to MAX_MESSAGE characters. A TensorFlow
    op error (a failure inside the compiled step) is reduced to the op's own message (`op_message`)."""
    if _is_op_error(e):
        inner = op_message(str(getattr(e, "message", e)))
        if inner:
            return inner[:MAX_MESSAGE]
    msg = " ".join(_ANSI.sub("", str(e)).split())
    msg = msg.split(" Arguments received by ")[0]  # Keras repeats the call's arguments after its message
    if len(msg) > MAX_MESSAGE:
        msg = msg[:MAX_MESSAGE - 1] + "…"
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def _is_op_error(e: BaseException) -> bool:
    return type(e).__module__.startswith("tensorflow") and hasattr(e, "message") and hasattr(e, "op")


_NODE = re.compile(r"\s*\[\[\{\{node .*", re.S)
_PY_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)\b.*)$", re.M)


def op_message(message: str) -> str:
    """The useful line of a TensorFlow op error. Its message is "Graph execution error:", then the Python
    stack where the failing op was defined (dozens of lines), then the op's own message, then the node
    name; a `tf.py_function` adds the Python traceback of the function. Kept: the last `XxxError: ...`
    line (the Python exception) or else the op's message, on one line."""
    body = _NODE.sub("", _ANSI.sub("", message))
    blocks = [b.strip() for b in body.split("\n\n") if b.strip()]
    blocks = [b for b in blocks if not b.startswith(("Graph execution error", "Detected at node", "File ",
                                                     "Traceback (most recent call last)"))]
    errors = _PY_ERROR.findall("\n".join(blocks))
    text = errors[-1] if errors else (blocks[-1] if blocks else "")
    return " ".join(text.split())


def user_line(e: BaseException, path: Path | None) -> str:
    """` at line N` of the innermost frame in the user's file, or "" when the file is not on the stack."""
    if path is None:
        return ""
    target = Path(path).resolve()
    frames = [f.lineno for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == target]
    if _is_op_error(e):  # the op's definition stack and a py_function's traceback are text in its message
        frames += [int(n) for f, n in re.findall(r'File "([^"]+)", line (\d+)', str(e.message))
                   if Path(f).resolve() == target]
    return f" at line {frames[-1]}" if frames else ""


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


def failure_line(e: BaseException, source: Path | None, phase: str | None, step: int) -> str:
    """A run's failure as one line: a `UserError`'s or `WriteFailed`'s own line; anything else (experiment
    code failing mid-run) with the phase, the step, the line of the experiment file, and the fix."""
    if isinstance(e, (UserError, WriteFailed)):
        return str(e)
    where = f"phase {phase} failed at step {step + 1}" if phase else f"training failed at step {step}"
    return f"{where}: {first_line(e)}{user_line(e, source)}; fix the experiment, then resume the run"
