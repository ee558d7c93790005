"""A sweep's table: one row per setting, one column per metric (at the end, or at a chosen step), each
cell mean ± sd over the setting's seeds; sorted by any column; written as CSV or as a LaTeX table (booktabs).

Why here, Qt-free: the window's table (app/sweep_table.py), `main.py --export SWEEP_DIR --table FILE` and
the documentation's table are the same numbers, computed once by `runs/groups.py` (groups, `value_at`,
`summarise`) from each run's own record: the window hands in its `RunData`s, the command line the series
read from the run directories.
"""
from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np

from training_core.base.errors import UserError
from training_core.base.notation import superscript
from training_core.rundir.reading import read_scalars
from training_core.runs.data import RunData
from training_core.runs.groups import Band, Summary, band, group_runs, smooth, summarise, value_at
from training_core.runs.sweep import Sweep

#: a run's curves by tag: (steps, values)
Curves = Mapping[str, tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Member:
    """One run of the table: its setting (axis -> text, the seed left out), its seed and its curves."""

    key: str
    setting: Mapping[str, str]
    seed: int | None
    curves: Curves


@dataclass(frozen=True)
class Column:
    tag: str
    step: int | None = None  # None: each run's last record

    @property
    def header(self) -> str:
        """The column's key (CSV, `--sort`): its tag as recorded, `@ STEP` for a column at a step."""
        return self.tag if self.step is None else f"{self.tag} @ {self.step}"

    def label(self, names: Mapping[str, str]) -> str:
        """The column's title in a LaTeX table: the user's name for its tag, or `column_label`'s."""
        text = names.get(self.tag) or column_label(self.tag)
        return text if self.step is None else f"{text} @ {self.step}"


def column_label(tag: str) -> str:
    """A readable title for a tag: `loss/D` -> "D loss"; a metric as the experiment wrote it, as a figure's
    axis names it ("pca_fd" is no "Pca fd": figures/spec.default_labels, which sits above this room, so the rule
    is written twice and tests/core/test_sweep_table.py holds them equal)."""
    if tag.startswith("loss/"):
        return f"{tag.removeprefix('loss/')} loss"
    return tag.removeprefix("metric/")


def label_names(items: Sequence[str], tags: Sequence[str]) -> dict[str, str]:
    """`--ylabel KEY=TEXT` for a table: KEY is a column's tag (`loss/D`, `metric/modes_covered`) or a metric's
    name (`modes_covered`), as in a figure's `--ylabel`. A key no column answers to is a UserError that lists
    the keys that work."""
    out = {}
    for item in items:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not text.strip():
            raise UserError(f"--ylabel {item!r} is not COLUMN=TEXT, e.g. --ylabel loss/D=\"Critic loss\"")
        tag = key if key in tags else "metric/" + key if "metric/" + key in tags else None
        if tag is None:
            valid = [*tags, *(t.removeprefix("metric/") for t in tags if t.startswith("metric/"))]
            raise UserError(f"--ylabel {key}=...: no column {key!r} in this table; use one of: {', '.join(valid)}")
        out[tag] = text.strip()
    return out


@dataclass(frozen=True)
class Row:
    setting: tuple[tuple[str, str], ...]  # (axis, text) for the table's setting columns
    members: tuple[str, ...]
    seeds: tuple[int | None, ...]
    cells: tuple[Summary, ...]

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.setting) or "all runs"


