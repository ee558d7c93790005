"""From a `RunConfig` to everything the training loop needs: models built, variables found, phases
resolved to variables, optimizers built once with all their variables (Keras 3 style: build once,
apply to subsets), and both variants of every compiled step traced.

All of it happens before the run directory exists, so bad input (an unknown scope, a ratio of the
wrong length, an experiment file that raises, a loss that fails to trace) stops here with a one-line
`UserError` and nothing half-written.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from training_core.base.alternation import Policy, policy_from_dict
from training_core.base.config import RunConfig
from training_core.base.errors import UserError
from training_core.base.scopes import (
    ScopeNode,
    VarInfo,
    build_scope_tree,
    default_name_warnings,
    frozen_mask,
    in_scope,
    resolve_scopes,
    unknown_scope_message,
    untrained_nested_warnings,
)
from training_core.engine.randomness import escaping_random_ops
from training_core.experiment.api import Experiment, Models
from training_core.experiment.loading import (
    build_experiment,
    check_batch_size,
    example_path,
    file_sha256,
    load_module,
    require_file,
)
from training_core.experiment.usercode import user_code
from training_core.rundir.writer import check_run_dir_free


@dataclass
class Prepared:
    config: RunConfig  # resolved: learning rates, schedule, device filled in
    experiment: Experiment
    device: str
    device_name: str
    variables: list[Any]
    var_infos: list[VarInfo]
    tree: ScopeNode
    phase_names: list[str]
    phase_paths: list[tuple[str, ...]]
    optimizers: list[Any]
    steps: list[Any]  # PhaseStep
    stat_paths: tuple[str, ...]
    policy: Policy
    freeze: tuple[str, ...]
    rng: Any
    sample_rng: Any
    data: Any
    #: one line each, for the trainer to emit as `warning` events (e.g. a loss drawing from tf.random)
    warnings: list[str] = field(default_factory=list)
    placement: Any = None  # distribute.Placement: the strategy, replicas, chief
    #: seconds per stage of preparing: import, placement, load, build, optimizers, steps, trace <phase> <variant>
    timings: dict[str, float] = field(default_factory=dict)
    source: Path | None = None  # the experiment's file (where a failure's line number points)
    #: (phase index, variant) left for `warmup.WarmUp` to trace: other phases' starting variants after the first
    #: step (their losses checked already), the other variants once every phase stepped
    at_start: list[tuple[int, str]] = field(default_factory=list)
    deferred: list[tuple[int, str]] = field(default_factory=list)


def _experiment_source(config: RunConfig) -> Path:
    if config.experiment_file:
        return Path(config.experiment_file)
    if not config.example:
        raise UserError("no experiment given; pass --example NAME or --experiment FILE")
    return example_path(config.example)


def _model_variables(models: Models) -> list[Any]:
    seen, out = set(), []
    for name, m in models.items():
        vs = list(getattr(m, "variables", []))
        if not vs:
            raise UserError(f"model {name!r} has no variables yet; build it (keras.Input or model.build(shape)) "
                            f"before returning it")
        for v in vs:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def _unscoped_model_line(phase: Any, models: Models, unknown: Sequence[str]) -> str | None:
    """Why a phase that trains a model by its name found no variable under it, when the model's variables
    do not read `name/...`: Keras names a functional model's variables (keras.Model(inputs, outputs)) by its
    layers alone, since they are built before the model exists. The GAN shortcut trains each model by its
    name, so such a file was told to "name scopes that exist", which it had not written. Only for a model whose
    own name is the unknown scope (`unknown`): any other unknown scope is a typo, named as one."""
    for key, m in models.items():
        name = str(getattr(m, "name", key))
        if name not in unknown and key not in unknown:
            continue
        outside = [v.path for v in getattr(m, "trainable_variables", []) if not v.path.startswith(name + "/")]
        if outside:
            return (f"phase {phase.name!r} trains model {key!r}, but its variables do not read {name}/... "
                    f"({outside[0]}, ...: Keras names a functional model's variables by its layers alone); build "
                    f"its layers inside `with keras.name_scope({name!r}):`, or make it a keras.Sequential")
    return None


def _gradient_warnings(st: Any, file: str) -> list[str]:
    """A phase's variables its loss has no gradient for never train (their update is skipped, as Keras
    does): a warning naming them, or, when that is all of them, one line refusing the run (it used to
    train nothing, exit 0, not a word)."""
    missing, n = st.no_gradient, len(st.vars)
    if not missing:
        return []
    shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
    if len(missing) == n:
        raise UserError(f"phase {st.phase.name!r} in {file}: its loss has no gradient for any of the {n} variable"
                        f"{'s' if n > 1 else ''} it trains ({shown}); compute the loss from the models in its "
                        f"trains, or train the scopes its loss uses")
    return [f"phase {st.phase.name}'s loss has no gradient for {len(missing)} of its {n} variables ({shown}): they "
            f"never train; compute the loss from them, or leave them out of the phase's trains"]


def _is_stat(v: Any) -> bool:
    """Non-trainable float state a forward pass may change (BatchNormalization moving mean/variance)."""
    return not v.trainable and "float" in str(v.dtype) and "seed_generator" not in v.path


def _make_optimizer(phase: Any, lr: float | None) -> Any:
    import keras
    opt = phase.optimizer if phase.optimizer is not None else keras.optimizers.Adam(phase.learning_rate, beta_1=0.5)
    if not isinstance(opt, keras.optimizers.Optimizer):
        raise UserError(f"phase {phase.name!r}: optimizer must be a Keras optimizer, got {type(opt).__name__} "
                        f"{opt!r:.40}; give e.g. keras.optimizers.Adam(1e-3)")
    if getattr(opt, "use_ema", False) or getattr(opt, "gradient_accumulation_steps", None):
        raise UserError(f"phase {phase.name!r}: optimizers with use_ema or gradient_accumulation_steps are not "
                        f"supported; remove those options")
    # Loss scaling expects the loss scaled before differentiation, which the step does not do; the masked
    # variant could not unscale dynamically either, so the two variants would train differently.
    if getattr(opt, "loss_scale_factor", None) is not None or isinstance(opt, keras.optimizers.LossScaleOptimizer):
        raise UserError(f"phase {phase.name!r}: loss-scaling optimizers (loss_scale_factor, LossScaleOptimizer) are "
                        f"not supported; use the plain optimizer")
    if lr is not None:
        set_learning_rate(opt, phase.name, lr)
    return opt


def set_learning_rate(opt: Any, phase: str, value: Any) -> None:
    """Set a phase's learning rate, live or at start; a bad value or a scheduled optimizer is a `UserError`."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise UserError(f"learning rate for {phase} must be a number >= 0, got {value!r}") from None
    if not value >= 0:
        raise UserError(f"learning rate for {phase} must be a number >= 0, got {value!r}")
    try:
        opt.learning_rate = value
    except TypeError:  # Keras: an optimizer built with a LearningRateSchedule has no settable rate
        raise UserError(f"phase {phase}'s optimizer follows a learning-rate schedule, so its rate cannot be set; "
                        f"give the optimizer a number instead of a schedule") from None


