"""The GAN shortcut: a file with `generator`, `discriminator`, `real_data` and `noise_dim` becomes a
two-phase experiment with the standard non-saturating losses (Goodfellow et al. 2014, section 3):

    D: softplus(-D(x)) + softplus(D(G(z)))      (binary cross-entropy on logits)
    G: softplus(-D(G(z)))                        (the non-saturating generator loss)

Phases are named `D` and `G` (so `--ratio 5:1` is five D steps per G step, `--lr D=1e-4`), and train
the scopes of the discriminator and generator models. Optional module attributes: `batch_size`,
`learning_rate` (a float, or {"D": .., "G": ..}), `optimizer` (a function of the phase name returning
a Keras optimizer), `ratio` ("5:1"), `sample_kind`, `description`, `metrics` (a function of a
`SampleContext` returning {name: number}: quality measures recorded every 2 s), `conditional`, `sample` (a
function of a `SampleContext` returning the samples view's arrays, in place of the default: the real rows and
as many fakes, e.g. to lay a conditional model's samples out by class).

`real_data` (an array, or a function returning one) may also be `(x, y)` arrays, a dict with "image" (or "x")
and "label" (or "y"), or a `tf.data.Dataset` of any of these (experiment/data.py): the models see `x`, and with
`conditional = True` the labels too, `generator([z, y])` and `discriminator([x, y])` with the batch's `y` (the
fakes of a step are of the classes of its real batch).

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
from training_core.experiment.data import DataSpec, describe, map_rows, unscaled_warning, zeros_like_rows
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


class Split:
    """Where the images and the labels are in a batch of the shortcut's data: the array itself (no labels), the
    members 0 and 1 of a tuple, or a dict's "image"/"x" and "label"/"y". `conditional`: the labels go to both
    models (`generator([z, y])`, `discriminator([x, y])`)."""

    def __init__(self, x: Any = None, y: Any = None, conditional: bool = False) -> None:
        self.x, self.y, self.conditional = x, y, conditional

    def __call__(self, batch: Any) -> tuple[Any, Any]:
        x = batch if self.x is None else batch[self.x]
        return x, (batch[self.y] if self.conditional else None)

    @staticmethod
    def inputs(a: Any, y: Any) -> Any:
        return a if y is None else [a, y]


def gan_losses(noise_dim: int, split: Split | None = None) -> tuple[Callable[[StepContext], Any],
                                                                   Callable[[StepContext], Any]]:
    """The D and G losses for noise of `noise_dim` dimensions, drawn from the run's seeded generator; with
    `split.conditional`, both models are given the batch's labels."""
    import keras
    split, inputs = split or Split(), Split.inputs

    def d_loss(ctx: StepContext) -> Any:
        g, d = ctx.models["generator"], ctx.models["discriminator"]
        x, y = split(ctx.batch)
        z = ctx.normal((ctx.batch_size, noise_dim))
        real = _logits(d(inputs(x, y), training=True))
        fake = _logits(d(inputs(g(inputs(z, y), training=True), y), training=True))
        return keras.ops.mean(keras.ops.softplus(-real)) + keras.ops.mean(keras.ops.softplus(fake))

    def g_loss(ctx: StepContext) -> Any:
        g, d = ctx.models["generator"], ctx.models["discriminator"]
        _, y = split(ctx.batch)
        z = ctx.normal((ctx.batch_size, noise_dim))
        fake = _logits(d(inputs(g(inputs(z, y), training=True), y), training=True))
        return keras.ops.mean(keras.ops.softplus(-fake))

    return d_loss, g_loss


def gan_sampler(noise_dim: int, split: Split | None = None) -> Callable[[SampleContext], dict]:
    """Real rows and as many fakes; a conditional generator is given the real rows' labels, so the two halves of
    the view show the same classes."""
    split = split or Split()

    def sample(ctx: SampleContext) -> dict:
        import keras
        x, y = split(ctx.batch)
        y = None if y is None else keras.ops.convert_to_tensor(y)
        z = ctx.normal((ctx.n, noise_dim))
        fake = np.asarray(ctx.models["generator"](Split.inputs(z, y), training=False))
        return {"real": np.asarray(x), "fake": fake}
    return sample


