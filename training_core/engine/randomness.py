"""Finding random draws that escape the run's seeded generators.

A loss that calls `tf.random.normal` gets numbers from a stateful kernel of its own: the run's seed
fixes its stream only through TensorFlow's global seed, and a checkpoint does not save its state, so a
run resumed from a checkpoint draws different numbers, silently. `ctx.normal`/`ctx.uniform` draw from
the run's `tf.random.Generator`, which is seeded and checkpointed. Its ops are `RngReadAndSkip` on its own state variable followed by
`StatelessRandom*V2`; everything else that draws statefully is found here in the traced step's graph
(and in the graphs of the functions it calls, e.g. `tf.cond` branches) so the run can warn about it.
"""
from __future__ import annotations

from typing import Any, Iterable

from training_core.engine.keras_private import called_function_graphs

#: kernels that draw from TensorFlow's global random state (tf.random.normal, uniform, shuffle, ...)
GLOBAL_RANDOM_OPS = frozenset({
    "RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal", "RandomShuffle",
    "Multinomial", "RandomGamma", "RandomPoisson", "RandomPoissonV2", "ParameterizedTruncatedNormal",
    "RandomCrop",
})
#: kernels of a `tf.random.Generator`: fine when the generator is the run's own
GENERATOR_OPS = frozenset({
    "RngReadAndSkip", "RngSkip", "StatefulUniform", "StatefulUniformInt", "StatefulUniformFullInt",
    "StatefulStandardNormal", "StatefulStandardNormalV2", "StatefulTruncatedNormal", "StatefulRandomBinomial",
})


def escaping_random_ops(functions: Iterable[Any], generators: Iterable[Any]) -> list[str]:
    """Op types in the traced `functions` (tf ConcreteFunctions) that draw random numbers outside the
    given `generators` (tf.random.Generator): sorted, each once. Functions the step calls (the shared
    forward/backward pass, `tf.cond` branches) are searched too, with the same test."""
    # a generator made under a strategy has one state variable per replica, each captured on its device
    own = {id(c.handle) for v in generators for c in getattr(v.state, "values", (v.state,))}
    found: set[str] = set()
    seen: set[int] = set()
    graphs = [cf.graph for cf in functions]
    while graphs:
        graph = graphs.pop()
        if id(graph) in seen:
            continue
        seen.add(id(graph))
        owned_inputs = {internal.ref() for external, internal in graph.captures if id(external) in own}
        for op in graph.get_operations():
            if op.type in GLOBAL_RANDOM_OPS:
                found.add(op.type)
            elif op.type in GENERATOR_OPS and (not op.inputs or op.inputs[0].ref() not in owned_inputs):
                found.add(op.type)  # a tf.random.Generator of the user's own: not seeded by the run
        graphs.extend(called_function_graphs(graph))
        for fn in graph.as_graph_def().library.function:  # what has no Python graph left (e.g. imported)
            found.update(n.op for n in fn.node_def if n.op in GLOBAL_RANDOM_OPS)
    return sorted(found)
