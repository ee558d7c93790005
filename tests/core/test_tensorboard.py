"""rundir/tensorboard.py and the record writer's `tb/`: TensorBoard sees what the window sees (issue 24 item 6).

Real runs of the built-in examples, read back with TensorBoard's own code: the reader its server uses
(`plugin_event_accumulator`, which purges at a SessionLog START as `tensorboard --logdir` shows it) and the
HParams plugin's own handlers, which answer the table the browser draws. The digits run's pictures are
checked pixel by pixel against the drawing `samples/` keeps; the ring run is steered mid-run with the real
trainer (a freeze, a ratio, a learning rate, a method, pause / step / continue), and a ring run is resumed
from an earlier checkpoint than its last, so that TensorBoard has something to forget.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.plugins.hparams import metadata
from tensorboard.backend.event_processing.plugin_event_accumulator import (
    EventAccumulator,
)

from training_core import (
    Pause,
    RecordWriter,
    Resume,
    RunConfig,
    SetFreeze,
    SetFreezeMethod,
    SetLearningRate,
    SetRatio,
    Step,
    Trainer,
    read_events,
    read_scalars,
)
from training_core import events as E
from training_core.rundir.resume_point import resume_config
from training_core.rundir.samples import list_samples, load_samples
from training_core.rundir.tensorboard import HPARAMS_FILE
from training_core.rundir.tb_views import control_line, sample_picture

from .helpers import Script, config, nan_experiment


def served(run_dir: Path, run: str = "training") -> EventAccumulator:
    """One TensorBoard run of `tb/`, as TensorBoard's server reads it (everything kept)."""
    acc = EventAccumulator(str(run_dir / "tb" / run), size_guidance={"tensors": 0})
    acc.Reload()
    return acc


def texts(acc: EventAccumulator, tag: str = "controls") -> list[tuple[int, str]]:
    return [(e.step, e.tensor_proto.string_val[0].decode("utf-8")) for e in acc.Tensors(tag)]


def pictures(acc: EventAccumulator) -> list[tuple[int, int, int, np.ndarray]]:
    """(step, width, height, decoded pixels) of every picture of the `samples` tag."""
    out = []
    for e in acc.Tensors("samples"):
        w, h, png = e.tensor_proto.string_val
        out.append((e.step, int(w), int(h), tf.io.decode_png(png).numpy()))
    return out


def hparams_table(logdir: Path) -> tuple[object, list]:
    """The HParams plugin's answer to the browser: its experiment (columns) and its session groups (rows)."""
    from tensorboard import context
    from tensorboard.backend.event_processing import (
        data_provider,
        plugin_event_multiplexer,
    )
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.hparams import (
        api_pb2,
        backend_context,
        get_experiment,
        list_session_groups,
    )
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    ctx = backend_context.Context(base_plugin.TBContext(
        logdir=str(logdir), multiplexer=mux, data_provider=data_provider.MultiplexerDataProvider(mux, str(logdir))))
    rc = context.RequestContext()
    exp = get_experiment.Handler(rc, ctx, "", api_pb2.GetExperimentRequest(include_metrics=True)).run()
    cols = [api_pb2.ColParams(hparam=h.name) for h in exp.hparam_infos]
    cols += [api_pb2.ColParams(metric=m.name) for m in exp.metric_infos]
    statuses = [api_pb2.STATUS_UNKNOWN, api_pb2.STATUS_SUCCESS, api_pb2.STATUS_FAILURE, api_pb2.STATUS_RUNNING]
    req = api_pb2.ListSessionGroupsRequest(allowed_statuses=statuses, col_params=cols, start_index=0, slice_size=100,
                                           include_metrics=True)
    return exp, list(list_session_groups.Handler(rc, ctx, "", req).run().session_groups)


def _value(v) -> object:
    kind = v.WhichOneof("kind")
    return {"number_value": v.number_value, "string_value": v.string_value, "bool_value": v.bool_value}[kind]


# -- the runs ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tb-logdir")


@pytest.fixture(scope="module")
def digits_run(logdir) -> Path:
    d = logdir / "digits-run"
    Trainer(RunConfig(example="digits", steps=40, seed=2, run_dir=str(d), sample_every=0.05, fetch_every=10,
                      checkpoint_every=0)).run()
    return d


class _Steered(Script):
    """Script's actions at steps, and a Resume once a Step command has run out (the loop then idles)."""

    def on_idle(self, run) -> None:
        if any(e.kind == "pause" and e.reason == "step" for e in self.events) and not self.kinds("resume"):
            run.send(Resume())