@dataclass(frozen=True)
class SweepTable:
    keys: tuple[str, ...]  # the setting columns: the axes whose values differ between rows
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    names: Mapping[str, str] = field(default_factory=dict)  # tag -> the user's column title (LaTeX)

    @property
    def headers(self) -> list[str]:
        """The columns' keys: the CSV's, `--sort`'s and the window's sort (tags as recorded)."""
        return [*self.keys, "seeds", *(c.header for c in self.columns)]

    @property
    def titles(self) -> list[str]:
        """The columns' readable titles, one per header: "D loss", a metric as written (`Column.label`, the
        user's names first). The LaTeX table's head and the window's table both read them."""
        return [*self.keys, "seeds", *(c.label(self.names) for c in self.columns)]

    def sorted(self, by: int, descending: bool = False) -> "SweepTable":
        """Rows sorted by header `by` (an index into `headers`): a setting column as text (numbers as numbers),
        `seeds` by count, a metric by its mean; a cell without a value goes last either way."""
        k = len(self.keys)

        def key(r: Row) -> tuple:
            if by < k:
                return _natural(r.setting[by][1])
            return (0, float(len(r.members)), "") if by == k else (0, r.cells[by - k - 1].mean, "")

        missing = [r for r in self.rows if by > k and math.isnan(r.cells[by - k - 1].mean)]
        rows = sorted((r for r in self.rows if r not in missing), key=key, reverse=descending)
        return replace(self, rows=tuple(rows + missing))

    def to_csv(self) -> str:
        """One line per setting: its setting, the number of seeds, then mean, sd and n for each column."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow([*self.keys, "seeds", *(f"{c.header} {x}" for c in self.columns for x in ("mean", "sd", "n"))])
        for r in self.rows:
            cells = [x for s in r.cells for x in (_csv_number(s.mean), _csv_number(s.sd), s.n)]
            w.writerow([*(v for _, v in r.setting), len(r.members), *cells])
        return out.getvalue()

    def to_latex(self, digits: int = 3) -> str:
        """A booktabs table (\\toprule, \\midrule, \\bottomrule; `\\usepackage{booktabs}`): the setting columns,
        then each metric as $mean \\pm sd$ over the seeds ($n$ in the header when it is the same for every
        row; a cell of fewer seeds says so)."""
        n_all = {len(r.members) for r in self.rows}
        spec = "l" * max(1, len(self.keys)) + "r" * len(self.columns)
        head = [_tex(k) for k in self.keys] or ["setting"]
        head += [_tex(t) for t in self.titles[len(self.keys) + 1:]]
        lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", " & ".join(head) + " \\\\", "\\midrule"]
        for r in self.rows:
            cells = [_tex(v) for _, v in r.setting] or ["all runs"]
            cells += [cell_text(s, len(r.members), digits) for s in r.cells]
            lines.append(" & ".join(cells) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}"]
        seeds = f"{n_all.pop()} seeds" if len(n_all) == 1 else "seeds"
        return f"% mean $\\pm$ sd over {seeds}; made by Freezeframe (main.py --export SWEEP_DIR --table)\n" + \
            "\n".join(lines) + "\n"


def build_table(members: Sequence[Member], tags: Sequence[str] | None = None, step: int | None = None,
                smoothing: float = 0.0) -> SweepTable:
    """The table of `members` grouped by setting (groups.group_runs). `tags`: the metrics (default: every
    `loss/*`, then every `metric/*` a run recorded); each at the end and, with `step`, at that step too.
    `smoothing`: TensorBoard's EMA weight applied to each seed's curve first (0: the recorded values)."""
    if tags is None:
        seen = list(dict.fromkeys(t for m in members for t in m.curves))
        tags = [t for t in seen if t.startswith("loss/")] + [t for t in seen if t.startswith("metric/")]
    columns = [Column(t) for t in tags] + ([Column(t, step) for t in tags] if step is not None else [])
    by_key = {m.key: m for m in members}
    groups = group_runs({m.key: {"seed": m.seed} for m in members}, {m.key: m.setting for m in members})
    varying = {k for k, _ in groups[0].differs} if groups else set()
    keys = tuple(dict.fromkeys(k for m in members for k in m.setting if k in varying))  # in the axes' order
    rows = []
    for g in groups:
        first = by_key[g.members[0]]
        cells = []
        for c in columns:
            values = []
            for key in g.members:
                curve = by_key[key].curves.get(c.tag)
                values.append(value_at(curve[0], smooth(curve[1], smoothing), c.step) if curve is not None
                              and len(curve[0]) else math.nan)
            cells.append(summarise(values))
        rows.append(Row(tuple((k, first.setting.get(k, "-")) for k in keys), g.members, g.seeds, tuple(cells)))
    return SweepTable(keys, tuple(columns), tuple(rows))


def read_members(sweep: Sweep) -> list[Member]:
    """Each point that has a record, with its losses and metrics read from its run directory (the points
    not begun are left out; one still training or cut counts with what it recorded so far)."""
    out = []
    for point in sweep.points:
        d = sweep.run_dir(point)
        if not d.is_dir():
            continue
        curves = {t: (s.steps, s.values) for t, s in read_scalars(d).items() if t.startswith(("loss/", "metric/"))}
        if curves:
            out.append(Member(point.name, point.setting(), point.seed, curves))
    return out


def members_of(sweep: Sweep, data: Mapping[int, RunData]) -> list[Member]:
    """The points whose runs are in memory (point index -> `RunData`, as the window holds them), as members."""
    out = []
    for point in sweep.points:
        d = data.get(point.index)
        if d is None:
            continue
        curves = {t: _steps_values(d.scalar(t)) for t in d.scalar_tags if t.startswith(("loss/", "metric/"))}
        if curves:
            out.append(Member(point.name, point.setting(), point.seed, curves))
    return out


def _steps_values(series: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return series[0], series[2]


@dataclass(frozen=True)
class GroupBand:
    """One setting's curve of one tag: its label (the setting's differing axes), the seeds' band and its runs."""

    label: str
    band: Band
    members: tuple[str, ...]


