"""Runs as documents, without Qt: the run set a window compares (open, label, show, follow a growing run),
figure data of several runs, what reads "frozen" and what reads "no update", line looks distinct for
24+ variables, and TensorFlow's Grappler noise kept off the terminal."""
from __future__ import annotations

import signal
import subprocess
import sys

import numpy as np
import pytest

from tests import zygote
from training_core import MetricsBatch, PhaseBlock, RunConfig, SetFreeze, UserError
from training_core.base import events
from training_core.figures import DASHES, NO_UPDATE_NOTE, FigureData, FigureSpec, variable_styles
from training_core.runs import (LIVE, RunData, RunSet, VariableStates, frozen_spans, read_run, spans_text,
                                unique_labels)
from training_core.base.scopes import VarInfo, build_scope_tree

from .helpers import REPO, Script, config, run, wait_for, write_file

# idle/w has no gradient on purpose (a variable that trains but cannot move): Keras says so once
pytestmark = pytest.mark.filterwarnings("ignore:Gradients do not exist for variables")

IDLE = '''
"""One phase, five variables: m/a frozen by the test, m/b training, idle/w never in the loss (its gradient is
None, so its update is exactly 0 although nothing froze it)."""
import keras
import numpy as np
from training_core import Experiment, Phase


class Scalar(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = self.add_weight(shape=(2,), initializer="ones", name="w")

    def call(self, x=None):
        return self.w


def loss(ctx):
    return keras.ops.mean(keras.ops.square(ctx.models.m(ctx.data) - 1.0))


def build():
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, name="a"), keras.layers.Dense(1, name="b")],
                         name="m")
    return Experiment(name="idle", models={"m": m, "idle": Scalar(name="idle")},
                      data=np.random.default_rng(0).normal(size=(16, 3)).astype("float32"), batch_size=None,
                      phases=[Phase("P", loss, trains=["m", "idle"])])
'''


@pytest.fixture(scope="module")
def idle_run(tmp_path_factory):
    """m/a frozen from step 10 to 20, m/b training, idle/w never moving: a real run."""
    d = tmp_path_factory.mktemp("idle")
    exp = write_file(d, "idle.py", IDLE)
    run(config(exp, d / "run", steps=30), Script({10: [SetFreeze(("m/a",))], 20: [SetFreeze(())]}))
    return d / "run"


def test_frozen_reads_frozen_and_an_unfrozen_zero_reads_no_update(idle_run):
    data = read_run(idle_run)
    s, _, v = data.var_series("idle/w")
    assert len(v) == 30 and np.all(v == 0) and not data.frozen_series("idle/w").any()
    f = data.frozen_series("m/a/kernel")
    assert f[10:20].all() and not f[:10].any() and not f[20:].any()
    _, _, va = data.var_series("m/a/kernel")
    assert np.all(va[f] == 0) and np.all(va[~f] > 0)
    assert frozen_spans(data, "m/a/kernel") == [(11, 20)] and spans_text([(11, 20), (25, 25)]) == "11–20, 25"
    tree = build_scope_tree([VarInfo(p, (), "float32", True) for p in data.var_paths])
    states = VariableStates(tree)
    states.update(data)
    assert states.states["idle/w"].state == "no update" and "not frozen" in states.states["idle/w"].tip
    assert states.states["m/a/kernel"].state == "" and states.states["idle"].state == ""  # no update is not frozen
    figure = FigureData.from_store(data, FigureSpec(plots=["updates"]))
    notes = [e.label for e in figure.plots[0].legend if e.colour is None]
    assert NO_UPDATE_NOTE in notes and "frozen (ΔW = 0)" in [e.label for e in figure.plots[0].legend]


def _batch(phase: str, steps, paths, frozen=None, loss=None) -> MetricsBatch:
    steps = np.asarray(steps, dtype=np.int64)
    n, v = len(steps), len(paths)
    frozen = np.zeros((n, v), bool) if frozen is None else np.asarray(frozen, bool)
    ratio = np.where(frozen, 0.0, 1e-3)
    loss = np.linspace(2, 1, n) if loss is None else loss
    return MetricsBatch([PhaseBlock(phase, tuple(paths), steps, 1e9 + steps * 0.5, loss, ratio * 10, ratio,
                                    ratio, frozen, np.ones(n, bool))],
                        scalars={"metric/q": (steps[-1:], 1e9 + steps[-1:] * 0.5, np.array([0.5]))})


