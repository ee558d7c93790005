"""monitor/terminal_report.py: what a monitored run says on the terminal. Why: whoever runs the script reads
its terminal; a leak must be said there, naming the variable, the step and the size of the move."""
from __future__ import annotations

import io
from types import SimpleNamespace

from training_core.base import events as E
from training_core.monitor.terminal_report import TerminalReport


def test_the_run_directory_each_leak_and_each_refused_command_get_a_line():
    out = io.StringIO()
    report = TerminalReport(out)
    report.on_run_begin(SimpleNamespace(resumed=False, run_dir="runs/gan", step=0))
    report.on_event(E.Leak(step=50, variable="discriminator/dense/kernel", phase="discriminator", at_step=41,
                           update_norm=0.0123456, method="fit"))
    report.on_event(E.Rejected(step=60, message="fit() cannot freeze exactly"))
    report.on_event(E.Freeze(step=70, scopes=["x"]))  # a control change: the window shows it, the terminal not
    assert out.getvalue().splitlines() == [
        "freezeframe: recording to runs/gan from step 0 (watch and steer it: python main.py --attach runs/gan)",
        "freezeframe: leak: discriminator/dense/kernel moved by 0.0123 (||dW||) at step 41 while frozen: fit()'s "
        "compiled train_step still updates it (trainable = False set once fit() has traced the step does not "
        "reach it)",
        "freezeframe: command refused at step 60: fit() cannot freeze exactly"]


def test_quiet_keeps_only_leaks():
    out = io.StringIO()
    report = TerminalReport(out, quiet=True)
    report.on_run_begin(SimpleNamespace(resumed=True, run_dir="r", step=5))
    report.on_event(E.Warning(step=5, message="hm"))
    report.on_event(E.Leak(step=9, variable="g/k", phase="G", at_step=8, update_norm=2.0, method="gate"))
    assert out.getvalue() == "freezeframe: leak: g/k moved by 2 (||dW||) at step 8 while frozen: the gate method " \
                             "leaves it to the optimizer's momentum and decay\n"
