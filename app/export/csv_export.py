"""The figure's curves as CSV: `step,wall_time,tag,value,smoothed,run`.

Rows and formatting follow the run's scalars.csv (same tags, same `.3f` wall time, `.9g` values) so the
two files can be joined; `smoothed` is training_core.ema_smooth with the figure's weight, i.e. the
bold line in the figure, computed by the very `Curve` objects the figure drew; `run` is the label the
figure's legend gives the run (its directory name unless renamed), so an overlay of several runs
stays one long table. With seeds drawn as bands, a group's rows are its mean (`value` of the measured values,
`smoothed` the line drawn) under the group's name, and two more columns give the band's edges, `low,high`
(empty for curves that are no band).
"""
from __future__ import annotations

import math
from pathlib import Path

from training_core import UserError
from training_core.rundir.outputs import check_output
from training_core.figures import FigureData

CSV_HEADER = "step,wall_time,tag,value,smoothed,run"


def _num(v: float) -> str:
    return f"{v:.9g}" if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))


def _field(text: str) -> str:
    """A CSV field: quoted when it holds a comma, a quote or a line break (a run label may)."""
    if any(ch in text for ch in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_text(data: FigureData) -> str:
    """All curves of all plots, ordered by step (then in figure order), as scalars.csv is."""
    curves = [c for plot in data.plots for c in plot.curves]
    bands = any(c.is_band for c in curves)
    rows: list[tuple[int, int, str]] = []
    for ci, c in enumerate(curves):
        run = _field(c.run)
        edges = zip(c.low.tolist(), c.high.tolist()) if c.is_band else iter(lambda: None, 0)
        for s, w, v, sm, e in zip(c.steps.tolist(), c.wall.tolist(), c.values.tolist(), c.smoothed.tolist(), edges):
            extra = "" if not bands else (",," if e is None else f",{_num(e[0])},{_num(e[1])}")
            rows.append((s, ci, f"{s},{w:.3f},{c.tag},{_num(v)},{_num(sm)},{run}{extra}\n"))
    rows.sort(key=lambda r: (r[0], r[1]))
    return CSV_HEADER + (",low,high" if bands else "") + "\n" + "".join(r[2] for r in rows)


def write_csv(data: FigureData, path: str | Path) -> int:
    """Write the CSV; returns the number of data rows."""
    check_output(path, "the CSV")
    text = csv_text(data)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"could not write {path}: {e.strerror}; check the folder") from None
    return text.count("\n") - 1

