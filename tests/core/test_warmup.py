"""Lazy warm-up (training_core/warmup.py): before the run only the first phase's starting variant is traced
and the other phases' losses checked; the other phases' starting variants are traced on a thread from the
run's start, every masked variant after the first step; a loss that fails still fails while preparing; a
freeze that comes before its masked variant is ready waits for it and stays exact bit for bit; each variant
is traced once, and only a second trace of one counts as a retrace."""
from __future__ import annotations

import pytest

from training_core import SetFreeze, Trainer, UserError, read_events, read_scalars

from . import plain_loop
from . import test_exactness as ex
from .helpers import Script, config, snapshot, tiny_gan, write_file

ALL = [("D", "fast"), ("D", "masked"), ("G", "fast"), ("G", "masked")]


def _traced_at(trainer: Trainer) -> list[tuple[str, str, int]]:
    """Wrap the trace hook before preparing: (phase, variant, steps run when the trace began), in order."""
    seen: list[tuple[str, str, int]] = []
    hook = trainer.warm.on_trace

    def on_trace(phase: str, variant: str) -> None:
        seen.append((phase, variant, trainer.step))
        hook(phase, variant)

    trainer.warm.on_trace = on_trace
    return seen


def test_first_step_runs_before_the_masked_variants_are_traced(tmp_path, run_dir):
    trainer = Trainer(config(tiny_gan(tmp_path), run_dir, steps=30))
    seen = _traced_at(trainer)
    trainer.prepare()
    assert [(p, v) for p, v, _ in seen] == [("D", "fast")]  # nothing frozen: the first phase's fast variant
    assert trainer.prepared.at_start == [(1, "fast")] and trainer.prepared.deferred == [(0, "masked"), (1, "masked")]
    d, g = trainer.prepared.steps
    assert g._grads_fn.experimental_get_tracing_count() == 1  # G's loss checked, its variants not traced
    assert g.fast.experimental_get_tracing_count() == d.masked.experimental_get_tracing_count() == 0
    trainer.run()
    assert sorted((p, v) for p, v, _ in seen) == ALL  # the run's end waits for the thread
    assert all(step >= 1 for p, v, step in seen if v == "masked")
    assert trainer.traces == 4 and trainer.retraces == 0
    events = [e for e in read_events(run_dir) if e.kind in ("trace", "retrace")]
    assert [e.kind for e in events] == ["trace"] * 4 and [e.traces for e in events] == [1, 2, 3, 4]
    assert all(e.step >= 1 for e in events if e.variant == "masked")
    assert all(st.fast.experimental_get_tracing_count() == st.masked.experimental_get_tracing_count() == 1
               for st in trainer.prepared.steps)
    # the masked variants share one traced forward and backward pass per phase (G's, the one that checked its
    # loss); the fast variants build their own, inline
    assert d._grads_fn.experimental_get_tracing_count() == g._grads_fn.experimental_get_tracing_count() == 1


def test_a_short_run_still_traces_every_variant_once(tmp_path, run_dir):
    trainer = Trainer(config(tiny_gan(tmp_path), run_dir, steps=1))
    trainer.run()
    assert trainer.traces == 4 and trainer.retraces == 0
    assert sorted((e.phase, e.variant) for e in read_events(run_dir) if e.kind == "trace") == ALL


def test_a_freeze_at_the_start_traces_that_phases_masked_variant_first(tmp_path, run_dir):
    trainer = Trainer(config(tiny_gan(tmp_path), run_dir, steps=6, freeze=["generator/dense_1"]))
    seen = _traced_at(trainer)
    trainer.prepare()
    assert [(p, v) for p, v, _ in seen] == [("D", "fast")]
    assert trainer.prepared.at_start == [(1, "masked")] and trainer.prepared.deferred == [(0, "masked"), (1, "fast")]
    trainer.run()
    assert sorted((p, v) for p, v, _ in seen) == ALL and trainer.retraces == 0


