"""The Runs tab's variable tree of a run opened for review (`--open`) lists every variable its record's `start`
event names, those no phase trains (a hand-written loop's EMA copy) as "untrained" with no value, as the
attached window's scope tree does.

Why: the tester's run of a start_run loop with an EMA copy of its generator: `--attach` showed `gen_ema`, `--open`
did not (the tree was built from the ‖ΔW‖ columns alone), so the reviewed run read as a model without the copy.
The run is real: the loop trains in a process of its own; the window only reads it.
"""
from __future__ import annotations

import sys

from app.panels.scope_tree import UNTRAINED
from training_core.runs import read_run, unrecorded_paths
from tests.app.test_window_attach_monitor import EMA_LOOP
from tests.core.helpers import REPO, start

def _rows(item) -> dict:
    out = {}
    for i in range(item.childCount()):
        c = item.child(i)
        out[c.text(0)] = c
    return out


def test_a_reviewed_loop_run_lists_its_ema_copy_as_untrained(ui, tmp_path):
    script, run_dir = tmp_path / "ema_loop.py", tmp_path / "ema-run"
    script.write_text(EMA_LOOP.format(repo=str(REPO), marker=str(tmp_path / "imported.txt")))
    proc = start([sys.executable, str(script), str(run_dir), "12"])  # (its EMA copy: generator_ema)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err

    data = read_run(run_dir)
    assert not any(p.startswith("generator_ema/") for p in data.var_paths)  # no phase trains it: no ‖ΔW‖ column
    assert sorted(unrecorded_paths(data)) == ["generator/bn/moving_mean", "generator/bn/moving_variance"] + [
        f"generator_ema/{layer}/{leaf}" for layer in ("h", "out") for leaf in ("bias", "kernel")]  # and statistics

    w = ui.make(fake=True, wait=False, open_runs=[str(run_dir)])
    panel = w.review.panel
    panel.list.setCurrentItem(panel.list.topLevelItem(0))
    panel.refresh()
    tree = panel.variables
    top = {tree.topLevelItem(i).text(0): tree.topLevelItem(i) for i in range(tree.topLevelItemCount())}
    assert sorted(top) == ["generator", "generator_ema"]
    kernel = _rows(_rows(top["generator_ema"])["h"])["kernel"]
    assert (kernel.text(1), kernel.text(2)) == ("", UNTRAINED) and "no phase trains it" in kernel.toolTip(2)
    trained = _rows(_rows(top["generator"])["h"])["kernel"]
    assert trained.text(2) != UNTRAINED and float(trained.text(1)) > 0  # the trained copy keeps its last ‖ΔW‖/‖W‖
    stat = _rows(_rows(top["generator"])["bn"])
    assert stat["moving_mean"].text(2) == UNTRAINED and stat["gamma"].text(2) != UNTRAINED
