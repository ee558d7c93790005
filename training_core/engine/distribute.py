"""Several devices and hosts: which `tf.distribute` strategy a run uses, and who the chief is.

`single` is one device (engine/devices.py). `mirrored` is `tf.distribute.MirroredStrategy` over every local GPU
(or `replicas` of them) and, on a machine without GPUs, over `replicas` logical CPU devices, so that the
whole path can be tested on any machine. `multiworker` is `MultiWorkerMirroredStrategy` over the cluster
in `TF_CONFIG` (TensorFlow's own format); the chief writes the run record and takes the commands.

Logical CPU devices and a multi-worker server can only be set up before TensorFlow's runtime starts (its
first op), so the strategy is made first thing when preparing; a process whose runtime already started
with fewer CPU devices gets a one-line error that says to start a new process. Reading TF_CONFIG needs no
TensorFlow, so the trainer knows whether it is the chief before importing it.
"""
from __future__ import annotations

import json
import os
import signal
import threading
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Callable

from training_core.base.errors import UserError
from training_core.base.signal_handlers import handlers

#: CPU replicas of a mirrored run on a machine without GPUs, unless `replicas` says otherwise
DEFAULT_CPU_REPLICAS = 2


@dataclass
class Placement:
    """Where a run's steps execute. `strategy` is None for one device."""

    strategy: Any
    kind: str  # single | mirrored | multiworker
    replicas: int  # replicas in sync (all workers)
    device: str  # TensorFlow device string of the (first) local device
    description: str  # for the status bar and the `start` event
    chief: bool = True
    worker: str = ""  # multiworker: "worker 1 of 2 (localhost:12346)"

    def scope(self) -> Any:
        """The strategy's scope (variables made in it are mirrored), or a no-op for one device."""
        import contextlib
        return self.strategy.scope() if self.strategy is not None else contextlib.nullcontext()


def tf_config() -> dict[str, Any]:
    """TF_CONFIG as a dict; a malformed one is a `UserError`."""
    raw = os.environ.get("TF_CONFIG", "")
    if not raw.strip():
        raise UserError("--strategy multiworker reads the cluster from TF_CONFIG, which is not set; set it as "
                        "TensorFlow documents, e.g. TF_CONFIG='{\"cluster\": {\"worker\": [\"host1:12345\", "
                        "\"host2:12345\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}'")
    try:
        cfg = json.loads(raw)
        cluster, task = cfg["cluster"], cfg["task"]
        kind, index = str(task["type"]), int(task.get("index", 0))
        if kind not in cluster:
            raise KeyError(kind)
        if not 0 <= index < len(cluster[kind]):
            raise UserError(f"TF_CONFIG's task is {kind} {index}, but its cluster has {len(cluster[kind])} {kind}(s), "
                            f"numbered from 0; give each process an index from 0 to {len(cluster[kind]) - 1}")
    except (ValueError, KeyError, TypeError) as e:
        raise UserError(f"TF_CONFIG is not a cluster with this task in it ({type(e).__name__}: {e}); give "
                        f"\"cluster\" (job -> [host:port, ...]) and \"task\" ({{\"type\": ..., \"index\": ...}})") from None
    return cfg


def is_chief(strategy: str) -> bool:
    """Whether this process writes the run record: always, except on a non-chief worker of a multiworker
    run (TensorFlow's rule: the `chief` task, or worker 0 when the cluster has no chief). No TensorFlow."""
    if strategy != "multiworker":
        return True
    cfg = tf_config()
    kind, index = cfg["task"]["type"], int(cfg["task"].get("index", 0))
    return kind == "chief" or (kind == "worker" and index == 0 and "chief" not in cfg["cluster"])


def task_address() -> str:
    cfg = tf_config()
    t = cfg["task"]
    return f"{t['type']} {int(t.get('index', 0))} ({cfg['cluster'][t['type']][int(t.get('index', 0))]})"


def quiet_collective_logs(kind: str) -> None:
    """Before importing TensorFlow: in a multiworker run, a lost peer makes TensorFlow's C++ side log a
    screenful of gRPC errors before the one line that says which worker died. Its error log is turned
    off (TF_CPP_MIN_LOG_LEVEL=3) unless the user asked for more (0 or 1)."""
    if kind == "multiworker" and os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") == "2":
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"