def test_a_later_phase_whose_loss_fails_fails_while_preparing(tmp_path, run_dir):
    """Its variants are traced during the run, but its loss is traced before it: one line, no run directory."""
    src = ex.deep_source(ex.OPTIMIZERS["adam"]).replace(
        'Phase("B", loss,', 'Phase("B", lambda ctx: ctx.models.nosuch(ctx.data),')
    path = write_file(tmp_path, "b_fails.py", src)
    with pytest.raises(UserError) as info:
        Trainer(config(path, run_dir, steps=4)).run()
    assert str(info.value).startswith("the loss of phase 'B' in b_fails.py raised AttributeError: no model named")
    assert not run_dir.exists()


def test_a_freeze_sent_after_the_first_step_is_exact_bit_for_bit(tmp_path, run_dir, monkeypatch):
    """Nothing frozen at the start, a freeze on both phases applied after step 1 (when the masked variants
    are at best being traced on the thread), lifted after step 9: weights, slots and every loss equal the
    plain Keras loop of test_exactness, which leaves the frozen variables out of `apply`. Phase A trains
    with Adam and a global clip norm, phase B with SGD and momentum."""
    freezes = {0: [], 1: ["net/a1", "net/a3/bias", "net/b0", "net/b5/bias"], 9: []}
    monkeypatch.setattr(plain_loop, "FREEZES", freezes)  # the plain loop's schedule, which the reference reads
    monkeypatch.setattr(plain_loop, "STEPS", 14)
    path = write_file(tmp_path, "deep_adam_global_sgdm.py",
                      ex.deep_source(ex.OPTIMIZERS["adam_global"], ex.OPTIMIZERS["sgdm"]))
    initial = {}
    script = Script({0: [lambda t: initial.update(snapshot(t))], 1: [SetFreeze(freezes[1])],
                     9: [SetFreeze(freezes[9])]})
    trainer = Trainer(config(path, run_dir, steps=14), script)
    seen = _traced_at(trainer)
    trainer.run()

    plain_loop.assert_equals_reference(trainer, run_dir, path, initial, "exact")

    sc = read_scalars(run_dir)
    events = read_events(run_dir)
    assert [e.step for e in events if e.kind == "freeze"] == [1, 9]
    # both masked variants were traced after the first step and reported before the freeze that needed them
    assert sorted((p, v) for p, v, s in seen if v == "masked") == [("A", "masked"), ("B", "masked")]
    assert all(s >= 1 for p, v, s in seen if v == "masked")
    kinds = [(e.kind, getattr(e, "variant", "")) for e in events if e.kind in ("trace", "freeze")]
    assert kinds.index(("freeze", "")) > max(i for i, k in enumerate(kinds) if k == ("trace", "masked"))
    assert trainer.traces == 4 and trainer.retraces == 0
    un = sc["update_norm/net/a1/kernel"]
    assert (un.values[(un.steps > 1) & (un.steps <= 9)] == 0).all() and (un.values[un.steps > 9] > 0).all()


def test_the_warm_up_thread_names_in_its_own_keras_name_scopes():
    """A model call traced on the warm-up thread opens its layers' name scopes on that thread only: a model
    built on the training thread meanwhile gets plain variable paths. (The thread took the training thread's
    name-scope stack by reference, and the benchmark's next model got `discriminator/discriminator/...`.)"""
    import threading

    import keras

    from training_core.loop.warmup import _keras_state

    with keras.name_scope("before"):  # the training thread's stack exists, as after any model call
        pass
    state = _keras_state()
    inside, release = threading.Event(), threading.Event()

    def on_thread() -> None:
        _keras_state(state)
        with keras.name_scope("discriminator"):
            inside.set()
            release.wait(60)

    t = threading.Thread(target=on_thread)
    t.start()
    try:
        assert inside.wait(60)
        layer = keras.layers.Dense(2, name="probe")
        layer.build((None, 3))
        assert layer.kernel.path == "probe/kernel"
    finally:
        release.set()
        t.join(60)
