"""The side panels on their own (no TensorFlow): number entry, debouncing, the freeze set a tree emits,
and the settings that survive a restart."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QValidator

from app.panels import SchedulePanel, SciSpinBox, ScopeTree
from app.panels.schedule import DEBOUNCE_MS, format_number
from app.panels.scope_tree import PARAMS, STATE, UNTRAINED, minimal_scopes
from app.settings import MAX_RECENT, Settings
from app.status import StatusPanel, format_elapsed
from training_core import Status
from training_core import VarInfo, build_scope_tree
from training_core.runs import VarState


def test_scientific_spin_box(qtbot):
    box = SciSpinBox()
    qtbot.addWidget(box)
    box.setValue(2e-4)
    assert box.text() == "2e-4"
    box.stepBy(1)
    assert box.value() == 4e-4 and box.text() == "4e-4"
    box.stepBy(-2)
    assert box.value() == 1e-4
    assert box.validate("3e-", 3)[0] == QValidator.State.Intermediate
    assert box.validate("abc", 1)[0] == QValidator.State.Invalid
    assert box.validate("0.05", 4)[0] == QValidator.State.Acceptable
    assert box.validate("50", 2)[0] == QValidator.State.Intermediate  # above the maximum of 10
    assert [format_number(v) for v in (0, 0.5, 1e-4, 1.5e-5, 3e5)] == ["0", "0.5", "1e-4", "1.5e-5", "3e5"]


def test_schedule_panel_debounces_to_one_change(qtbot):
    panel = SchedulePanel()
    qtbot.addWidget(panel)
    panel.set_config(["D", "G"], {"policy": "fixed", "ratio": [1, 1]}, {"D": 1e-4, "G": 2e-4})
    schedules, rates = [], []
    panel.scheduleChanged.connect(schedules.append)
    panel.learningRateChanged.connect(lambda p, v: rates.append((p, v)))
    for _ in range(4):  # four arrow clicks
        panel.steps["D"].stepBy(1)
    panel.lrs["G"].stepBy(1)
    assert schedules == [] and rates == []
    qtbot.waitUntil(lambda: bool(schedules and rates), timeout=DEBOUNCE_MS + 5000)  # after the debounce, by itself
    panel.flush()  # nothing else was waiting: flushing sends nothing more
    assert schedules == [{"policy": "fixed", "ratio": [5, 1]}]
    assert rates == [("G", 4e-4)]
    panel.set_config(["D", "G"], {"policy": "fixed", "ratio": [1, 1]}, {"D": 50.0, "G": 2e-4})  # an attached run's
    assert panel.lrs["D"].value() == 50.0  # shown as it is (a box that stopped at 10 showed, then sent, 10)
    panel.set_config(["D", "G"], {"policy": "fixed", "ratio": [1, 1]}, {"D": 1e25, "G": 2e-4})  # a diverging run's
    assert panel.lrs["D"].value() == 1e25 and panel.lrs["D"].text() == "1e25"  # (it stopped at 1e9)
    panel.set_config(["D", "G"], {"policy": "fixed", "ratio": [1, 1]}, {"D": 50.0, "G": 2e-4})
    panel.lrs["D"].lineEdit().setText("1000")
    panel.lrs["D"].interpretText()
    panel.flush()
    assert rates[-1] == ("D", 1000.0)
    panel.steps["D"].setValue(0)
    panel.steps["G"].setValue(0)
    panel.flush()
    assert len(schedules) == 1 and panel.error_label.isVisibleTo(panel)  # 0:0 runs nothing: not sent
    assert "at least one phase" in panel.problem()
    panel.set_config(["D", "G"], {"policy": "adaptive", "thresholds": [1.3, 0.7], "max_steps": 9}, {})
    assert schedules[-1] == {"policy": "fixed", "ratio": [5, 1]}  # programmatic: nothing emitted
    assert panel.schedule() == {"policy": "adaptive", "thresholds": [1.3, 0.7], "max_steps": 9, "min_steps": 1}
    assert not panel.steps["D"].isEnabled() and panel.thresholds["D"].isEnabled()


RING_LIKE = [VarInfo(f"{m}/{layer}/{w}", (2, 256) if w == "kernel" else (256,), "float32", True)
             for m in ("generator", "discriminator") for layer in ("dense_1", "dense_2", "out")
             for w in ("kernel", "bias")]


def test_scope_tree_emits_minimal_freeze_set_once(qtbot):
    tree = ScopeTree()
    qtbot.addWidget(tree)
    tree.set_tree(build_scope_tree(RING_LIKE), frozen=["discriminator"])
    assert tree.item("discriminator/out/bias").checkState(0) == Qt.CheckState.Checked
    assert tree.frozen_scopes() == ("discriminator",)
    sent = []
    tree.freezeChanged.connect(sent.append)
    tree.item("generator").setCheckState(0, Qt.CheckState.Checked)  # six children change state
    qtbot.waitUntil(lambda: sent != [], timeout=60_000)
    tree.flush()  # nothing left in the coalescing: six item changes made one emission
    assert sent == [("generator", "discriminator")]
    tree.item("generator/out/kernel").setCheckState(0, Qt.CheckState.Unchecked)
    qtbot.waitUntil(lambda: len(sent) == 2, timeout=60_000)
    assert sent[-1] == ("generator/dense_1", "generator/dense_2", "generator/out/bias", "discriminator")
    assert tree.item("generator").checkState(0) == Qt.CheckState.PartiallyChecked
    assert tree.item("generator/dense_2").text(PARAMS) == f"{2 * 256 + 256:,}"



def test_scope_tree_offers_no_tick_on_what_no_phase_trains(qtbot):
    """An EMA copy no phase trains has no checkbox and says why (a start_run loop would refuse its freeze);
    trained scopes still tick, a statistic stays tickable, and an untrained layer inside a trained model follows
    its model's tick without a box of its own to click."""
    def var(path, trainable=True):
        return VarInfo(path, (2,), "float32", trainable)
    infos = [var("generator/h/kernel"), var("generator/out/kernel"), var("discriminator/bn/gamma"),
             var("discriminator/bn/moving_mean", False), var("generator_ema/h/kernel")]
    tree = ScopeTree()
    qtbot.addWidget(tree)
    tree.set_tree(build_scope_tree(infos), ["generator_ema", "discriminator"],
                  trained=[("discriminator/bn/gamma",), ("generator/h/kernel",)])
    role, checkable = Qt.ItemDataRole.CheckStateRole, Qt.ItemFlag.ItemIsUserCheckable
    for path in ("generator_ema", "generator_ema/h", "generator_ema/h/kernel"):
        item = tree.item(path)
        assert item.data(0, role) is None and not item.flags() & checkable, path
        assert item.text(STATE) == UNTRAINED and "no phase trains it" in item.toolTip(0), path
    assert tree.frozen_scopes() == ("discriminator",)  # a freeze set naming the EMA (an old run's) ticks no box
    assert tree.item("discriminator/bn/moving_mean").flags() & checkable  # a statistic: freezable
    out = tree.item("generator/out")
    assert not out.flags() & checkable and out.text(STATE) == UNTRAINED
    sent = []
    tree.freezeChanged.connect(sent.append)
    tree.item("generator").setCheckState(0, Qt.CheckState.Checked)
    qtbot.waitUntil(lambda: sent != [], timeout=60_000)
    assert sent == [("generator", "discriminator")] and out.checkState(0) == Qt.CheckState.Checked
    tree.show_states({"generator_ema/h/kernel": VarState(0.0, "frozen")})  # nothing measured can overwrite the note
    assert tree.item("generator_ema/h/kernel").text(STATE) == UNTRAINED
    tree.set_tree(build_scope_tree(infos))  # no phases known (a placeholder tree): every row ticks
    assert tree.item("generator_ema").flags() & checkable and tree.item("generator_ema").text(STATE) == ""


