"""A training service's reports without TensorFlow, for tests of what consumes them (the window's
`Session`, the window's widgets through tests/app/fake_service.py).

`SimulatedTrainer` answers the protocol's requests and commands with the reports a real service sends,
in the same order and with the same meaning (events with the trainer's step numbering, per-variable
rows that are exactly 0 while a variable is frozen under the exact method and decay under the gate
method, a `leak` when a gated variable moves, `pause`/`stop` events with their reasons). Steps only
happen when a test calls `train(n)`, so a test decides exactly what happened and needs no sleeps.
It is a stand-in for widget and model tests only: end-to-end tests run the real training process.
"""
from __future__ import annotations

import copy
import time
from dataclasses import replace

import numpy as np

from training_core import RunConfig, Status, VarInfo, build_scope_tree, in_scope
from training_core.base import commands as C, events as E
from training_core.base import protocol as P
from training_core.base.metrics import MetricsBatch, PhaseBlock

#: the ring example's variables (MLP 2 -> 256 -> 256 -> out), phase D trains discriminator/, G generator/
_RING_SHAPES = {"generator": {"dense_1": (8, 256), "dense_2": (256, 256), "out": (256, 2)},
                "discriminator": {"dense_1": (2, 256), "dense_2": (256, 256), "out": (256, 1)}}
RING_VARS = [VarInfo(f"{model}/{layer}/{leaf}", shape if leaf == "kernel" else shape[1:], "float32", True)
             for model, layers in _RING_SHAPES.items() for layer, shape in layers.items()
             for leaf in ("kernel", "bias")]
PHASES = {"D": "discriminator", "G": "generator"}
DEFAULT_LR = {"D": 1e-4, "G": 2e-4}


def prepared_info(config: RunConfig, variables: list[VarInfo] = RING_VARS,
                  phases: dict[str, str] = PHASES) -> P.PreparedInfo:
    """What a service reports after preparing `config`: resolved schedule, rates and freeze set."""
    c = copy.deepcopy(config)
    names = list(phases)
    c.schedule = c.schedule or {"policy": "fixed", "ratio": [1] * len(names)}
    c.lr = {p: c.lr.get(p, DEFAULT_LR.get(p, 1e-3)) for p in names}
    paths = [tuple(v.path for v in variables if in_scope(v.path, scope)) for scope in phases.values()]
    name = c.experiment_file or c.example or ""
    return P.PreparedInfo(c, list(variables), build_scope_tree(variables), names, paths, (), "points2d", "CPU",
                          f"{name}: a synthetic stand-in (no TensorFlow)")


