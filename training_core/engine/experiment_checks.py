"""What preparing checks of the models and losses an experiment gives, each problem told in one line
(engine/prepare.py calls these at its stages): models without variables, a phase whose model's variables
do not carry its name, a loss with no gradient for what it trains, an optimizer the exact method cannot
honour; and which variables are statistics the masked step puts back.
"""
from __future__ import annotations

from typing import Any, Sequence

from training_core.base.errors import UserError
from training_core.experiment.api import Models


def model_variables(models: Models) -> list[Any]:
    """Every model's variables, each once (models may share layers), in the models' order. A model with none
    is refused: Keras builds a model's variables at its first call, and one never called has nothing to
    train, checkpoint or freeze."""
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


def unscoped_model_line(phase: Any, models: Models, unknown: Sequence[str]) -> str | None:
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


def gradient_warnings(st: Any, file: str) -> list[str]:
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


def is_stat(v: Any) -> bool:
    """Non-trainable float state a forward pass may change (BatchNormalization moving mean/variance)."""
    return not v.trainable and "float" in str(v.dtype) and "seed_generator" not in v.path


def check_optimizer(phase: str, opt: Any) -> None:
    """What the exact method needs of a phase's optimizer, each refusal one line (also `run.apply_gradients`'s,
    monitor/exact_update.py)."""
    import keras
    if not isinstance(opt, keras.optimizers.Optimizer):
        raise UserError(f"phase {phase!r}: optimizer must be a Keras optimizer, got {type(opt).__name__} "
                        f"{opt!r:.40}; give e.g. keras.optimizers.Adam(1e-3)")
    if getattr(opt, "use_ema", False) or getattr(opt, "gradient_accumulation_steps", None):
        raise UserError(f"phase {phase!r}: optimizers with use_ema or gradient_accumulation_steps are not "
                        f"supported; remove those options")
    # Loss scaling expects the loss scaled before differentiation, which the step does not do; the masked
    # variant could not unscale dynamically either, so the two variants would train differently.
    if getattr(opt, "loss_scale_factor", None) is not None or isinstance(opt, keras.optimizers.LossScaleOptimizer):
        raise UserError(f"phase {phase!r}: loss-scaling optimizers (loss_scale_factor, LossScaleOptimizer) are "
                        f"not supported; use the plain optimizer")
