"""The GAN shortcut: a file with `generator`, `discriminator`, `real_data` and `noise_dim` becomes a
two-phase experiment with the standard non-saturating losses (Goodfellow et al. 2014, section 3):

    D: softplus(-D(x)) + softplus(D(G(z)))      (binary cross-entropy on logits)
    G: softplus(-D(G(z)))                        (the non-saturating generator loss)

Phases are named `D` and `G` (so `--ratio 5:1` is five D steps per G step, `--lr D=1e-4`), and train
the scopes of the discriminator and generator models. Optional module attributes: `batch_size`,
`learning_rate` (a float, or {"D": .., "G": ..}), `optimizer` (a function of the phase name returning
a Keras optimizer), `ratio` ("5:1"), `sample_kind`, `description`, `metrics` (a function of a
`SampleContext` returning {name: number}: quality measures recorded every 2 s).

The builder owns everything specific to the shortcut, including the dry run that builds the models
and checks they fit together (noise -> G -> D, data -> D): the rest of the core treats its result like
any other `Experiment`.
"""
from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

from training_core.base.alternation import parse_ratio
from training_core.base.errors import UserError
from training_core.experiment.api import Experiment, Models, Phase, SampleContext, StepContext
from training_core.experiment.usercode import user_code

#: what a file must define to be a GAN-shortcut file
GAN_NAMES = ("generator", "discriminator", "real_data", "noise_dim")


def _model(obj: Any, what: str) -> Any:
    m = obj() if callable(obj) and not hasattr(obj, "trainable_variables") else obj
    if not hasattr(m, "trainable_variables"):
        raise UserError(f"{what} must be a Keras model or a function returning one, got {type(m).__name__}")
    return m


def _logits(y: Any) -> Any:
    import keras
    return keras.ops.reshape(y, (keras.ops.shape(y)[0], -1))


def gan_losses(noise_dim: int) -> tuple[Callable[[StepContext], Any], Callable[[StepContext], Any]]:
    """The D and G losses for noise of `noise_dim` dimensions, drawn from the run's seeded generator."""
    import keras

    def d_loss(ctx: StepContext) -> Any:
        g, d = ctx.models["generator"], ctx.models["discriminator"]
        z = ctx.normal((ctx.batch_size, noise_dim))
        real = _logits(d(ctx.batch, training=True))
        fake = _logits(d(g(z, training=True), training=True))
        return keras.ops.mean(keras.ops.softplus(-real)) + keras.ops.mean(keras.ops.softplus(fake))

    def g_loss(ctx: StepContext) -> Any:
        g, d = ctx.models["generator"], ctx.models["discriminator"]
        z = ctx.normal((ctx.batch_size, noise_dim))
        fake = _logits(d(g(z, training=True), training=True))
        return keras.ops.mean(keras.ops.softplus(-fake))

    return d_loss, g_loss


def gan_sampler(noise_dim: int) -> Callable[[SampleContext], dict]:
    def sample(ctx: SampleContext) -> dict:
        z = ctx.normal((ctx.n, noise_dim))
        fake = np.asarray(ctx.models["generator"](z, training=False))
        return {"real": np.asarray(ctx.batch), "fake": fake}
    return sample


def dry_run(g: Any, d: Any, data: np.ndarray, noise_dim: int, path: Path) -> None:
    """Call the models once on two rows (builds them, and shows a shape mismatch now, in one line)."""
    import keras
    with user_code(f"the models in {path.name}", path, verb="do not fit together:",
                   fix="check noise_dim and the data shape"):
        fake = g(keras.ops.zeros((2, noise_dim)), training=False)
        d(keras.ops.convert_to_tensor(data[:2]), training=False)
        d(fake, training=False)


def gan_experiment(module: ModuleType, path: Path) -> Experiment:
    """Build a GAN-shortcut file's models, dry-run them, and return its two-phase `Experiment`."""
    with user_code(f"building the models of {path.name}", path):
        data = np.asarray(module.real_data() if callable(module.real_data) else module.real_data, dtype=np.float32)
        noise_dim = int(module.noise_dim)
        g = _model(module.generator, "generator")
        d = _model(module.discriminator, "discriminator")
        make_opt = getattr(module, "optimizer", None)
        optimizers = {phase: make_opt(phase) if make_opt else None for phase in ("D", "G")}
    dry_run(g, d, data, noise_dim, path)
    lr = getattr(module, "learning_rate", 2e-4)
    lrs = lr if isinstance(lr, dict) else {"D": lr, "G": lr}
    unknown = sorted(str(k) for k in lrs if k not in ("D", "G"))
    if unknown:  # a typo here left that phase at the default rate without a word
        raise UserError(f"learning_rate in {path.name} names {', '.join(repr(k) for k in unknown)}, but the GAN "
                        f"shortcut's phases are D and G; write learning_rate = {{\"D\": ..., \"G\": ...}}")
    d_loss, g_loss = gan_losses(noise_dim)
    phases = [Phase(phase, loss, trains=[model.name], learning_rate=float(lrs.get(phase, 2e-4)),
                    optimizer=optimizers[phase])
              for phase, loss, model in (("D", d_loss, d), ("G", g_loss, g))]
    kind = getattr(module, "sample_kind", None) or ("points2d" if data.ndim == 2 and data.shape[1] == 2
                                                     else "images" if data.ndim in (3, 4) else "none")
    ratio = getattr(module, "ratio", None)
    try:
        default_ratio = None if ratio is None else parse_ratio(str(ratio))
    except UserError:
        raise UserError(f"ratio in {path.name} must be counts per phase like \"5:1\", got {ratio!r}") from None
    metrics = getattr(module, "metrics", None)
    if metrics is not None and not callable(metrics):
        raise UserError(f"metrics in {path.name} must be a function of ctx returning {{name: number}}, "
                        f"got {type(metrics).__name__}")
    return Experiment(name=path.stem, models=Models(generator=g, discriminator=d), phases=phases, data=data,
                      batch_size=int(getattr(module, "batch_size", 64)), sample=gan_sampler(noise_dim),
                      sample_kind=kind, metrics=metrics,
                      default_ratio=default_ratio,
                      description=getattr(module, "description", (module.__doc__ or "").strip().split("\n")[0]))