class SimulatedTrainer:
    """Protocol requests in, protocol reports out (lists, in the order a service sends them)."""

    def __init__(self, variables: list[VarInfo] = RING_VARS, phases: dict[str, str] = PHASES) -> None:
        self.variables, self.phases = variables, phases
        self.info: P.PreparedInfo | None = None
        self.config: RunConfig | None = None
        self.step = 0
        self.running = self.paused = False
        self._ratio: list[int] = []
        self._cycle = 0
        self._steps_left: int | None = None
        self._freeze: tuple[str, ...] = ()
        self._method = "exact"
        self._moving: dict[str, float] = {}  # gated frozen variables still moving: their update norm
        self._leaked: set[str] = set()

    # -- requests ---------------------------------------------------------------------------------------
    def load(self) -> list:
        return [P.Busy("Loading TensorFlow…"), P.Busy(""), P.Loaded(["cpu"])]

    def prepare(self, config: RunConfig) -> list:
        name = config.experiment_file or config.example
        self.info = prepared_info(config, self.variables, self.phases)
        return [P.Busy(f"Preparing {name}…"), P.Prepared(self.info), P.Busy("")]

    def run(self, config: RunConfig) -> list:
        """Start a run (the service's `Run` job up to the first step)."""
        self.config = copy.deepcopy(config)
        info = prepared_info(config, self.variables, self.phases)
        self.step, self.running, self.paused, self._cycle, self._steps_left = 0, True, False, 0, None
        self._moving, self._leaked = {}, set()
        run_dir = config.run_dir or "runs/simulated"
        out = [P.Busy(""), P.RunStarted(config.run_dir or ""),
               self._event(E.Start(device="CPU", experiment=config.example or "", phases=info.phase_names,
                                   phase_variables={p: list(v) for p, v in zip(info.phase_names, info.phase_paths)},
                                   freeze=list(config.freeze), schedule=info.config.schedule, lr=info.config.lr,
                                   method=config.freeze_method, run_dir=run_dir, steps=config.steps))]
        self._ratio = list(info.config.schedule.get("ratio", [1] * len(info.phase_names)))
        self._method = config.freeze_method
        self._freeze = tuple(config.freeze)
        if config.freeze:
            out.append(self._event(E.Freeze(scopes=list(config.freeze), command=C.SetFreeze(config.freeze).to_dict())))
        return out + [P.StatusChanged(self.status())]

    def command(self, cmd: C.Command) -> list:
        """A command applied at the next step boundary, as the trainer's command table does."""
        d = cmd.to_dict()
        if isinstance(cmd, C.Pause):
            return self._pause("user", d)
        if isinstance(cmd, C.Continue):
            self._steps_left = None
            if not self.paused:
                return []
            self.paused = False
            return [self._event(E.Continue(command=d)), P.StatusChanged(self.status())]
        if isinstance(cmd, C.Step):
            if cmd.n < 1:
                return [self._event(E.Rejected(message=f"step count must be >= 1, got {cmd.n!r}", command=d))]
            self._steps_left, self.paused = cmd.n, False
            return [self._event(E.Step(n=cmd.n, command=d))]
        if isinstance(cmd, C.Stop):
            return self._finish("stopped", d)
        if isinstance(cmd, C.SetFreeze):
            self._freeze, self._moving = tuple(cmd.scopes), {}
            return [self._event(E.Freeze(scopes=list(cmd.scopes), update_frozen_stats=cmd.update_frozen_stats,
                                         command=d))]
        if isinstance(cmd, C.SetRatio):
            self._ratio, self._cycle = list(cmd.policy.get("ratio", self._ratio)), 0
            return [self._event(E.Ratio(policy=dict(cmd.policy), command=d))]
        if isinstance(cmd, C.SetLearningRate):
            return [self._event(E.LearningRate(phase=cmd.phase, value=float(cmd.value), command=d))]
        if isinstance(cmd, C.SetFreezeMethod):
            self._method, self._moving = cmd.method, {}
            return [self._event(E.Method(method=cmd.method, command=d))]
        if isinstance(cmd, C.SampleNow):
            return [self._event(E.SampleRequested(command=d)), P.Samples({"kind": "points2d", "step": self.step,
                                                                        "real": np.zeros((4, 2)),
                                                                        "fake": np.ones((4, 2))})]
        return [self._event(E.Rejected(message=f"unsupported command {cmd!r}", command=d))]

    # -- training -----------------------------------------------------------------------------------------
    def train(self, n: int) -> list:
        """Up to `n` steps (fewer if a Step count, the step target or a pause ends them): one metrics batch."""
        out: list = []
        blocks: dict[str, list] = {}
        for _ in range(n):
            if not self.running or self.paused:
                break
            if self.config.steps is not None and self.step >= self.config.steps:
                break
            phase = self._next_phase()
            self.step += 1
            blocks.setdefault(phase, []).append(self.step)
            if self._steps_left is not None:
                self._steps_left -= 1
                if self._steps_left <= 0:
                    self._steps_left = None
                    out += self._batch(blocks) + self._pause("step")
                    blocks = {}
        out = self._batch(blocks) + out if blocks else out
        if self.running and self.config.steps is not None and self.step >= self.config.steps:
            out += self._finish("done")
        return out

    def nan(self, phase: str = "D") -> list:
        """The phase's loss became NaN at the latest step: the trainer reports it and pauses."""
        return [self._event(E.Nan(phase=phase, at_step=self.step, value="nan"))] + self._pause("nan")

    def status(self) -> Status:
        c = self.config
        return Status(step=self.step, phase=self._phase_name(max(self._cycle - 1, 0)) if self.step else "",
                      paused=self.paused, running=self.running, steps_per_s=0.0 if self.paused else 1000.0,
                      elapsed_s=self.step / 1000.0, device="CPU", run_dir=(c.run_dir or "") if c else "",
                      target_steps=c.steps if c else None)

    # -- internals ----------------------------------------------------------------------------------------
    def _event(self, e: E.Event) -> P.Emitted:
        return P.Emitted(replace(e, step=self.step, time=E.now()))

    def _pause(self, reason: str, command: dict | None = None) -> list:
        if self.paused or not self.running:
            return []
        self.paused = True
        return [self._event(E.Pause(reason=reason, command=command)), P.StatusChanged(self.status())]

    def _finish(self, reason: str, command: dict | None = None) -> list:
        if not self.running:
            return []
        self.running = self.paused = False
        stop = self._event(E.Stop(reason=reason, command=command))
        return [stop, P.StatusChanged(self.status()), P.Busy(""), P.RunFinished(self.status())]

    def _phase_name(self, cycle_index: int) -> str:
        names, ratio = list(self.phases), self._ratio
        i = cycle_index % max(sum(ratio), 1)
        for name, r in zip(names, ratio):
            if i < r:
                return name
            i -= r
        return names[0]

    def _next_phase(self) -> str:
        name = self._phase_name(self._cycle)
        self._cycle += 1
        return name

    def _batch(self, blocks: dict[str, list]) -> list:
        out: list = []
        built = []
        for phase, steps in blocks.items():
            paths = tuple(v.path for v in self.variables if in_scope(v.path, self.phases[phase]))
            s = np.asarray(steps, dtype=np.int64)
            frozen = np.array([[any(in_scope(p, f) for f in self._freeze) for p in paths]] * len(s), dtype=bool)
            norm = np.tile(np.linspace(1e-2, 2e-2, len(paths)), (len(s), 1))
            for j, p in enumerate(paths):
                if not frozen[0, j]:
                    continue
                if self._method == "gate":  # momentum moves it for a while, decaying
                    start = self._moving.setdefault(p, norm[0, j])
                    decay = start * 0.5 ** np.arange(1, len(s) + 1)
                    norm[:, j] = np.where(decay > 1e-6, decay, 0.0)
                    self._moving[p] = float(decay[-1])
                    if norm[0, j] > 0 and p not in self._leaked:
                        self._leaked.add(p)
                        out.append(self._event(E.Leak(variable=p, phase=phase, at_step=int(s[0]),
                                                      update_norm=float(norm[0, j]), method="gate")))
                else:
                    norm[:, j] = 0.0
            ratio = norm / 10.0
            loss = 1.0 + 0.1 * np.sin(s / 7.0)
            built.append(PhaseBlock(phase, paths, s, time.time() + s * 1e-3, loss, norm, ratio, norm * 100, frozen,
                                    np.ones(len(s), dtype=bool)))
        return out + [P.Metrics(MetricsBatch(built, self.status()))]  # alarms first, as the trainer's observers
