"""rundir/writer.py: a run record written without a Trainer (what a user's own loop will write through).

Why: the record was an observer of the trainer and read the trainer's insides to open its files. The
writer now takes names, paths, events and batches of numbers alone; a record written that way must read
back as a Freezeframe run through every reader the window and the exporter use, with nothing of
TensorFlow's training loop involved.
"""
from __future__ import annotations


import numpy as np
import pytest

from training_core import RecordWriter, RunConfig, events as E, is_run_dir, read_events, read_scalars
from training_core.base.errors import WriteFailed
from training_core.base.metrics import PhaseBlock
from training_core.rundir.varstore import read_variables
from training_core.runs import read_run

from .helpers import FullDisk

PATHS = {"D": ("disc/dense/kernel", "disc/dense/bias"), "G": ("gen/dense/kernel", "gen/dense/bias", "gen/out/kernel")}


def _block(phase: str, steps: list[int], frozen: bool = False, seed: int = 0) -> PhaseBlock:
    rng = np.random.default_rng(seed)
    n = len(PATHS[phase])
    upd = np.zeros((len(steps), n)) if frozen else rng.uniform(0.1, 1.0, (len(steps), n))
    return PhaseBlock(phase, PATHS[phase], np.array(steps, dtype=np.int64), np.arange(len(steps), dtype=float) + 1e9,
                      rng.uniform(0, 2, len(steps)), upd, upd / 10, rng.uniform(0, 1, (len(steps), n)),
                      np.full((len(steps), n), frozen), np.ones(len(steps), dtype=bool), np.full((len(steps), n), 10.0))


def test_a_record_written_without_a_trainer_reads_back_as_a_run(tmp_path):
    d = tmp_path / "own-loop"
    d.mkdir()
    cfg = RunConfig(example="ring", steps=6, seed=3)
    w = RecordWriter(d, list(PATHS.items()), config=cfg, tensorboard=False)
    w.event(E.Start(step=0, time=1.0, phases=list(PATHS), phase_variables={k: list(v) for k, v in PATHS.items()}))
    d_block, g_block = _block("D", [1, 2, 4, 5]), _block("G", [3, 6], seed=1)
    w.metrics([d_block, g_block], {"metric/fd": (np.array([3]), np.array([1e9]), np.array([0.25]))})
    w.event(E.Freeze(step=6, time=2.0, scopes=["disc"]))
    w.metrics([_block("D", [7], frozen=True)], {})
    w.sync()
    w.event(E.Stop(step=7, time=3.0, reason="done"))

    assert is_run_dir(d)
    assert RunConfig.read_toml(d / "config.toml").seed == 3
    assert [e.kind for e in read_events(d)] == ["start", "freeze", "stop"]
    sc = read_scalars(d)
    assert sc["loss/D"].steps.tolist() == [1, 2, 4, 5, 7] and sc["loss/G"].steps.tolist() == [3, 6]
    assert np.allclose(sc["loss/G"].values, g_block.loss) and sc["metric/fd"].values.tolist() == [0.25]
    rows = {r.phase: r for r in read_variables(d)}
    assert rows["D"].steps.tolist() == [1, 2, 4, 5, 7]
    assert np.array_equal(rows["D"].update_norm[:4], d_block.update_norm.astype(rows["D"].update_norm.dtype))
    assert rows["D"].update_norm[4].tolist() == [0.0, 0.0] and rows["D"].frozen[4].all()
    run = read_run(d)  # what the window opens
    assert run.last_step == 7


def test_a_failing_write_is_raised_on_the_callers_thread_and_the_stop_still_closes(tmp_path):
    """A write that fails on the writer's thread (the variables file on a full disk) is raised on the caller's
    thread, naming the folder and the cause; later batches raise it again; the closing `stop` never raises."""
    d = tmp_path / "run"
    d.mkdir()
    w = RecordWriter(d, [("D", PATHS["D"])], tensorboard=False)
    w._vars["D"]._f = FullDisk(w._vars["D"]._f)
    w.metrics([_block("D", [1, 2])], {})
    with pytest.raises(WriteFailed, match="variables.*No space left on device"):
        w.sync()
    with pytest.raises(WriteFailed):
        w.metrics([_block("D", [3])], {})
    w.event(E.Stop(step=2, time=1.0, reason="error"))
    assert read_events(d)[-1].kind == "stop" and read_scalars(d)["loss/D"].steps.tolist() == [1, 2]
