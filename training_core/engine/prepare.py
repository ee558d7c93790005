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

from training_core.base.alternation import Policy, policy_from_dict
from training_core.base.config import RunConfig
from training_core.base.errors import UserError
from training_core.base.planned import check_planned
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
from training_core.engine import keras_private
from training_core.engine.experiment_checks import (check_optimizer, gradient_warnings, is_stat, model_variables,
                                                   unscoped_model_line)
from training_core.engine.randomness import escaping_random_ops
from training_core.experiment.api import Experiment
from training_core.experiment.loading import (
    build_experiment,
    check_batch_size,
    data_name,
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


def _make_optimizer(phase: Any, lr: float | None) -> Any:
    import keras
    opt = phase.optimizer if phase.optimizer is not None else keras.optimizers.Adam(phase.learning_rate, beta_1=0.5)
    check_optimizer(phase.name, opt)
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
    """Everything a run needs, from `config`; the steps call `on_trace(phase, variant)` when a variant is traced.

    In stages, each a function below whose docstring says why it comes where it does: what can fail
    without TensorFlow first, then TensorFlow, the placement, the file, the models, the settings checked
    against them, the optimizers, the steps, the first traces, and the configuration as it resolved."""
    config, source, chief = _check_before_tensorflow(config)
    clock = _Stages()
    tf, keras = _start_tensorflow(config, clock)
    placement, sample_rng = _place(config, clock)
    module = _load(config, source, placement, clock)
    keras.utils.set_random_seed(config.seed)  # again: build() starts from the seed, whatever the import drew
    with (tf.device(placement.device) if placement.strategy is None else placement.scope()):
        exp, variables, infos = _build(config, module, source, clock)
        names = [p.name for p in exp.phases]
        freeze, policy = _check_settings(config, exp, names, infos)
        phase_vars, optimizers = _build_optimizers(config, exp, variables, infos, clock)
        rng, data, stats, steps = _make_steps(config, placement, exp, optimizers, phase_vars, variables, on_trace,
                                              clock, data_name(module, source))
    warnings = default_name_warnings(exp.models) + untrained_nested_warnings(
        exp.models, [v.path for vs in phase_vars for v in vs]) + list(getattr(data, "warnings", []))
    at_start, deferred = _trace_plan(config, placement, freeze, phase_vars, stats)
    warnings += _trace_now(steps, placement.device, deferred + at_start, rng, source, clock)
    resolved = _resolved_config(config, source, chief, exp, policy, freeze, optimizers, placement)
    return Prepared(
        config=resolved, experiment=exp, device=placement.device, device_name=placement.description,
        variables=variables, var_infos=infos, tree=build_scope_tree(infos), phase_names=names,
        phase_paths=[tuple(v.path for v in vs) for vs in phase_vars], optimizers=optimizers, steps=steps,
        stat_paths=tuple(v.path for v in stats), policy=policy, freeze=freeze, rng=rng, sample_rng=sample_rng,
        data=data, warnings=warnings, placement=placement, timings=clock.stages, source=source,
        at_start=at_start, deferred=deferred)


def _check_before_tensorflow(config: RunConfig) -> tuple[RunConfig, Path, bool]:
    """The configuration, the experiment file's path and whether this process is the chief. First, because
    none of it needs TensorFlow (~4 s to import): a typo in an option, a missing file or a run directory
    another run holds answers at once. The collective logs are quietened here because that must happen
    before TensorFlow is imported."""
    config = config.validate()
    source = require_file(_experiment_source(config))
    from training_core.engine.distribute import is_chief, quiet_collective_logs
    chief = is_chief(config.strategy)
    quiet_collective_logs(config.strategy)
    if config.run_dir and chief:
        check_run_dir_free(config.run_dir)
    return config, source, chief


def _start_tensorflow(config: RunConfig, clock: _Stages) -> tuple[Any, Any]:
    """TensorFlow imported quietly, with its thread count, then Keras (which imports TensorFlow's backend).
    Op determinism is switched on here because it must be before the first op."""
    from training_core.engine.tf_quiet import import_tensorflow
    tf = import_tensorflow(config.intra_op_threads)
    if config.deterministic:  # before the first op
        tf.config.experimental.enable_op_determinism()
    import keras
    clock.lap("import")
    return tf, keras


def _place(config: RunConfig, clock: _Stages) -> tuple[Any, Any]:
    """The placement (device or `tf.distribute` strategy) and the generator samples draw from. The placement
    comes before TensorFlow's first op: logical CPU devices and a multi-worker server can only be set up
    then. The sample generator is made outside the strategy's scope: only the run's own process draws
    samples."""
    import tensorflow as tf

    from training_core.engine.distribute import make_placement
    from training_core.engine.measuring import sample_generator
    placement = make_placement(config.strategy, config.replicas, config.device)
    clock.lap("placement")
    with tf.device(placement.device):
        sample_rng = sample_generator(config.seed)
    return placement, sample_rng


def _load(config: RunConfig, source: Path, placement: Any, clock: _Stages) -> Any:
    """The experiment file imported, with Keras' names counted afresh and its seed set first.

    Keras numbers unnamed layers and every SeedGenerator (Dropout, GaussianNoise, ...) by a counter global to
    the thread; the window's training process prepares run after run on one thread, so without a reset the
    same file got `seed_generator_2/...` paths in its second run, and its checkpoints no longer fit a resume.
    A GAN-shortcut file may make its models at import ("a function returning a model, or a model"): seed
    before importing too, or their initial weights differ from run to run whatever --seed says. Imported in
    the placement's scope, so a module-level optimizer is placed on every replica."""
    config.refuse_monitored_script()  # before importing: the import would run the user's training
    import keras
    keras_private.reset_layer_name_counters()
    keras.utils.set_random_seed(config.seed)
    with placement.scope():
        module = load_module(source)
    clock.lap("load")
    return module


def _build(config: RunConfig, module: Any, source: Path, clock: _Stages) -> tuple[Experiment, list[Any], list[VarInfo]]:
    """The experiment built (its `build()` called), its variables and their descriptions: the first stage
    that runs the user's model code, in the placement's scope (the caller's) so the models' variables are
    placed as the run needs; a model without variables is refused before anything is checked against them."""
    exp = build_experiment(module, source)
    if config.batch_size:
        check_batch_size(config.batch_size, exp, source)
        exp.batch_size = config.batch_size
    variables = model_variables(exp.models)
    clock.lap("build")
    infos = [VarInfo(v.path, tuple(int(d) for d in v.shape), str(v.dtype), bool(v.trainable)) for v in variables]
    return exp, variables, infos


def _check_settings(config: RunConfig, exp: Experiment, names: list[str],
                    infos: list[VarInfo]) -> tuple[tuple[str, ...], Policy | None]:
    """The learning rates' phases, the freeze set and the schedule checked against the experiment (its
    phases and variables, known only now), before any optimizer is built. Without a schedule in the
    configuration, the experiment's default ratio (or one step each). The planned changes too."""
    schedule = config.schedule or {"policy": "fixed", "ratio": list(exp.default_ratio or [1] * len(names))}
    # a configuration read from a file (`source`) names its keys there; not the experiment's default ratio
    in_file = (config.source, ("lr", "freeze") + (("schedule",) if config.schedule else ())) if config.source else None
    checked = check_controls(config.lr, config.freeze, schedule, names, infos, in_file)
    check_planned(config.planned, names, infos)  # a bad planned change, refused now rather than at its step
    return checked


def _build_optimizers(config: RunConfig, exp: Experiment, variables: list[Any], infos: list[VarInfo],
                      clock: _Stages) -> tuple[list[list[Any]], list[Any]]:
    """Each phase's variables (what its `trains` covers) and its optimizer, built once with all of them
    (Keras 3 style: build once, apply to subsets). Phase by phase, in order, so the first bad phase is the
    one named: a scope that does not exist, one with nothing trainable, an unsupported optimizer or one
    shared with an earlier phase."""
    trainable = [v for v in variables if v.trainable]
    phase_vars: list[list[Any]] = []
    optimizers: list[Any] = []
    for p in exp.phases:
        vs = [v for v in trainable if any(in_scope(v.path, s) for s in p.trains)]
        # a typo in trains left those variables untrained without a word (a scope of layers Keras made
        # trainable=False, a frozen backbone, is no typo: it exists and has nothing to train)
        unknown = [s for s in p.trains if not any(in_scope(v.path, s) for v in variables)]
        if unknown:
            raise UserError(unscoped_model_line(p, exp.models, unknown) or f"phase {p.name!r} trains an "
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
    return phase_vars, optimizers


def _make_steps(config: RunConfig, placement: Any, exp: Experiment, optimizers: list[Any],
                phase_vars: list[list[Any]], variables: list[Any], on_trace: Callable[[str, str], None],
                clock: _Stages, where: str) -> tuple[Any, Any, list[Any], list[Any]]:
    """The run's generator, the data (engine/datasets.py: variables, or a pipeline's iterator), the statistics a
    forward pass may change, and one step per phase (not traced yet). Last in the placement's scope (the
    caller's): the generator's state and the data are placed like the models' variables, and each step needs
    its built optimizer. `where` names the data in its errors (`data_name`)."""
    import tensorflow as tf

    from training_core.engine.datasets import run_data
    from training_core.engine.phase_step import StepSpec
    rng = tf.random.Generator.from_seed(config.seed)  # in the scope: one stream per replica
    data = run_data(exp, config.jit, where)
    stats = [v for v in variables if is_stat(v)]
    steps = [_make_step(placement, StepSpec(phase=p, models=exp.models, optimizer=opt, variables=tuple(vs),
                                            stats=tuple(stats), rng=rng, data=data, batch_size=exp.batch_size,
                                            extra=exp.extra, on_trace=on_trace, jit=config.jit))
             for p, opt, vs in zip(exp.phases, optimizers, phase_vars)]
    clock.lap("steps")
    return rng, data, stats, steps


def _trace_plan(config: RunConfig, placement: Any, freeze: tuple[str, ...], phase_vars: list,
                stats: list) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(phase index, variant) left for `warmup.WarmUp` to trace: (other phases' starting variants, after the
    first step; every other variant, once every phase stepped). On one device only the first phase's
    starting variant is traced while preparing (loop/warmup.py says why); with replicas, everything."""
    single = placement.strategy is None
    first = _first_variants(config, freeze, phase_vars, stats)
    at_start = [(i, f) for i, f in enumerate(first) if single and i > 0]
    deferred = [(i, v) for i, f in enumerate(first) for v in ("fast", "masked") if single and v != f]
    return at_start, deferred


def _trace_now(steps: list, device: str, later: list[tuple[int, str]], rng: Any, source: Path,
               clock: _Stages) -> list[str]:
    """Trace every variant not left for later (`later`), and check the loss of every phase whose variants are
    all left for later (its forward and backward pass traced: where user code fails, so it fails here,
    before the run directory exists). Returns the warnings the traces tell: variables without a gradient,
    random draws that escape the run's generators. Under the loop's device: traced where the loop calls them
    (a strategy's scope would be another trace)."""
    import tensorflow as tf
    warnings: list[str] = []
    with tf.device(device):
        for i, st in enumerate(steps):
            now = [v for v in ("fast", "masked") if (i, v) not in later]
            with user_code(f"the loss of phase {st.phase.name!r} in {source.name}", source):
                st.warm_up(clock, now)
                traced = [getattr(st, v).get_concrete_function() for v in now] or [st.check_loss(clock)]
            warnings += gradient_warnings(st, source.name)
            ops = escaping_random_ops(traced, [rng])
            if ops:
                warnings.append(f"phase {st.phase.name}'s loss draws from tf.random ({', '.join(ops)}), whose state the "
                                f"run's checkpoints do not save; use ctx.normal/ctx.uniform")
    return warnings


def _resolved_config(config: RunConfig, source: Path, chief: bool, exp: Experiment, policy: Policy | None,
                     freeze: tuple[str, ...], optimizers: list[Any], placement: Any) -> RunConfig:
    """The configuration as it resolved (what `config.toml` records and a resume starts from): the file's hash,
    the schedule, each phase's learning rate, the freeze set, the batch size and the placement. Last, because
    it records what the stages before found."""
    import keras
    return RunConfig.from_dict({
        **config.to_dict(),
        "experiment_sha256": file_sha256(source) if config.experiment_file else None,
        "schedule": policy.to_dict(),
        "lr": {p.name: float(f"{float(keras.ops.convert_to_numpy(o.learning_rate)):.7g}")
               for p, o in zip(exp.phases, optimizers)},
        "freeze": list(freeze),
        "batch_size": exp.batch_size,
        "device": config.device,
        "strategy": placement.kind,
        "replicas": placement.replicas if placement.kind == "mirrored" else 0,
        # a non-chief worker checkpoints into a scratch directory; the chief's run directory is the record
        "run_dir": config.run_dir if chief else tempfile.mkdtemp(prefix="freezeframe-worker-"),
    } | ({} if config.experiment_file else {"example": config.example}))


def check_controls(lr: Iterable[str], freeze: Iterable[str], schedule: dict[str, Any] | None,
                   phase_names: Sequence[str], variables: Sequence[VarInfo],
                   in_file: tuple[str, Sequence[str]] | None = None) -> tuple[tuple[str, ...], Policy | None]:
    """The learning rates' phases, the freeze set's scopes and the schedule (one count per phase), checked
    against the experiment: a new run's settings here, and the settings given with `--resume` (loop/restore.py)
    the same way, so that both are refused with the same line before the run directory is touched.
    Returns the normalised freeze set and the policy (None without a schedule). `in_file`: (the file, its keys
    among lr, freeze, schedule) when those values were read from a file: an error names the file and the key."""
    file, keys = in_file or ("", ())
    unknown = sorted(set(lr) - set(phase_names))
    if unknown and "lr" in keys:
        raise UserError(f"{file}: {', '.join(f'lr.{x}' for x in unknown)} names no phase of the experiment; phases "
                        f"are {', '.join(phase_names)}: fix the key")
    if unknown:
        raise UserError(f"--lr names unknown phase(s) {', '.join(unknown)}; phases are {', '.join(phase_names)}")
    key = "freeze"
    try:
        scopes = resolve_scopes(freeze, variables)
        key = "schedule"
        return scopes, None if schedule is None else policy_from_dict(schedule, phase_names)
    except UserError as e:
        raise UserError(f"{file}: {key}: {e}") if key in keys else e from None


def _first_variants(config: RunConfig, freeze: tuple[str, ...], phase_vars: list, stats: list) -> list[str]:
    """Each phase's variant at its first step, as `Trainer.set_freeze` will choose it: masked if the freeze set
    at the start touches the phase's variables, or statistics it must put back."""
    restore = any(frozen_mask([v.path for v in stats], freeze)) and not config.update_frozen_stats
    return ["masked" if restore or any(frozen_mask([v.path for v in vs], freeze)) else "fast" for vs in phase_vars]


def _make_step(placement: Any, spec: Any) -> Any:
    """The step of one phase (`spec`: engine.phase_step.StepSpec): on one device, or over the strategy's replicas."""
    if placement.strategy is None:
        from training_core.engine.phase_step import PhaseStep
        return PhaseStep(spec)
    from training_core.engine.replicated import ReplicatedStep
    return ReplicatedStep(spec, strategy=placement.strategy)


class _Stages:
    """Seconds spent in each stage of preparing (start-up of wide models is measured, not guessed)."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = self.stages.get(name, 0.0) + now - self._t
        self._t = now