def _split(spec: DataSpec, conditional: Any, path: Path) -> Split:
    """Where a batch's images and labels are (`Split`), each data the shortcut cannot use one line."""
    if not isinstance(conditional, bool):
        raise UserError(f"conditional in {path.name} must be True or False, got {conditional!r}")
    rows = spec.rows
    if isinstance(rows, dict):
        x = next((k for k in ("image", "x") if k in rows), None)
        y = next((k for k in ("label", "y") if k in rows), None)
        if x is None:
            raise UserError(f"real_data() in {path.name} gives a dict with keys {', '.join(map(repr, rows))}; the GAN "
                            f"shortcut takes its images from \"image\" (or \"x\") and its labels from \"label\" (or \"y\")")
    elif isinstance(rows, tuple):
        if len(rows) > 2:
            raise UserError(f"real_data() in {path.name} gives a tuple of {len(rows)}; the GAN shortcut takes x or "
                            f"(x, y): images and labels")
        x, y = 0, (1 if len(rows) == 2 else None)
    else:
        x = y = None
    if conditional and y is None:
        raise UserError(f"conditional = True in {path.name} needs labelled data: real_data() returning (x, y) arrays "
                        f"or a Dataset of (x, y), got {'a Dataset of' if spec.kind == 'dataset' else 'an'} "
                        f"{'array' if not isinstance(rows, (tuple, dict)) else 'element without labels'}")
    return Split(x, y, conditional)


def dry_run(g: Any, d: Any, spec: DataSpec, split: Split, noise_dim: int, path: Path) -> None:
    """Call the models once on two rows (builds them, and shows a shape mismatch now, in one line): in-memory
    data's first rows, or zeros of a Dataset's row shapes (a Dataset is not read: experiment/data.py says why).
    A conditional pair is called with the labels, as the losses call it."""
    import keras
    rows = zeros_like_rows(spec, 2) if spec.kind == "dataset" else \
        map_rows(lambda a: a[:2], spec.arrays) if spec.kind == "structure" else spec.arrays[:2]
    x, y = split(rows)
    if split.conditional:
        for name, m, two in (("generator", g, "[z, y]"), ("discriminator", d, "[x, y]")):
            try:
                n = len(m.inputs)
            except (AttributeError, TypeError, ValueError):  # a subclassed model: its call() says, when called
                continue
            if n != 2:  # Keras would pass the first of [z, y] and drop the labels, with a warning only
                raise UserError(f"conditional = True in {path.name}, but its {name} takes {n} input"
                                f"{'s' if n != 1 else ''}; give it two, {two} (a functional keras.Model({two}, ...))")
        check_label_range(spec, split, {"generator": g, "discriminator": d}, path)
    fix = ("check noise_dim, the data shape and that both models take [input, label] (the generator [z, y], the "
           "discriminator [x, y])" if split.conditional else "check noise_dim and the data shape")
    label = None if split.y is None or not split.conditional else spec.rows[split.y]
    if label is not None and len(label.shape) == 1 and label.shape[0] > 1:  # a batch of them: rank 2
        fix = (f"the labels are one-hot (rank 2, shape (2, {label.shape[0]}) for 2 rows): give class numbers "
               f"(image_dataset_from_directory(..., label_mode=\"int\")) to models with an Embedding, or give "
               f"models without an Embedding that take one-hot labels of shape ({label.shape[0]},)")
    if not split.conditional:
        check_shapes(g, d, (spec.rows if split.x is None else spec.rows[split.x]).shape, noise_dim, path)
    with user_code(f"the models in {path.name}", path, verb="do not fit together:", fix=fix):
        y = None if y is None else keras.ops.convert_to_tensor(y)
        fake = g(Split.inputs(keras.ops.zeros((2, noise_dim)), y), training=False)
        d(Split.inputs(keras.ops.convert_to_tensor(x), y), training=False)
        d(Split.inputs(fake, y), training=False)