def group_bands(members: Sequence[Member], tag: str, spread: str = "minmax", smoothing: float = 0.0) -> list[GroupBand]:
    """Per setting, the band of `tag` over its seeds (groups.band: each seed smoothed first, then combined on the
    steps every seed recorded): what the window's sweep plot draws, grouped as the table's rows are."""
    table = build_table(members, [tag])
    by_key = {m.key: m for m in members}
    out = []
    for row in table.rows:
        curves = [by_key[k].curves[tag] for k in row.members if tag in by_key[k].curves]
        out.append(GroupBand(row.label, band(curves, spread, smoothing), row.members))
    return out


def _natural(text: str) -> tuple:
    """Text with its numbers compared as numbers ("5:1" after "1:1", 4e-4 after 1e-4)."""
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def _csv_number(x: float) -> str:
    return "" if math.isnan(x) else repr(float(x))


_TEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}


def _tex(text: str) -> str:
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in str(text))


def tex_number(x: float, digits: int = 3, plain: bool = False) -> str:
    """`digits` significant figures, trailing zeros kept (0.600, 6.00: every cell shows the same precision), in
    math mode's notation: 1.20\\times10^{-5} for 1.2e-05 (`plain`: 1.20×10⁻⁵, for the window). An exact 0 has no
    significant figures to show: 0."""
    if x == 0:
        return "0"
    text = f"{x:#.{digits}g}"
    m = re.fullmatch(r"(-?[0-9.]+)e([+-])0*([0-9]+)", text)
    if m:
        mant, sign, exp = m.groups()
        return f"{mant.rstrip('.')}{_power(int(exp) * (-1 if sign == '-' else 1), plain)}"
    return text.rstrip(".")


def _power(exp: int, plain: bool) -> str:
    return f"×10{superscript(exp)}" if plain else f"\\times10^{{{exp}}}"


def cell_text(s: Summary, seeds: int, digits: int = 3, plain: bool = False) -> str:
    """One cell: mean ± sd over the seeds (`mean_sd_text`), the mean alone for one seed, "(n=K)" when fewer of
    the `seeds` recorded it. LaTeX's cell is in math mode (`$...$`); `plain`: the window's text, the same digits
    (one rule: the window's table reads as the exported one)."""
    if s.n == 0:
        return "–" if plain else "--"
    fewer = "" if s.n >= seeds else f" (n={s.n})" if plain else f"\\,(n={s.n})"
    if s.n == 1 or not math.isfinite(s.sd):
        text = tex_number(s.mean, digits, plain)
    else:
        text = mean_sd_text(s.mean, s.sd, digits, plain)
    return text + fewer if plain else f"${text}{fewer}$"


def _exponent(x: float) -> int:
    """The power of ten of `x`'s first significant digit (0 for 0)."""
    return math.floor(math.log10(abs(x))) if x else 0


def mean_sd_text(mean: float, sd: float, digits: int = 3, plain: bool = False) -> str:
    """`mean \\pm sd`, both to one decimal place: the mean's `digits`-th significant figure, or the sd's first
    significant figure where that is finer (1.120 ± 0.002, not 1.12 ± 0.002, nor a spread rounded to 0.00).
    Where the mean needs an exponent (as `tex_number` writes it), both share it: (3.00 ± 0.14)\\times10^{-5}.
    An exact 0 has no significant figure to set the place: a mean of 0 takes the sd's first (0.0 ± 0.5), and
    0 ± 0 is written so (it was 0.00 ± 0.00, two places no figure of the cell asked for). `plain`: the same
    digits as text (`1.20 ± 0.23`, `(3.00 ± 0.14)×10⁻⁵`), as the window's table shows them."""
    pm = " ± " if plain else " \\pm "
    if not (math.isfinite(mean) and math.isfinite(sd)) or (mean == 0 and sd == 0):
        return f"{tex_number(mean, digits, plain)}{pm}{tex_number(sd, digits, plain)}"
    rounded = float(f"{mean:.{digits - 1}e}")  # the mean as shown: its exponent after rounding (9.996 -> 10.0)
    place = _exponent(rounded) - (digits - 1)
    if sd and (mean == 0 or round(sd, -place) == 0):
        place = _exponent(float(f"{sd:.0e}"))
    shared = 0 if "times" not in tex_number(mean, digits) else _exponent(rounded)
    places = max(0, shared - place)
    m, d = f"{mean / 10 ** shared:.{places}f}", f"{sd / 10 ** shared:.{places}f}"
    if shared:
        return f"({m}{pm}{d}){_power(shared, plain)}"
    return f"{m}{pm}{d}"