def prepare(config: RunConfig, on_trace: Callable[[str, str], None]) -> Prepared:
    # What can be checked without TensorFlow is checked first: a typo answers at once, not after ~4 s.
    config = config.validate()
    source = require_file(_experiment_source(config))
    from training_core.engine.distribute import is_chief, quiet_collective_logs
    chief = is_chief(config.strategy)
    quiet_collective_logs(config.strategy)
    if config.run_dir and chief:
        check_run_dir_free(config.run_dir)
    clock = _Stages()

    from training_core.engine.tf_quiet import import_tensorflow
    tf = import_tensorflow(config.intra_op_threads)
    if config.deterministic:  # before the first op
        tf.config.experimental.enable_op_determinism()
    import keras
    clock.lap("import")

    from training_core.engine.distribute import make_placement
    # Before TensorFlow's first op: logical CPU devices and a multi-worker server can only be set up then.
    placement = make_placement(config.strategy, config.replicas, config.device)
    clock.lap("placement")
    device = placement.device
    with tf.device(device):  # outside the strategy's scope: only the run's own process draws samples
        sample_rng = tf.random.Generator.from_seed(config.seed + 1)
    # Keras numbers unnamed layers and every SeedGenerator (Dropout, GaussianNoise, ...) by a counter global to
    # the thread; the window's training process prepares run after run on one thread, so without a reset the
    # same file got `seed_generator_2/...` paths in its second run, and its checkpoints no longer fit a resume.
    from keras.src.utils.naming import reset_uids
    reset_uids()
    # A GAN-shortcut file may make its models at import ("a function returning a model, or a model"): seed
    # before importing too, or their initial weights differ from run to run whatever --seed says.
    keras.utils.set_random_seed(config.seed)
    with placement.scope():  # a module-level optimizer is made in it too, so it is placed on every replica
        module = load_module(source)
    clock.lap("load")
    keras.utils.set_random_seed(config.seed)
    with (tf.device(device) if placement.strategy is None else placement.scope()):
        exp = build_experiment(module, source)
        if config.batch_size:
            check_batch_size(config.batch_size, exp, source)
            exp.batch_size = config.batch_size
        variables = _model_variables(exp.models)
        clock.lap("build")
        infos = [VarInfo(v.path, tuple(int(d) for d in v.shape), str(v.dtype), bool(v.trainable)) for v in variables]
        trainable = [v for v in variables if v.trainable]
        names = [p.name for p in exp.phases]
        schedule = config.schedule or {"policy": "fixed", "ratio": list(exp.default_ratio or [1] * len(names))}
        freeze, policy = check_controls(config.lr, config.freeze, schedule, names, infos)
        phase_vars, optimizers = [], []
        for p in exp.phases:
            vs = [v for v in trainable if any(in_scope(v.path, s) for s in p.trains)]
            # a typo in trains left those variables untrained without a word (a scope of layers Keras made
            # trainable=False, a frozen backbone, is no typo: it exists and has nothing to train)
            unknown = [s for s in p.trains if not any(in_scope(v.path, s) for v in variables)]
            if unknown:
                raise UserError(_unscoped_model_line(p, exp.models, unknown) or f"phase {p.name!r} trains an "
                                + unknown_scope_message(unknown[0], infos))
            if not vs:
                raise UserError(f"phase {p.name!r} trains {', '.join(p.trains)}, but none of their variables is "
                                f"trainable (Keras trainable=False); train scopes with trainable variables")
            opt = _make_optimizer(p, config.lr.get(p.name))
            shared = [q.name for q, o in zip(exp.phases, optimizers) if o is opt]
            if shared:  # one object's slots and learning rate would serve both phases
                raise UserError(f"phases {shared[0]!r} and {p.name!r} share one optimizer object; give each phase "
                                f"its own (make a new one per phase, e.g. in a function)")
            opt.build(vs)
            phase_vars.append(vs)
            optimizers.append(opt)
        clock.lap("optimizers")
        rng = tf.random.Generator.from_seed(config.seed)  # in the scope: one stream per replica
        data = None if exp.data is None else tf.Variable(np.asarray(exp.data, dtype=np.float32), trainable=False,
                                                         name="real_data")
        stats = [v for v in variables if _is_stat(v)]
        steps = [_make_step(placement, p, exp, opt, vs, stats, rng, data, on_trace, config.jit)
                 for p, opt, vs in zip(exp.phases, optimizers, phase_vars)]
        clock.lap("steps")
    warnings = default_name_warnings(exp.models) + untrained_nested_warnings(
        exp.models, [v.path for vs in phase_vars for v in vs])
    # One device (loop/warmup.py): the first phase's starting variant is traced now; the other phases' losses are
    # checked now (their forward and backward pass traced: where user code fails, so it fails here), their
    # starting variants traced on a thread after the first step, every other variant once every phase
    # stepped. With replicas, everything now.
    single = placement.strategy is None
    first = _first_variants(config, freeze, phase_vars, stats)
    at_start = [(i, f) for i, f in enumerate(first) if single and i > 0]
    deferred = [(i, v) for i, f in enumerate(first) for v in ("fast", "masked") if single and v != f]
    with tf.device(device):  # traced where the loop calls them (a strategy's scope would be another trace)
        for i, st in enumerate(steps):
            now = [v for v in ("fast", "masked") if (i, v) not in deferred + at_start]
            with user_code(f"the loss of phase {st.phase.name!r} in {source.name}", source):
                st.warm_up(clock, now)
                traced = [getattr(st, v).get_concrete_function() for v in now] or [st.check_loss(clock)]
            warnings += _gradient_warnings(st, source.name)
            ops = escaping_random_ops(traced, [rng])
            if ops:
                warnings.append(f"phase {st.phase.name}'s loss draws from tf.random ({', '.join(ops)}), whose state the "
                                f"run's checkpoints do not save; use ctx.normal/ctx.uniform")
    resolved = RunConfig.from_dict({
        **config.to_dict(),
        "experiment_sha256": file_sha256(source) if config.experiment_file else None,
        "schedule": policy.to_dict(),
        "lr": {p.name: float(f"{float(keras.ops.convert_to_numpy(o.learning_rate)):.7g}") for p, o in zip(exp.phases, optimizers)},
        "freeze": list(freeze),
        "batch_size": exp.batch_size,
        "device": config.device,
        "strategy": placement.kind,
        "replicas": placement.replicas if placement.kind == "mirrored" else 0,
        # a non-chief worker checkpoints into a scratch directory; the chief's run directory is the record
        "run_dir": config.run_dir if chief else tempfile.mkdtemp(prefix="freezeframe-worker-"),
    } | ({} if config.experiment_file else {"example": config.example}))
    return Prepared(resolved, exp, device, placement.description, variables, infos, build_scope_tree(infos), names,
                    [tuple(v.path for v in vs) for vs in phase_vars], optimizers, steps,
                    tuple(v.path for v in stats), policy, freeze, rng, sample_rng, data, warnings=warnings,
                    placement=placement, timings=clock.stages, source=source, at_start=at_start,
                    deferred=deferred)


