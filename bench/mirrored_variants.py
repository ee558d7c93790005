"""Throughput variants with two replicas, and with XLA; each exposes `run(n)` like bench/variants.py.

bare_mirrored2  a plain tf.function loop under tf.distribute.MirroredStrategy over 2 devices (2 logical CPU
                devices here, the first 2 GPUs where there are GPUs), written as the TensorFlow guide writes
                it: each replica draws its half of the batch, scales its loss by 1/replicas, and Keras'
                `optimizer.apply` all-reduces the gradients.
mirrored2       Freezeframe's Trainer with `strategy="mirrored", replicas=2` (full monitoring and the run
                record), driven by Step(n) commands.
headless_jit    Freezeframe's Trainer on one device with `jit=True` (XLA), beside the CLI's `bare`.

The logical CPU devices must exist before TensorFlow's first op, so the child process that measures these
calls `two_devices()` right after importing TensorFlow (bench/throughput.py).
"""
from __future__ import annotations


from .ring_models import ring_parts
from .variants import Bare, Driven


def two_devices() -> list[str]:
    import tensorflow as tf
    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) >= 2:
        return ["/GPU:0", "/GPU:1"]
    from training_core.engine.distribute import ensure_logical_cpus
    ensure_logical_cpus(2)
    return ["/CPU:0", "/CPU:1"]


class BareMirrored(Bare):
    """Bare's alternating loop (`run`) over steps written for MirroredStrategy."""

    name = "bare_mirrored2"

    def __init__(self) -> None:
        import tensorflow as tf
        from training_core.engine.distribute import _mirrored
        strategy = _mirrored(tuple(two_devices()))  # the same strategy object Freezeframe's run uses
        n = strategy.num_replicas_in_sync
        with strategy.scope():
            p = ring_parts()
            rng = tf.random.Generator.from_seed(0)
        local, n_data = p.batch // n, int(p.data.shape[0])

        def batch():
            return tf.gather(p.data, rng.uniform([local], 0, n_data, dtype=tf.int32))

        def d_loss():
            z = rng.normal([local, p.noise_dim])
            real, fake = p.d(batch(), training=True), p.d(p.g(z, training=True), training=True)
            return tf.reduce_mean(tf.nn.softplus(-real)) + tf.reduce_mean(tf.nn.softplus(fake))

        def g_loss():
            z = rng.normal([local, p.noise_dim])
            return tf.reduce_mean(tf.nn.softplus(-p.d(p.g(z, training=True), training=True)))

        def make(loss_fn, model, opt):
            with strategy.scope():
                opt.build(model.trainable_variables)

            def replica():
                with tf.GradientTape() as tape:
                    loss = loss_fn() / n
                opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
                return loss

            @tf.function(autograph=False)
            def step():
                return strategy.reduce("SUM", strategy.run(replica), axis=None)
            return step

        self.steps = (make(d_loss, p.d, p.opt_d), make(g_loss, p.g, p.opt_g))
        self.run(20)

class Mirrored(Driven):
    name = "mirrored2"
    overrides = {"strategy": "mirrored", "replicas": 2}


class HeadlessJit(Driven):
    name = "headless_jit"
    overrides = {"jit": True}
