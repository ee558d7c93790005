"""A sweep's table (training_core/runs/sweep_table.py): settings grouped over seeds, mean ± sd (ddof=1) of each
metric's last value or its value at a step, a seed without a value left out and counted, sorting, CSV and a
booktabs LaTeX table."""
from __future__ import annotations

import csv
import math
from dataclasses import replace

import numpy as np
import pytest

from training_core.runs.groups import smooth, value_at
from training_core.base.errors import UserError
from training_core.figures.spec import default_labels
from training_core.runs.groups import Summary
from training_core.runs.sweep_table import (Member, build_table, cell_text, column_label, label_names, mean_sd_text,
                                           tex_number)

S = np.arange(0, 50, 10)


def _member(key, ratio, seed, d, metric=None, method="exact"):
    curves = {"loss/D": (S, np.asarray(d, dtype=np.float64))}
    if metric is not None:
        curves["metric/modes_covered"] = (S[:len(metric)], np.asarray(metric, dtype=np.float64))
    return Member(key, {"ratio": ratio, "method": method}, seed, curves)


MEMBERS = [_member("a0", "1:1", 0, [4, 3, 2, 1, 0.5], [1, 2, 3, 4, 5]),
           _member("a1", "1:1", 1, [4, 3, 2, 1, 0.7], [1, 2, 3, 4, 7]),
           _member("b0", "5:1", 0, [4, 4, 4, 4, 2e-5], [0, 1]),  # its metric stops at step 10
           _member("b1", "5:1", 1, [4, 4, 4, 4, 4e-5])]  # no metric at all


def test_rows_are_settings_and_cells_are_mean_and_sample_sd_over_seeds():
    t = build_table(MEMBERS, step=20)
    assert t.keys == ("ratio",)  # method is the same everywhere: no column of its own
    assert t.headers == ["ratio", "seeds", "loss/D", "metric/modes_covered", "loss/D @ 20", "metric/modes_covered @ 20"]
    a, b = t.rows
    assert a.members == ("a0", "a1") and a.seeds == (0, 1) and a.setting == (("ratio", "1:1"),)
    assert (a.cells[0].mean, a.cells[0].sd, a.cells[0].n) == (np.mean([0.5, 0.7]), np.std([0.5, 0.7], ddof=1), 2)
    assert (b.cells[1].mean, b.cells[1].n) == (1.0, 1)  # one seed recorded the metric: its value, n = 1
    assert (a.cells[2].mean, b.cells[3].mean) == (2.0, 1.0)  # at step 20: b0's last record before it, at 10


def test_smoothing_smooths_each_seed_before_taking_its_value():
    t = build_table(MEMBERS, ["loss/D"], smoothing=0.6)
    want = [value_at(S, smooth(m.curves["loss/D"][1], 0.6)) for m in MEMBERS[:2]]
    assert t.rows[0].cells[0].mean == np.mean(want)


def test_sorting_by_a_metric_puts_rows_without_a_value_last_both_ways():
    members = MEMBERS + [_member("c0", "3:1", 0, [1, 1, 1, 1, 9], None)]
    t = build_table(members, ["metric/modes_covered", "loss/D"])
    by = t.headers.index("metric/modes_covered")
    assert [r.setting[0][1] for r in t.sorted(by).rows] == ["5:1", "1:1", "3:1"]
    assert [r.setting[0][1] for r in t.sorted(by, descending=True).rows] == ["1:1", "5:1", "3:1"]
    assert [r.setting[0][1] for r in t.sorted(0).rows] == ["1:1", "3:1", "5:1"]  # ratios as numbers first
    assert [r.setting[0][1] for r in t.sorted(t.headers.index("loss/D"), True).rows] == ["3:1", "1:1", "5:1"]


def test_csv_has_mean_sd_and_n_per_column_and_leaves_a_missing_value_empty():
    t = build_table(MEMBERS + [_member("c0", "3:1", 0, [1, 1, 1, 1, 9], None)], ["metric/modes_covered"])
    rows = list(csv.reader(t.to_csv().splitlines()))
    assert rows[0] == ["ratio", "seeds", "metric/modes_covered mean", "metric/modes_covered sd",
                       "metric/modes_covered n"]
    assert rows[1] == ["1:1", "2", repr(6.0), repr(float(np.std([5, 7], ddof=1))), "2"]
    assert rows[3] == ["3:1", "1", "", "", "0"]