def _store(name: str, steps: int = 20) -> RunData:
    store = RunData()
    store.add_event(events.Start(time=1e9, phases=["D", "G"]))
    store.add_batch(_batch("D", np.arange(1, steps + 1), ("d/l/kernel", "d/l/bias")))
    store.add_batch(_batch("G", np.arange(1, steps + 1), ("g/l/kernel",)))
    store.add_event(events.LearningRate(step=5, time=1e9 + 2.5, phase="D", value=1e-4))
    return store


def test_figure_of_several_runs_names_each_and_swaps_colour_and_style():
    runs = [("1:1", _store("a")), ("5:1", _store("b", 40))]
    data = FigureData.from_runs(runs, FigureSpec(plots=["losses", "updates", "metrics"]))
    losses, updates, q = data.plots
    assert [(c.tag, c.run, c.colour, c.dash) for c in losses.curves] == [
        ("loss/D", "1:1", 0, 0), ("loss/G", "1:1", 0, 1), ("loss/D", "5:1", 1, 0), ("loss/G", "5:1", 1, 1)]
    # the runs named once for the figure; each panel's legend holds what only it draws
    assert [(e.label, e.colour) for e in data.run_legend] == [("1:1", 0), ("5:1", 1)]
    assert [(e.label, e.colour) for e in losses.legend] == [("D", "fg"), ("G", "fg")]
    assert {c.run for c in updates.curves} == {"1:1", "5:1"} and q.name == "metric/q"
    # both runs changed D's learning rate at step 5: one line, one plain label
    assert [m[2] for m in data.markers] == ["lr D=0.0001"] and data.last_step == 40
    swapped = FigureData.from_runs(runs, FigureSpec(plots=["losses"], colour_by="phase")).plots[0]
    assert [(c.colour, c.dash) for c in swapped.curves] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert [(e.label, e.colour, e.dash) for e in swapped.legend] == [("D", 0, None), ("G", 1, None)]
    assert [(e.label, e.colour, e.dash) for e in FigureData.from_runs(runs, FigureSpec(
        plots=["losses"], colour_by="phase")).run_legend] == [("1:1", "fg", DASHES[0]), ("5:1", "fg", DASHES[1])]
    timed = FigureData.from_runs(runs, FigureSpec(plots=["losses"], x_axis="time"))
    assert timed.x_unit == "s" and timed.plots[0].curves[0].x[0] == pytest.approx(0.5)
    assert timed.markers[0][0] == pytest.approx(2.5)  # the lr change 2.5 s after the start
    one = FigureData.from_runs(runs, FigureSpec(plots=["updates"], variables=["d/l/kernel"])).plots[0]
    assert {c.tag for c in one.curves} == {"update_ratio/d/l/kernel"} and one.legend[0].label == "d/l/kernel"


@pytest.mark.parametrize("layout", ["24 one-variable layers", "12 layers x 2", "8 layers x 3", "6 layers x 4"])
def test_24_variables_never_share_a_look(layout):
    n, leaves = {"24 one-variable layers": (24, ["w"]), "12 layers x 2": (12, ["kernel", "bias"]),
                 "8 layers x 3": (8, ["kernel", "bias", "gamma"]),
                 "6 layers x 4": (6, ["kernel", "bias", "gamma", "beta"])}[layout]
    paths = [f"net/layer_{i}/{leaf}" for i in range(n) for leaf in leaves]
    assert len(paths) == 24
    for n_colours in (8, 12):  # the paper palette, the window's
        looks = variable_styles(paths, n_colours, len(DASHES))
        assert len(set(looks.values())) == 24, (n_colours, looks)


