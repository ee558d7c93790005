"""What the three command lines (`--headless`, the window's, `--export`) share: bad arguments and bad
input end the same way, as one line on stderr that names the problem and the fix, and exit code 2.

argparse's own `error()` prints the usage block and exits; here it raises `UserError` instead, so a
typo in an option and, say, an unknown scope found later are reported by the same `run_cli`.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, NoReturn

from training_core.base.errors import UserError

EXIT_BAD_INPUT = 2


class ArgParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one-line `UserError`s ending in a pointer to the help."""

    def __init__(self, *args, help_hint: str = "see --help", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.help_hint = help_hint

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} ({self.help_hint})")


def run_cli(main: Callable[[], int]) -> int:
    """Run a command line's body: a `UserError` becomes `error: <line>` on stderr and exit code 2."""
    try:
        return main()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
