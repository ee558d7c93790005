"""Live control latency: how many steps between sending a command and its effect, and how many traces
after warm-up. The change is sent from another thread while training runs at full speed."""
from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

import numpy as np


def measure_control(steps: int = 600) -> dict:
    from training_core import (Observer, RunConfig, SetFreeze, SetLearningRate, SetRatio, Trainer,
                               read_events, read_scalars)
    run_dir = Path(tempfile.mkdtemp(prefix="ff-bench-control-")) / "run"
    trainer = Trainer(RunConfig(example="ring", steps=steps, run_dir=str(run_dir), var_every=1), Observer())
    trainer.prepare()
    before_first_step = trainer.traces  # the rest of the warm-up traces come during the run (loop/warmup.py)
    thread = threading.Thread(target=trainer.run)
    thread.start()
    plan = [SetFreeze(scopes=("discriminator/dense_1",)), SetRatio(policy={"policy": "fixed", "ratio": [5, 1]}),
            SetLearningRate(phase="G", value=5e-5), SetFreeze(scopes=()), SetFreeze(scopes=("discriminator/dense_1",))]
    sent_at = []
    for cmd in plan:
        while trainer.step < (len(sent_at) + 1) * steps // (len(plan) + 1):
            time.sleep(0.001)
        sent_at.append(trainer.step)
        trainer.send(cmd)
    thread.join()
    events = read_events(run_dir)
    sc = read_scalars(run_dir)
    applied = [e for e in events if e.kind in ("freeze", "ratio", "lr")]
    lags = [a.step - s for a, s in zip(applied, sent_at)]
    # effect: the frozen kernel's first zero update comes at the first D step after the freeze event
    first_freeze = applied[0].step
    un = sc["update_norm/discriminator/dense_1/kernel"]
    d_steps = sc["loss/D"].steps
    next_d = int(d_steps[d_steps > first_freeze][0])
    zero_from = int(un.steps[(un.steps > first_freeze) & (un.values == 0)][0])
    nonzero_after = int(np.count_nonzero(un.values[(un.steps > first_freeze) & (un.steps <= applied[3].step)]))
    return {"steps_from_send_to_apply": lags, "freeze_event_step": first_freeze, "first_zero_update_step": zero_from,
            "first_D_step_after_freeze": next_d, "nonzero_updates_while_frozen": nonzero_after,
            "traces_at_warm_up": trainer.traces - trainer.retraces, "traces_before_first_step": before_first_step,
            "traces_after_warm_up": trainer.retraces}