def check_controls(lr: Iterable[str], freeze: Iterable[str], schedule: dict[str, Any] | None,
                   phase_names: Sequence[str], variables: Sequence[VarInfo]) -> tuple[tuple[str, ...], Policy | None]:
    """The learning rates' phases, the freeze set's scopes and the schedule (one count per phase), checked
    against the experiment: a new run's settings here, and the settings given with `--resume` (loop/restore.py)
    the same way, so that both are refused with the same line before the run directory is touched.
    Returns the normalised freeze set and the policy (None without a schedule)."""
    unknown = set(lr) - set(phase_names)
    if unknown:
        raise UserError(f"--lr names unknown phase(s) {', '.join(sorted(unknown))}; phases are "
                        f"{', '.join(phase_names)}")
    scopes = resolve_scopes(freeze, variables)
    return scopes, None if schedule is None else policy_from_dict(schedule, phase_names)


def _first_variants(config: RunConfig, freeze: tuple[str, ...], phase_vars: list, stats: list) -> list[str]:
    """Each phase's variant at its first step, as `Trainer.set_freeze` will choose it: masked if the freeze set
    at the start touches the phase's variables, or statistics it must put back."""
    restore = any(frozen_mask([v.path for v in stats], freeze)) and not config.update_frozen_stats
    return ["masked" if restore or any(frozen_mask([v.path for v in vs], freeze)) else "fast" for vs in phase_vars]


def _make_step(placement: Any, phase: Any, exp: Experiment, opt: Any, vs: list, stats: list, rng: Any, data: Any,
               on_trace: Callable[[str, str], None], jit: bool) -> Any:
    args = (phase, exp.models, opt, vs, stats, rng, data, exp.batch_size, exp.extra, on_trace)
    if placement.strategy is None:
        from training_core.engine.phase_step import PhaseStep
        return PhaseStep(*args, jit=jit)
    from training_core.engine.replicated import ReplicatedStep
    return ReplicatedStep(*args, jit=jit, strategy=placement.strategy)


class _Stages:
    """Seconds spent in each stage of preparing (start-up of wide models is measured, not guessed)."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = self.stages.get(name, 0.0) + now - self._t
        self._t = now