@pytest.fixture(scope="module")
def ring_run(logdir) -> tuple[Path, list]:
    d = logdir / "ring-run"
    script = _Steered({20: [SetFreeze(("generator/dense_1",))], 30: [SetRatio({"policy": "fixed", "ratio": [2, 1]})],
                       35: [SetLearningRate("D", 5e-4)], 40: [SetFreezeMethod("gate")], 45: [Pause(), Step(2)]})
    Trainer(RunConfig(example="ring", steps=60, seed=5, run_dir=str(d), sample_every=0.05, fetch_every=1,
                      checkpoint_every=0), script).run()
    return d, script.events


@pytest.fixture(scope="module")
def resumed_run(tmp_path_factory) -> Path:
    """A ring run of 60 steps resumed from its checkpoint at 40 (the one at 60 removed, as if the process had
    died before writing it) to 70: the first process's steps 41..60 are cut, and TensorBoard must forget them."""
    d = tmp_path_factory.mktemp("tb-resume") / "run"
    Trainer(RunConfig(example="ring", steps=60, seed=1, run_dir=str(d), sample_every=0.02, fetch_every=1,
                      checkpoint_every=20),
            Script({25: [SetFreeze(("generator/dense_1",))], 45: [SetLearningRate("D", 1e-3)]})).run()
    for f in (d / "checkpoints").glob("ckpt-60.*"):
        f.unlink()
    cfg = resume_config(d)
    cfg.steps = 70
    Trainer(cfg, resume=True).run()
    return d


# -- pictures ---------------------------------------------------------------------------------------------
def test_each_digits_drawing_is_one_picture_at_its_step(digits_run):
    got = pictures(served(digits_run))
    recorded = [s for s, _ in list_samples(digits_run)]
    steps = [s for s, *_ in got]  # every drawing: the end may draw again at the last timed drawing's step
    assert len(recorded) >= 3 and sorted(set(steps)) == recorded and steps == sorted(steps)
    # 2 rows of 8 real 8x8 digits (17 px with the 1-px gaps), a band of 17 // 2 + 2, 8 x 8 generated (71 px),
    # 71 px wide; each pixel a 4 x 4 block (an image at least 32 px high)
    assert {(w, h) for _, w, h, _ in got} == {(71 * 4, (17 + 10 + 71) * 4)}
    assert all(px.shape == (392, 284, 1) for *_, px in got)
    meta = served(digits_run).SummaryMetadata("samples")
    assert meta.plugin_data.plugin_name == "images" and "Real images" in meta.summary_description