def test_scope_tree_of_a_loop_offers_no_tick_on_a_statistic(qtbot):
    """In a start_run loop (which refuses to freeze what no phase trains) a layer's statistic has no checkbox and
    reads "untrained", while its trained neighbours and their scope still tick; an experiment run's stays tickable."""
    infos = [VarInfo("discriminator/bn/gamma", (2,), "float32", True),
             VarInfo("discriminator/bn/moving_mean", (2,), "float32", False)]
    tree = ScopeTree()
    qtbot.addWidget(tree)
    checkable = Qt.ItemFlag.ItemIsUserCheckable
    for freezable in (True, False):
        tree.set_tree(build_scope_tree(infos), (), trained=[("discriminator/bn/gamma",)],
                      stats=("discriminator/bn/moving_mean",), stats_freezable=freezable)
        stat = tree.item("discriminator/bn/moving_mean")
        assert bool(stat.flags() & checkable) == freezable and (stat.text(STATE) == UNTRAINED) != freezable
        assert tree.item("discriminator/bn").flags() & checkable and tree.item("discriminator/bn/gamma").flags() & checkable
    assert "statistics" in stat.toolTip(0)

def test_minimal_scopes():
    assert minimal_scopes(["a/b", "a", "c/d/e", "c/d", "a/bc"]) == ("a", "c/d")
    assert minimal_scopes(["gen/dense_1", "gen/dense_10"]) == ("gen/dense_1", "gen/dense_10")