def _shape_of(model: Any, which: str) -> tuple | None:
    """A model's one input's or output's row shape (`input_shape[1:]`), None where Keras cannot tell (a
    subclassed model not built yet, several inputs): those are left to the dry run's call."""
    try:
        shape = getattr(model, which)
    except (AttributeError, ValueError, TypeError):
        return None
    return tuple(shape[1:]) if isinstance(shape, tuple) and shape and not isinstance(shape[0], tuple) else None


def _fits(want: tuple | None, got: tuple) -> bool:
    return want is None or (len(want) == len(got) and all(w is None or w == g for w, g in zip(want, got)))


def check_shapes(g: Any, d: Any, row: tuple, noise_dim: int, path: Path) -> None:
    """The three shapes a GAN's models must agree on, each named in one line when they do not (rather than the
    Keras exception of the dry run's call): the generator's input and noise_dim, the data's rows and the
    discriminator's input, the generator's output and the discriminator's input."""
    g_in, g_out, d_in = _shape_of(g, "input_shape"), _shape_of(g, "output_shape"), _shape_of(d, "input_shape")
    if not _fits(g_in, (noise_dim,)):
        raise UserError(f"the generator in {path.name} takes inputs of shape {g_in}, but noise_dim = {noise_dim}; "
                        f"set noise_dim = {g_in[0] if len(g_in) == 1 else '...'}, or give the generator "
                        f"keras.Input(({noise_dim},))")
    if not _fits(d_in, row):
        raise UserError(f"real_data() in {path.name} gives rows of shape {row}, but the discriminator takes "
                        f"{d_in}; give the discriminator keras.Input({row}), or reshape the data")
    if g_out is not None and not _fits(d_in, g_out):
        raise UserError(f"the generator in {path.name} makes rows of shape {g_out}, but the discriminator takes "
                        f"{d_in} (the data's rows are {row}); make the generator's last layer give {row}")


def check_label_range(spec: DataSpec, split: Split, models: dict[str, Any], path: Path) -> None:
    """Class numbers beyond a model's Embedding are refused now, in one line, not at step 1 after the run directory
    is written (an Embedding's gather fails there, `indices[0] = 7 is not in [0, 3)`). The largest label: in memory,
    the labels' maximum; a Dataset is not read (a second iterator moves the seeds of the training's, see
    `zeros_like_rows`), so its classes come from `class_names`, which image_dataset_from_directory sets, on it or
    on a Dataset it was made from by `.map` and the like; without one nothing is checked."""
    label = spec.rows[split.y]
    if len(label.shape) != 0 or "int" not in label.dtype:
        return
    if spec.kind == "dataset":
        names = _class_names(spec.dataset)
        largest = None if names is None else len(names) - 1
    else:
        y = np.asarray(spec.arrays[split.y])
        largest = int(y.max()) if y.size else None
    if largest is None:
        return
    for name, model in models.items():
        for layer in _embeddings(model):
            dim = int(layer.input_dim)
            if largest >= dim:
                raise UserError(f"the labels of real_data() in {path.name} go up to {largest}, but the {name}'s "
                                f"Embedding {layer.name!r} takes input_dim={dim} (labels 0 to {dim - 1}); give it "
                                f"input_dim={largest + 1}, the number of classes")


def _class_names(ds: Any) -> Any:
    """The `class_names` of a Dataset or of one it was made from (`Dataset._inputs()`, as `dataset_is_batched`)."""
    todo, seen = [ds], set()
    while todo:
        d = todo.pop(0)
        if id(d) in seen:
            continue
        seen.add(id(d))
        names = getattr(d, "class_names", None)
        if names is not None:
            return names
        todo.extend(d._inputs())
    return None