def test_latex_is_booktabs_with_escaped_names_and_the_sd_to_the_means_decimal_place():
    t = build_table(MEMBERS)
    lines = t.to_latex().splitlines()
    assert lines[0].startswith("% mean $\\pm$ sd over 2 seeds")
    assert lines[1:5] == ["\\begin{tabular}{lrr}", "\\toprule", "ratio & D loss & modes\\_covered \\\\",
                          "\\midrule"]
    assert lines[5] == "1:1 & $0.600 \\pm 0.141$ & $6.00 \\pm 1.41$ \\\\"
    assert lines[6] == "5:1 & $(3.00 \\pm 1.41)\\times10^{-5}$ & $1.00\\,(n=1)$ \\\\"
    assert lines[7:] == ["\\bottomrule", "\\end{tabular}"]


@pytest.mark.parametrize("x, text", [(0.000123456, "0.000123"), (1.5e-7, "1.50\\times10^{-7}"),
                                     (2.5e12, "2.50\\times10^{12}"), (-3.25, "-3.25"), (math.pi, "3.14"), (6, "6.00"),
                                     (1234, "1.23\\times10^{3}"), (0.0, "0")])  # 0 has no figures: was 0.00
def test_numbers_in_latex(x, text):
    assert tex_number(x) == text


@pytest.mark.parametrize("mean, sd, text", [
    (1.1243, 0.0021, "1.124 \\pm 0.002"),  # the tester's sweep: was 1.12 \\pm 0.002 (two places, then three)
    (1.2, 0.0005, "1.2000 \\pm 0.0005"), (1.28, 0.04, "1.28 \\pm 0.04"), (0.749, 0.022, "0.749 \\pm 0.022"),
    (0.0, 0.0, "0 \\pm 0"), (0.0, 0.5, "0.0 \\pm 0.5"),  # an exact 0 sets no place: were 0.00 \\pm 0.00, 0.00 \\pm 0.50
    (0.0, 0.003, "0.000 \\pm 0.003"), (9.9996, 0.00004, "9.99960 \\pm 0.00004"),
    (3e-5, 1.4e-7, "(3.00 \\pm 0.01)\\times10^{-5}"), (1234.0, 5.0, "(1.234 \\pm 0.005)\\times10^{3}")])
def test_mean_and_sd_share_one_decimal_place(mean, sd, text):
    assert mean_sd_text(mean, sd) == text
    body = text.removeprefix("(").split(")")[0]
    m, d = body.split(" \\pm ")
    assert len(m.partition(".")[2]) == len(d.partition(".")[2])  # the same decimal place, whatever the numbers
    assert float(d) or not sd  # a spread is never shown as 0
    plain = text.replace(" \\pm ", " ± ").replace("\\times10^{-5}", "×10⁻⁵").replace("\\times10^{3}", "×10³")
    assert mean_sd_text(mean, sd, plain=True) == plain  # the window's cell: the same digits, as text


@pytest.mark.parametrize("summary, seeds, window, latex", [
    (Summary(1.2, 0.232, 2), 2, "1.20 ± 0.23", "$1.20 \\pm 0.23$"),  # the window showed 1.2 ± 0.232
    (Summary(1.2134, 0.00308, 3), 3, "1.213 ± 0.003", "$1.213 \\pm 0.003$"),  # and 1.21 ± 0.00308
    (Summary(1.0, 0.0, 1), 2, "1.00 (n=1)", "$1.00\\,(n=1)$"), (Summary(math.nan, math.nan, 0), 2, "–", "--"),
    (Summary(1.5e-7, 0.0, 1), 1, "1.50×10⁻⁷", "$1.50\\times10^{-7}$")])
def test_a_cell_reads_the_same_in_the_window_and_in_latex(summary, seeds, window, latex):
    assert cell_text(summary, seeds, plain=True) == window
    assert cell_text(summary, seeds) == latex


def test_columns_get_readable_titles_and_the_users_names():
    t = build_table(MEMBERS, step=20)
    names = label_names(["modes_covered=Modes", "loss/D=Critic loss"], ["loss/D", "metric/modes_covered"])
    head = replace(t, names=names).to_latex().splitlines()[3]
    assert head == "ratio & Critic loss & Modes & Critic loss @ 20 & Modes @ 20 \\\\"
    assert build_table(MEMBERS).to_latex().splitlines()[3] == "ratio & D loss & modes\\_covered \\\\"
    assert t.headers[2] == "loss/D"  # the CSV and --sort keep the tags
    assert column_label("metric/modes_covered") == default_labels("metric/modes_covered")[1]  # as a figure's axis
    with pytest.raises(UserError, match="no column 'modes' in this table; use one of: loss/D, metric/modes_covered, "
                                        "modes_covered$"):
        label_names(["modes=M"], ["loss/D", "metric/modes_covered"])
    with pytest.raises(UserError, match="is not COLUMN=TEXT"):
        label_names(["loss/D"], ["loss/D"])