def test_a_digits_picture_shows_the_drawing_as_the_window_lays_it_out(digits_run):
    step, path = list_samples(digits_run)[len(list_samples(digits_run)) // 2]
    s = load_samples(path)
    px = [p for st, *_, p in pictures(served(digits_run)) if st == step][-1][..., 0]  # samples/ keeps the last
    level = lambda a: np.round((np.clip(a, -1, 1) + 1) * 127.5).astype(np.uint8)
    small = px[::4, ::4]  # one pixel of each 4 x 4 block
    assert (px == np.repeat(np.repeat(small, 4, 0), 4, 1)).all()
    for i in (0, 7, 8, 15):  # real: two rows of eight, row by row
        r, c = divmod(i, 8)
        np.testing.assert_array_equal(small[r * 9:r * 9 + 8, c * 9:c * 9 + 8], level(s["real"][i, ..., 0]))
    assert (small[8, :] == 128).all() and (small[17:27, :] == 255).all()  # a grey gap row, the white band
    for i in (0, 9, 63):  # generated: 8 x 8 below the band
        r, c = divmod(i, 8)
        np.testing.assert_array_equal(small[27 + r * 9:27 + r * 9 + 8, c * 9:c * 9 + 8], level(s["fake"][i, ..., 0]))


def test_a_ring_picture_is_the_scatter_of_its_drawing(ring_run):
    d, _ = ring_run
    got = pictures(served(d))
    assert sorted({s for s, *_ in got}) == [s for s, _ in list_samples(d)]
    _, w, h, px = got[-1]
    assert (w, h) == (300, 300) and px.shape == (300, 300, 3)
    s = load_samples(list_samples(d)[-1][1])
    to_px = lambda x, y: (int((3 - y) / 6 * 300), int((x + 3) / 6 * 300))
    r, c = to_px(*s["fake"][0])
    red, green, blue = px[r, c].astype(int)
    assert red > 200 and red > green > blue  # a generated point: orange over whatever is under it
    real, fake = np.asarray(s["real"]), np.asarray(s["fake"])
    far = np.argmax(np.min(np.linalg.norm(real[:, None] - fake[None], axis=2), axis=1))  # no generated point over it
    r, c = to_px(*real[far])
    assert np.ptp(px[r, c].astype(int)) < 40 and px[r, c, 0] < 200  # a real point: grey
    rows, cols = np.nonzero((px[..., 0] > 200) & (px[..., 2] < 100))
    assert len(rows) > 0  # orange pixels only where generated points are
    fr, fc = zip(*(to_px(x, y) for x, y in s["fake"] if abs(x) < 3 and abs(y) < 3))
    assert all(np.min(np.abs(np.array(fr) - r_) + np.abs(np.array(fc) - c_)) <= 4 for r_, c_ in zip(rows, cols))


def test_the_matrix_picture_and_kinds_without_a_view():
    target = np.zeros((6, 4))
    target[0, 0], target[5, 3] = 2.0, -2.0
    px = sample_picture({"kind": "matrix", "target": target, "reconstruction": np.zeros((6, 4)), "error": 1.0})
    k = math.ceil(240 / 6)
    gap = round(0.25 * 6)
    assert px.shape == (6 * k, (3 * 4 + 2 * gap) * k, 3)
    assert tuple(px[0, 0]) == (192, 2, 6) and tuple(px[-1, 4 * k - 1]) == (33, 81, 219)  # CET-D1's ends
    assert tuple(px[k, k]) == (237, 231, 233)  # zero: the middle of the scale
    diff = px[:, (4 + gap) * 2 * k:]  # the difference is the target here
    np.testing.assert_array_equal(diff, px[:, :4 * k])
    assert sample_picture({"kind": "audio", "fake": np.zeros(3)}) is None
    assert sample_picture({"kind": "images"}) is None


def test_a_drawing_that_cannot_be_drawn_is_left_out_and_training_goes_on(tmp_path):
    w = RecordWriter(tmp_path, [("D", ("d/kernel",))], config=RunConfig(example="ring"))
    w.samples({"kind": "images", "step": 1, "fake": "not an array"})
    w.samples({"kind": "images", "step": 2, "fake": np.zeros((3, 5, 5, 1), np.float32)})
    w.samples({"kind": "images", "step": 2, "fake": np.ones((3, 5, 5, 1), np.float32)})  # the same step again
    w.sync()  # raises a write that failed
    w.event(E.Stop(step=2, time=1.0))
    got = pictures(served(tmp_path))
    assert [s for s, *_ in got] == [2, 2] and (got[0][3] == 128).all()  # zeros: mid-grey, as the gaps
    assert got[1][3].max() == 255 and (got[1][3] == 255).sum() == 3 * 35 * 35  # ones: white, in the order drawn
    assert got[0][1:3] == (17 * 7, 5 * 7) and got[0][3].shape == (35, 119, 1)  # 3 images of 5 px in a row, x 7


# -- HParams ----------------------------------------------------------------------------------------------
def test_runs_of_one_logdir_are_rows_of_the_hparams_table(logdir, digits_run, ring_run):
    ring, _ = ring_run
    exp, groups = hparams_table(logdir)
    rows = {g.name: g for g in groups}
    assert set(rows) == {"digits-run/tb/training", "ring-run/tb/training"}
    assert {m.name.tag for m in exp.metric_infos} == {"loss/D", "loss/G", "metric/high_quality",
                                                      "metric/modes_covered"}  # no per-variable norm
    assert {h.name for h in exp.hparam_infos} >= {"experiment", "seed", "batch_size", "lr/D", "lr/G", "ratio",
                                                   "freeze", "freeze_method", "device", "steps"}
    differ = {h.name for h in exp.hparam_infos if h.differs}
    assert {"experiment", "seed", "batch_size"} <= differ and "freeze" not in differ
    for d, row in ((digits_run, rows["digits-run/tb/training"]), (ring, rows["ring-run/tb/training"])):
        cfg = RunConfig.read_toml(d / "config.toml")
        hp = {k: _value(v) for k, v in row.hparams.items()}
        assert hp["experiment"] == cfg.example and hp["seed"] == cfg.seed and hp["batch_size"] == cfg.batch_size
        assert hp["lr/D"] == pytest.approx(cfg.lr["D"]) and hp["lr/G"] == pytest.approx(cfg.lr["G"])
        assert (hp["ratio"], hp["freeze"], hp["freeze_method"], hp["steps"]) == ("1:1", "none", "exact", cfg.steps)
        assert hp["device"] == next(e for e in read_events(d) if e.kind == "start").device
        sc = read_scalars(d)
        metrics = {m.name.tag: (m.value, m.training_step) for m in row.sessions[0].metric_values}
        want = {t: s for t, s in sc.items() if t.startswith(("loss/", "metric/"))}
        assert set(metrics) == set(want)  # the digits have no measures: no value in their columns
        for tag, s in want.items():
            assert metrics[tag] == (pytest.approx(s.values[-1], rel=1e-6), s.steps[-1])  # the final value


def test_the_hparams_are_the_settings_at_the_start_not_after_the_live_changes(ring_run):
    d, _ = ring_run
    acc = served(d)
    info = metadata.parse_session_start_info_plugin_data(
        acc.PluginTagToContent("hparams")[metadata.SESSION_START_INFO_TAG])
    hp = {k: _value(v) for k, v in info.hparams.items()}
    assert (hp["freeze"], hp["ratio"], hp["freeze_method"]) == ("none", "1:1", "exact")  # changed later, live
    assert hp["lr/D"] == pytest.approx(1e-4) and info.group_name == ""  # one row per run


def test_a_resumed_run_shows_its_own_target_and_count_in_the_hparams(tmp_path):
    """D8: TensorBoard keeps the first session of a run it reads; the resumed process's settings (its --steps,
    its --count) must be the row's, one row for the run."""
    d = tmp_path / "logdir" / "count"
    Trainer(RunConfig(example="ring", steps=4, count="G", seed=1, run_dir=str(d), checkpoint_every=4)).run()
    cfg = resume_config(d)
    cfg.steps = 6
    Trainer(cfg, resume=True).run()
    exp, groups = hparams_table(tmp_path / "logdir")
    assert [g.name for g in groups] == ["count/tb/training"]
    hp = {k: _value(v) for k, v in groups[0].hparams.items()}
    assert (hp["steps"], hp["count"]) == (6, "G")
    info = metadata.parse_session_start_info_plugin_data(
        served(d).PluginTagToContent("hparams")[metadata.SESSION_START_INFO_TAG])
    assert (info.hparams["steps"].number_value, info.hparams["count"].string_value) == (6, "G")


def session_end(run_dir: Path):
    """The hparams plugin's session end info of a run's `tb/training`, as TensorBoard's reader serves it."""
    return metadata.parse_session_end_info_plugin_data(
        served(run_dir).PluginTagToContent("hparams")[metadata.SESSION_END_INFO_TAG])


def test_a_finished_run_ends_its_hparams_session_with_success(logdir, ring_run):
    """Only the session start was written: the table's Status column read Unknown for every run, finished
    or not. A run that reached its target ends its session with success, at its `stop` event's time."""
    from tensorboard.plugins.hparams import api_pb2
    d, _ = ring_run
    stop = read_events(d)[-1]
    assert (stop.kind, stop.reason) == ("stop", "done")
    end = session_end(d)
    assert end.status == api_pb2.STATUS_SUCCESS and end.end_time_secs == pytest.approx(stop.time)
    _, groups = hparams_table(logdir)
    row = next(g for g in groups if g.name == "ring-run/tb/training")
    assert row.sessions[0].status == api_pb2.STATUS_SUCCESS  # what the plugin's table shows


def test_a_run_halted_on_a_nan_ends_its_hparams_session_with_failure(tmp_path):
    from tensorboard.plugins.hparams import api_pb2
    d = tmp_path / "logdir" / "nan"
    Trainer(config(nan_experiment(tmp_path), d, steps=50, on_nan="stop", tensorboard=True)).run()
    stop = read_events(d)[-1]
    assert (stop.kind, stop.reason) == ("stop", "halted") and stop.step < 50
    end = session_end(d)
    assert end.status == api_pb2.STATUS_FAILURE and end.end_time_secs == pytest.approx(stop.time)
    info = metadata.parse_session_start_info_plugin_data(
        served(d).PluginTagToContent("hparams")[metadata.SESSION_START_INFO_TAG])
    assert info.hparams["experiment"].string_value  # the start info is still there, before the end
    _, groups = hparams_table(tmp_path / "logdir")
    assert [g.sessions[0].status for g in groups] == [api_pb2.STATUS_FAILURE]


# -- control changes --------------------------------------------------------------------------------------
def test_control_changes_are_lines_of_text_at_their_steps(ring_run):
    d, _ = ring_run
    got = texts(served(d))
    want = [(e.step, control_line(e)) for e in read_events(d) if control_line(e) is not None]
    assert got == want
    lines = {(s, line.split("**")[1]): line for s, line in got}
    assert lines[(20, "freeze")] == "**freeze** `generator/dense_1`"  # applied after step 20
    assert lines[(30, "ratio")] == "**ratio** 2:1" and lines[(35, "lr")] == "**lr** of D: 0.0005"
    assert lines[(40, "method")] == "**method** gate" and (45, "pause") in lines and (45, "step") in lines
    assert [k for s, k in lines if k in ("pause", "continue")] == ["pause", "pause", "continue"]
    assert got[0][1].startswith("**start** `ring`") and got[-1] == (60, "**stop** (done)")
    assert served(d).SummaryMetadata("controls").plugin_data.plugin_name == "text"


# -- scalars ----------------------------------------------------------------------------------------------
def test_losses_and_measures_are_scalars_beside_the_session_and_the_norms_apart(ring_run):
    d, _ = ring_run
    sc = read_scalars(d)
    train, var = served(d), served(d, "variables")
    measures = {t for t in sc if t.startswith("metric/")}
    assert measures == {"metric/modes_covered", "metric/high_quality"}
    for tag in measures | {"loss/D", "loss/G"}:
        got = train.Tensors(tag)
        assert [e.step for e in got] == sc[tag].steps.tolist(), tag
        np.testing.assert_allclose([tf.make_ndarray(e.tensor_proto) for e in got], sc[tag].values, rtol=1e-6)
    assert train.SummaryMetadata("metric/modes_covered").plugin_data.plugin_name == "scalars"
    assert not [t for t in train.Tags()["tensors"] if t.startswith(("update_", "grad_"))]
    assert {t for t in var.Tags()["tensors"]} == {t for t in sc if t.startswith(("update_", "grad_"))}


# -- resumed ----------------------------------------------------------------------------------------------
def test_a_resumed_run_is_one_timeline_in_tensorboard(resumed_run):
    d = resumed_run
    training = sorted(f.name for f in (d / "tb" / "training").iterdir())
    assert len(training) == 3 and training[0] == HPARAMS_FILE  # a file per process, and the one session's
    assert len(list((d / "tb" / "variables").iterdir())) == 2
    train = served(d)
    steps = [e.step for e in train.Tensors("loss/D")] + [e.step for e in train.Tensors("loss/G")]
    assert sorted(steps) == list(range(1, 71))  # each step once: the first process's 41..60 forgotten
    np.testing.assert_allclose([tf.make_ndarray(e.tensor_proto) for e in train.Tensors("loss/D")],
                               read_scalars(d)["loss/D"].values, rtol=1e-6)  # and the values the resumed one wrote
    assert sorted({s for s, *_ in pictures(train)}) == [s for s, _ in list_samples(d)]
    got = texts(train)
    assert [(s, line.split("**")[1]) for s, line in got] == [(0, "start"), (25, "freeze"), (40, "resumed"),
                                                             (70, "stop")]  # the lr at 45 and the stop at 60: cut
    var = served(d, "variables")
    for tag in var.Tags()["tensors"]:
        s = [e.step for e in var.Tensors(tag)]
        assert s == sorted(set(s)), tag
    _, groups = hparams_table(d / "tb")
    assert [g.name for g in groups] == ["training"] and len(groups[0].sessions) == 1
    hp = {k: _value(v) for k, v in groups[0].hparams.items()}
    assert (hp["freeze"], hp["steps"]) == ("generator/dense_1", 70)  # the resumed process's start
    assert session_end(d).end_time_secs == pytest.approx(read_events(d)[-1].time)  # and its end, not the first's


def test_tensorboard_off_writes_no_tb(tmp_path):
    w = RecordWriter(tmp_path, [("D", ("d/kernel",))], config=RunConfig(example="ring"), tensorboard=False)
    w.samples({"kind": "images", "step": 1, "fake": np.zeros((1, 4, 4))})
    w.event(E.Freeze(step=1, time=1.0, scopes=["d"]))
    w.event(E.Stop(step=1, time=1.0))
    assert not (tmp_path / "tb").exists()