def _embeddings(model: Any) -> list[Any]:
    """Every Embedding layer in a model, nested models included."""
    import keras
    out, todo = [], list(getattr(model, "layers", []))
    while todo:
        layer = todo.pop(0)
        if isinstance(layer, keras.layers.Embedding):
            out.append(layer)
        todo.extend(getattr(layer, "layers", []))
    return out


def first_paragraph(doc: str | None) -> str:
    """A docstring's first paragraph as one line: the Experiment panel's description. Its first line alone cut the
    shapes example's mid-parenthesis ("after 3,000 steps (85-190 s"): a docstring's lines break where the source
    does, not where the sentence ends."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def gan_experiment(module: ModuleType, path: Path) -> Experiment:
    """Build a GAN-shortcut file's models, dry-run them, and return its two-phase `Experiment`."""
    with user_code(f"building the models of {path.name}", path):
        data = module.real_data() if callable(module.real_data) else module.real_data
        noise_dim = int(module.noise_dim)
        g = _model(module.generator, "generator")
        d = _model(module.discriminator, "discriminator")
        make_opt = getattr(module, "optimizer", None)
        optimizers = {phase: make_opt(phase) if make_opt else None for phase in ("D", "G")}
    spec = describe(data, f"real_data() in {path.name}")
    split = _split(spec, getattr(module, "conditional", False), path)
    if spec.kind == "structure" and split.x is not None:  # (x, y): the images are x; the labels are integers
        note = unscaled_warning(np.asarray(spec.arrays[split.x]), f"real_data() in {path.name}")
        if note and note not in spec.warnings:
            spec.warnings.append(note)
    dry_run(g, d, spec, split, noise_dim, path)
    lr = getattr(module, "learning_rate", 2e-4)
    lrs = lr if isinstance(lr, dict) else {"D": lr, "G": lr}
    unknown = sorted(str(k) for k in lrs if k not in ("D", "G"))
    if unknown:  # a typo here left that phase at the default rate without a word
        raise UserError(f"learning_rate in {path.name} names {', '.join(repr(k) for k in unknown)}, but the GAN "
                        f"shortcut's phases are D and G; write learning_rate = {{\"D\": ..., \"G\": ...}}")
    d_loss, g_loss = gan_losses(noise_dim, split)
    phases = [Phase(phase, loss, trains=[model.name], learning_rate=float(lrs.get(phase, 2e-4)),
                    optimizer=optimizers[phase])
              for phase, loss, model in (("D", d_loss, d), ("G", g_loss, g))]
    row = (spec.rows if split.x is None else spec.rows[split.x]).shape  # one image's (or point's) shape
    kind = getattr(module, "sample_kind", None) or ("points2d" if row == (2,) else "images" if len(row) in (2, 3)
                                                     else "none")
    ratio = getattr(module, "ratio", None)
    try:
        default_ratio = None if ratio is None else parse_ratio(str(ratio))
    except UserError:
        raise UserError(f"ratio in {path.name} must be counts per phase like \"5:1\", got {ratio!r}") from None
    metrics = getattr(module, "metrics", None)
    if metrics is not None and not callable(metrics):
        raise UserError(f"metrics in {path.name} must be a function of ctx returning {{name: number}}, "
                        f"got {type(metrics).__name__}")
    sample = getattr(module, "sample", None)
    if sample is not None and not callable(sample):
        raise UserError(f"sample in {path.name} must be a function of ctx returning the samples' arrays "
                        f"(e.g. {{\"real\": ..., \"fake\": ...}}), got {type(sample).__name__}")
    return Experiment(name=path.stem, models=Models(generator=g, discriminator=d), phases=phases, data=data,
                      batch_size=int(getattr(module, "batch_size", 64)), sample=sample or gan_sampler(noise_dim, split),
                      sample_kind=kind, metrics=metrics,
                      default_ratio=default_ratio,
                      description=getattr(module, "description", first_paragraph(module.__doc__)))
