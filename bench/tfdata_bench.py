"""The DCGAN on tf.data: Freezeframe's headless training of the built-in `shapes` example (a conditional DCGAN on
resources/data/shapes.npz, its batches from a tf.data pipeline with a stateless random shift) against a bare
`tf.function` loop over the same pipeline (bench/run.py's row "throughput headless, shapes on tf.data").

  headless        resources/experiments/shapes.py as it is: a `Trainer` with every default observer (the full
                  record, samples every 10 s, FID/KID on 512 samples every ~10 s), the CLI's TensorFlow settings
  headless_nomet  the same file with `metrics = None`: what the FID/KID measures cost, for the record
  bare            a plain loop written here: the shapes file's own models, `optimizer(phase)` (its Adam,
                  beta_1 0.5) and `real_data()` pipeline (prefetched 2 batches, as engine/datasets.py does), the
                  GAN shortcut's non-saturating losses written out, D and G steps alternating 1:1, each step one
                  `tf.function` that reads its batch with the iterator's `get_next` inside the graph
  bare_again      the same bare loop again (its own models and iterator): the A/A spread of this run
  bare_fed        the bare loop with the batch taken by `next(iterator)` in Python and passed in as arguments
                  (a plain loop's way); the reference is the faster of `bare` and `bare_fed` in the run

Why interleaved: this machine's speed varies 3x over an hour, so each variant runs on a thread (the trainers) or
in place (the bare loops), and they are stepped in turn, a chunk of steps each (A B C D E A B ...), so a slow
minute slows all alike. The order turns by one each round: a trainer's FID/KID measure runs on its own thread
and may finish in the next variant's chunk (and its last record writes), so no variant may always come after the
same one (the first version, in a fixed order, had `bare`, after `headless`, at 0.92 of `bare_again`). Steps/s is each one's steps over its chunks' time, all of it (a median would leave out
the chunks a measure falls in). A step is one phase's step (D or G), as in bench/variants.py.

python -m bench.tfdata_bench [chunk] [rounds] [variants,...]    (prints one JSON line; 300 6, all five)
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.child import run_child

ROOT = Path(__file__).resolve().parent.parent
NAMES = ["headless", "bare", "headless_nomet", "bare_fed", "bare_again"]


def _experiment(name: str, folder: Path) -> Path:
    """The shapes file as it is (`headless`) or with `metrics = None`, its data path made absolute."""
    from training_core.experiment.loading import example_path
    src = example_path("shapes").read_text()
    data_dir = example_path("shapes").resolve().parent.parent / "data"
    src = src.replace('Path(__file__).resolve().parent.parent / "data"', f"Path({str(data_dir)!r})")
    path = folder / f"shapes_{name}.py"
    path.write_text(src + ("\n\nmetrics = None\n" if name == "headless_nomet" else ""), encoding="utf-8")
    return path


def Driven(name: str, folder: Path):
    """A headless Trainer of the shapes file, paused and stepped in turn (bench/variants.py FileDriven)."""
    from bench.variants import FileDriven
    return FileDriven(name, _experiment(name, folder), start_timeout=300)


class Bare:
    """The plain loop over the shapes file's models, optimizers and pipeline (module docstring)."""

    def __init__(self, name: str, module) -> None:
        import tensorflow as tf
        self.name = name
        fed = name == "bare_fed"
        g, d = module.generator(), module.discriminator()
        rng = tf.random.Generator.from_seed(0)
        b, nd = module.batch_size, module.noise_dim
        self.iterator = iter(module.real_data().prefetch(2))

        def d_loss(x, y):
            real = d([x, y], training=True)
            fake = d([g([rng.normal([b, nd]), y], training=True), y], training=True)
            return tf.reduce_mean(tf.nn.softplus(-real)) + tf.reduce_mean(tf.nn.softplus(fake))

        def g_loss(x, y):
            return tf.reduce_mean(tf.nn.softplus(-d([g([rng.normal([b, nd]), y], training=True), y], training=True)))

        def make(loss_fn, model, opt):
            vs = model.trainable_variables
            opt.build(vs)

            def update(x, y):
                with tf.GradientTape() as tape:
                    loss = loss_fn(x, y)
                opt.apply(tape.gradient(loss, vs), vs)
                return loss

            if fed:
                return tf.function(update, autograph=False)
            it = self.iterator
            return tf.function(lambda: update(*it.get_next()), autograph=False)

        self.steps = (make(d_loss, d, module.optimizer("D")), make(g_loss, g, module.optimizer("G")))
        self.fed = fed
        self.run(20)

    def run(self, n: int) -> None:
        out = None
        for i in range(n):
            out = self.steps[i % 2](*next(self.iterator)) if self.fed else self.steps[i % 2]()
        out.numpy()

    def close(self) -> None: ...