def ensure_logical_cpus(n: int) -> None:
    """Split the CPU into `n` logical devices (they share TensorFlow's thread pools). Only possible before
    the runtime starts; afterwards fine if it already has `n`, else a `UserError`."""
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    have = tf.config.get_logical_device_configuration(cpu) or []
    if len(have) >= n:
        return
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)
    except RuntimeError:  # the runtime already started
        have_n = len(tf.config.list_logical_devices("CPU"))
        if have_n < n:
            raise UserError(f"{n} CPU replicas need {n} logical CPU devices, but TensorFlow already started in this "
                            f"process with {have_n}; run in a new process (e.g. python main.py --headless "
                            f"--strategy mirrored ...)") from None


_mirrored_strategies: dict[tuple[str, ...], Any] = {}


def _mirrored(devices: tuple[str, ...]) -> Any:
    """One MirroredStrategy per device set and process: each strategy numbers its collectives from the same
    start, and TensorFlow's runtime remembers them by number, so a second strategy over the same devices
    (a second run in the window's training process) would clash with the first one's collectives."""
    import tensorflow as tf
    if devices not in _mirrored_strategies:
        _mirrored_strategies[devices] = tf.distribute.MirroredStrategy(list(devices))
    return _mirrored_strategies[devices]


def _wait_for_cluster(make: Callable[[], Any], where: str) -> Any:
    """`make()` the multi-worker strategy: it blocks in TensorFlow's C++ until every worker of `TF_CONFIG` is
    up, holding the GIL, so no Python signal handler can run (Ctrl-C and SIGTERM did nothing, silently;
    only kill -9 stopped a worker whose peers never came). A line says what it waits for, and while it
    waits the two signals have their default action: they end the process at once (the shell reports
    130 and 143), before anything is written."""
    main = threading.current_thread() is threading.main_thread()  # (only the main thread may set handlers)
    with handlers(signal.SIG_DFL) if main else nullcontext():
        print(f"{where}: connecting to the other workers of TF_CONFIG (Ctrl-C stops)", flush=True)  # (handlers set)
        return make()


def make_placement(kind: str, replicas: int, device: str) -> Placement:
    """The strategy for a run. Call before TensorFlow's first op (see the module docstring)."""
    import tensorflow as tf

    from training_core.engine.devices import enable_memory_growth, resolve_device
    if device == "mirrored":  # the window's device choice "mirrored" (also --device mirrored)
        kind = "mirrored"
    if kind == "single":
        dev, name = resolve_device(device)
        return Placement(None, "single", 1, dev, name)
    enable_memory_growth()
    gpus = tf.config.list_physical_devices("GPU")
    if kind == "mirrored":
        if gpus:
            n = replicas or len(gpus)
            if n > len(gpus):
                raise UserError(f"{n} replicas asked for but {len(gpus)} GPU(s) visible; use --replicas {len(gpus)} "
                                f"or fewer")
            devices, what = [f"/GPU:{i}" for i in range(n)], "GPU"
        else:
            n = replicas or DEFAULT_CPU_REPLICAS
            ensure_logical_cpus(n)
            devices, what = [f"/CPU:{i}" for i in range(n)], "CPU"
        strategy = _mirrored(tuple(devices))
        return Placement(strategy, "mirrored", n, devices[0], f"{what} ×{n} (mirrored)")
    if kind == "multiworker":
        chief, where = is_chief(kind), task_address()
        options = tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.AUTO)
        strategy = _wait_for_cluster(lambda: tf.distribute.MultiWorkerMirroredStrategy(communication_options=options),
                                     where)
        n = int(strategy.num_replicas_in_sync)
        local = strategy.extended.worker_devices
        what = "GPU" if gpus else "CPU"
        workers = len(strategy.cluster_resolver.cluster_spec().as_dict().get("worker", [])) + \
            len(strategy.cluster_resolver.cluster_spec().as_dict().get("chief", []))
        plural = "s" if workers != 1 else ""
        return Placement(strategy, "multiworker", n, local[0], f"{what} ×{n} on {workers} worker{plural} (multiworker)",
                         chief=chief, worker=where)
    raise UserError(f"strategy {kind!r} is unknown; use single, mirrored or multiworker")