def test_run_set_opens_labels_shows_and_follows_a_growing_run(tmp_path, idle_run):
    runs = RunSet()
    changes = []
    runs.changed.connect(lambda: changes.append(1))
    a = runs.open(idle_run)
    assert a.label == "run" and a.visible and not a.growing and runs.open(idle_run) is a  # opened once
    with pytest.raises(UserError, match="not a run directory"):
        runs.open(tmp_path)
    with pytest.raises(UserError, match="does not exist"):
        runs.open(tmp_path / "nope")
    runs.set_label(a.key, "frozen 10-20")
    runs.set_visible(a.key, False)
    assert runs.labelled() == [] and len(changes) == 3
    runs.set_visible(a.key, True)
    assert runs.labelled()[0][0] == "frozen 10-20"
    live = RunData()
    runs.set_live(live, "live")
    assert runs.entries[0].key == LIVE and runs.entries[0].colour != a.colour
    assert runs.visible() == [a]  # the live run shows once it has something
    live.add_batch(_batch("D", [1, 2], ("d/k",)))
    assert [e.key for e in runs.visible()] == [LIVE, a.key]
    runs.set_option(align="time", colour_by="phase", scopes=["m/a/", " "])
    assert runs.scopes == ["m/a"] and runs.shows("m/a/kernel") and not runs.shows("m/b/kernel")
    with pytest.raises(ValueError):
        runs.set_option(align="epoch")
    assert unique_labels(["/x/a/run", "/x/b/run", "/x/c"]) == ["a/run", "b/run", "c"]

    # a run still being written: the record grows, and a poll reads only what it gained
    grow = tmp_path / "grow"
    proc = zygote.Popen([sys.executable, "main.py", "--headless", "--example", "factorization", "--run-dir",
                         str(grow), "--quiet", "--fetch-every", "10"], cwd=REPO, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: (grow / "events.jsonl").is_file() and (grow / "scalars.csv").is_file(), timeout=120)
        g = runs.open(grow)
        first = g.data.last_step
        assert g.growing
        assert wait_for(lambda: runs.poll() and g.data.last_step > first + 50, timeout=120)
    finally:
        proc.send_signal(signal.SIGINT)  # stops cleanly: the record ends with its stop event
        proc.wait(timeout=60)
    assert wait_for(lambda: (runs.poll() or True) and not g.growing, timeout=30)  # the stop event was read

    # a stopped run resumed in its own directory grows again: looked at with stopped_too, rebuilt from the cut
    stopped_at, generation = g.data.last_step, g.data.generation
    target = stopped_at + 60
    subprocess.run([sys.executable, "main.py", "--headless", "--resume", str(grow), "--steps", str(target),
                    "--quiet", "--fetch-every", "10"], cwd=REPO, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=300)
    assert not runs.poll() and g.data.last_step == stopped_at  # a plain poll leaves stopped runs alone
    assert runs.poll(stopped_too=True)
    assert g.data.generation != generation and g.data.last_step == target and not g.growing
    assert any(isinstance(e, events.Resumed) for e in g.data.events)
    runs.remove(g.key)
    assert runs.get(g.key) is None


def test_grappler_noise_is_dropped_and_everything_else_passes():
    code = ("from training_core.engine.tf_quiet import filter_native_stderr; import os, sys\n"
            "filter_native_stderr()\n"
            "os.write(2, b'E0000 00:00:1.2  99 meta_optimizer.cc:967] remapper failed: INVALID_ARGUMENT: x\\n')\n"
            "os.write(2, b'E0000 00:00:1.2  99 other.cc:1] a real problem\\n')\n"
            "print('error: one line', file=sys.stderr)\n"
            "sys.stderr.write('\\r[####] 4/8'); sys.stderr.flush()\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60)
    assert r.returncode == 0
    assert r.stderr == b"E0000 00:00:1.2  99 other.cc:1] a real problem\nerror: one line\n\r[####] 4/8"


def test_digits_headless_prints_no_remapper_line(tmp_path):
    r = zygote.run([sys.executable, "main.py", "--headless", "--example", "digits", "--steps", "6",
                    "--run-dir", str(tmp_path / "d"), "--quiet"], cwd=REPO, capture_output=True, text=True,
                   timeout=300)
    assert r.returncode == 0, r.stderr
    assert "remapper" not in r.stderr and "meta_optimizer" not in r.stderr, r.stderr
    assert "6 steps in" in r.stdout