def _make(name: str, folder: Path, module):
    return Driven(name, folder) if name.startswith("headless") else Bare(name, module)


def stepped_in_turn(runs: dict, chunk: int, rounds: int) -> dict[str, float]:
    """Seconds each of `runs` (name -> a variant with `run(n)`) spent on its `rounds` chunks of `chunk` steps,
    stepped in turn, the order turned by one each round; a variant with a `clock_rate` (the window) also gets
    "<name>_clock_s": its chunks' time by the training process's own step clock."""
    names = list(runs)
    spent = {n: 0.0 for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:  # turned: none always follows the same one
            t = time.perf_counter()
            runs[n].run(chunk)
            spent[n] += time.perf_counter() - t
            clock = getattr(runs[n], "clock_rate", None)
            if clock:
                spent[n + "_clock_s"] = spent.get(n + "_clock_s", 0.0) + chunk / clock
    return spent


def interleaved(chunk: int, rounds: int, names: list[str] | None = None, make=_make) -> dict:
    """The variants `names` (all of NAMES by default; every one has `headless`, `bare`, `bare_again`) stepped
    in turn, `chunk` steps each, `rounds` times; `make(name, folder, module)` builds one (bench/tfdata_window.py
    adds the window)."""
    from training_core.experiment.loading import example_path, load_module
    folder = Path(tempfile.mkdtemp(prefix="ff-bench-tfdata-"))
    module = load_module(example_path("shapes"))
    names = names or NAMES
    runs = {n: make(n, folder, module) for n in names}
    t0 = time.perf_counter()
    try:
        spent = stepped_in_turn(runs, chunk, rounds)
    finally:
        for r in runs.values():
            r.close()
    rate = {n.removesuffix("_s"): chunk * rounds / s for n, s in spent.items()}
    ref = max((n for n in ("bare", "bare_fed") if n in rate), key=rate.get)
    out = {"chunk": chunk, "rounds": rounds, "seconds": time.perf_counter() - t0, "steps_per_s": rate,
           "reference": ref, "aa": rate["bare_again"] / rate["bare"] if "bare_again" in rate else None}
    for n in rate:
        if not n.startswith("bare"):
            out[f"{n}_over_bare"] = rate[n] / rate[ref]
    if "bare_fed" in rate:
        out["bare_fed_over_bare"] = rate["bare_fed"] / rate["bare"]
    return out


def measure(chunk: int, rounds: int, names: list[str] | None = None) -> dict:
    """In a child process with the CLI's TensorFlow settings (bench/run.py's own process is the window's)."""
    return run_child("bench.tfdata_bench", [str(chunk), str(rounds),
                     ",".join(names or NAMES)], "tf.data bench child", timeout=3000)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, str(ROOT))
    from training_core.engine.tf_quiet import import_tensorflow
    import_tensorflow()  # the CLI's settings
    a = sys.argv[1:]
    print(json.dumps(interleaved(int(a[0]) if a else 300, int(a[1]) if a[1:] else 6,
                                 a[2].split(",") if a[2:] else None)), flush=True)
    os._exit(0)
