"""The one command line of Freezeframe, shared by `python main.py` and the installed `freezeframe` command
(pyproject.toml's console script): opens the window; `--headless` trains on the terminal (no window);
`--export RUN_DIR` renders figures from a run directory, `--export SWEEP_DIR --table FILE` a sweep's table. Both names run this code, so they cannot drift.

Importing this module sets TensorFlow's C++ log level (unless the user chose one) before anything here
imports TensorFlow: set later, it would not silence the start-up chatter. The modes are imported only
when chosen, so that `--headless` never loads Qt and the window's process never loads TensorFlow.
"""
from __future__ import annotations

import os
import sys
from typing import Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch `argv` (the arguments after the program's name; default: this process's) to its mode and
    return the exit code. The `freezeframe` console script calls it with none, `python main.py` too."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--export" in argv and "--headless" in argv:  # each would report the other's options as unknown
        print("error: --export draws figures from a finished record and trains nothing; drop --headless",
              file=sys.stderr)
        return 2
    if "--headless" in argv or "--list-scopes" in argv:
        from training_core.cli.headless import main as headless
        return headless(argv)
    if "--export" in argv and "--table" in argv:  # a sweep's table: no Qt (training_core/cli/table_export.py)
        from training_core.cli.table_export import main as table
        return table(argv)
    if "--export" in argv:
        from app.export_cli import main as export
        return export(argv)
    from app.launch import run_app
    return run_app(argv)


if __name__ == "__main__":  # python -m app.entry
    sys.exit(main())