def test_recent_files_survive_and_stay_short(tmp_path):
    files = []
    for i in range(MAX_RECENT + 2):
        f = tmp_path / f"exp{i}.py"
        f.write_text("")
        files.append(str(f))
        Settings().add_recent(f)
    again = Settings().recent_files()  # a new Settings reads what the last one wrote
    assert again == list(reversed(files))[:MAX_RECENT]
    Settings().add_recent(files[5])
    assert Settings().recent_files()[0] == files[5]
    (tmp_path / "exp5.py").unlink()
    assert files[5] not in Settings().recent_files()


def test_a_finished_run_shows_no_speed(qtbot):
    panel = StatusPanel()
    qtbot.addWidget(panel)
    panel.show_status(Status(step=2000, steps_per_s=152.0, running=True))
    assert panel.rate_label.text() == "152 steps/s"
    panel.show_status(Status(step=3000, steps_per_s=152.0, running=False))  # it kept the last speed
    assert panel.rate_label.text() == "– steps/s"


def test_a_target_of_one_phases_steps_is_chosen_in_the_panel_and_shown_in_the_progress_bar(qtbot):
    """The Experiment panel offers the experiment's phases to count the step target by (generator iterations,
    as GAN papers count), a run config carries it only with a target, and the status bar's progress counts it."""
    from app.panels import ExperimentPanel
    from app.panels.schedule import SchedulePanel
    from app.run_config import run_config
    experiment, schedule = ExperimentPanel(), SchedulePanel()
    qtbot.addWidget(experiment)
    qtbot.addWidget(schedule)
    experiment.show_target(["D", "G"], None, None, attached=False)
    assert [experiment.count_combo.itemText(i) for i in range(experiment.count_combo.count())] == [
        "steps of every phase", "D steps", "G steps"]
    experiment.count_combo.setCurrentIndex(2)
    assert experiment.count() is None  # no target: "until stopped" counts nothing
    experiment.steps_spin.setValue(100)
    cfg = run_config(("example", "ring"), experiment, schedule)
    assert (cfg.steps, cfg.count) == (100, "G")
    experiment.show_target(["D", "G"], 300, "D", attached=True)  # an attached run shows its own target
    assert (experiment.steps(), experiment.count()) == (300, "D")
    panel = StatusPanel()
    qtbot.addWidget(panel)
    panel.show_status(Status(step=400, running=True, target_steps=100, count_phase="G", counted=80))
    assert panel.progress.value() == 80 and panel.progress.format() == "G %p%"
    assert panel.progress.toolTip() == "80 of 100 G steps (step 400 of every phase)"


def test_elapsed_format():
    assert format_elapsed(0) == "0.0 s" and format_elapsed(59.94) == "59.9 s"
    assert format_elapsed(60) == "0:01:00" and format_elapsed(3725.9) == "1:02:05"


def test_changing_values_never_resize_tree_columns_or_status_labels(qtbot):
    """Both used to re-lay out on every update while training (the tree re-measured every row: ~3 ms a
    refresh; the status bar repainted the window's bottom)."""
    from app.panels.scope_tree import STATE, UPDATE
    from app.status import StatusPanel
    from training_core.runs import RunData, VariableStates
    from training_core import Status
    tree = ScopeTree()
    qtbot.addWidget(tree)
    tree.set_tree(build_scope_tree(RING_LIKE))
    widths = [tree.tree.columnWidth(c) for c in range(5)]
    fm = tree.tree.fontMetrics()
    assert tree.tree.columnWidth(UPDATE) > fm.horizontalAdvance("8.88e-88")
    assert tree.tree.columnWidth(STATE) > fm.horizontalAdvance("leaked")
    states = VariableStates(build_scope_tree(RING_LIKE))
    assert states.update(RunData())
    tree.show_states(states.states)  # an empty store: nothing to show, nothing moves
    assert [tree.tree.columnWidth(c) for c in range(5)] == widths

    panel = StatusPanel()
    qtbot.addWidget(panel)
    seen = []
    for step in (9, 99_999, 10, 1_234_567, 5):
        panel.show_status(Status(step=step, steps_per_s=step * 1.5))
        seen.append(panel.step_label.minimumWidth())
        assert panel.step_label.minimumWidth() >= panel.step_label.sizeHint().width()
    assert seen == sorted(seen) and seen[-1] == seen[3]  # only ever widens
