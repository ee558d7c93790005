"""Where an export may write: never over a run's own record.

Why: figures, CSV and screenshots are often saved next to the run they show, and a file chooser or a
`--csv runs/x/scalars.csv` typo would otherwise replace `scalars.csv` or `events.jsonl` with a figure,
and the run could no longer be read, resumed or exported again. So every writer checks its path first:
inside a run directory (a folder `is_run_dir` recognises, at any depth above the path), the names the
run itself writes, and everything under its subfolders, are refused; any other name there is fine
(`runs/x/figure.pdf`). A path that is a folder is refused too, with its own line.
"""
from __future__ import annotations

from pathlib import Path

from training_core.base.errors import UserError
from training_core.rundir.layout import RECORD_NAMES, is_run_dir


def record_owner(path: str | Path) -> Path | None:
    """The run directory whose record `path` is part of, or None."""
    p = Path(path).expanduser().resolve()
    for parent in p.parents:
        if is_run_dir(parent):
            return parent if p.relative_to(parent).parts[0] in RECORD_NAMES else None
    return None


def check_output(path: str | Path, what: str = "the output") -> None:
    """Raise `UserError` (one line, with the fix) if writing `path` would destroy a run's record or
    cannot be a file."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise UserError(f"{path} is a folder; give {what} a file name, e.g. {Path(path) / 'figure.pdf'}")
    owner = record_owner(p)
    if owner is not None:
        raise UserError(f"{path} is part of the run record in {owner}; writing {what} there would destroy "
                        f"the run: choose another name, e.g. {owner / 'figure.pdf'}")
    if not p.resolve().parent.is_dir():
        raise UserError(f"the folder of {path} does not exist; create it or choose another path for {what}")

