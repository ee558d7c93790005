"""A headless run steered by a second process (this test process) through `commands.jsonl`, as a user
would from a laptop: shared by the steering, lock and replay tests (conftest.py makes it once).

Every wait is for an event or for rows (generous timeouts); nothing sleeps to see that something did
not happen: a pause is checked by a checkpoint request acknowledged at the pause's own step.
"""
from __future__ import annotations

import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from tests import zygote
from training_core import Continue, Pause, SaveCheckpoint, SetFreeze, SetFreezeMethod, SetRatio, Stop, append_command
from training_core.base import events as E
from training_core.rundir.lock import Holder, read_holder
from training_core.runs import RunData, RunFollower

from .helpers import main_cmd, start, tiny_gan, wait_for

TIMEOUT = 120
FROZEN = "discriminator/dense_1"
#: malformed lines: (id or None, the line, a word the rejection must contain)
BAD_LINES = [
    (None, "garbage", "not JSON"),
    (None, "[1, 2]", "not a JSON object"),
    (None, '{"id": 7, "kind": "pause"}', "id must be a string"),
    ("x1", '{"id": "x1", "kind": "explode"}', "unknown command kind"),
    ("x2", '{"id": "x2", "kind": "lr", "phase": "D", "value": 0.001, "speed": 1}', "unknown field"),
    ("x3", '{"id": "x3", "kind": "lr", "phase": "D", "value": "fast"}', "finite number"),
    ("x4", '{"id": "x4", "kind": "freeze", "scopes": ["discriminator/dense_9"]}', "unknown scope"),
    ("x5", '{"id": "x5", "kind": "ratio", "policy": {"ratio": [1e400, 1]}}', "malformed"),
    ("x6", '{"id": "x6", "kind": "lr", "phase": "D", "value": NaN}', "finite number"),  # echoed: not as bare NaN
]


@dataclass
class SteeredRun:
    dir: Path
    experiment: Path
    pid: int
    returncode: int
    holder: Holder | None  # the lock while it ran
    refused: subprocess.CompletedProcess  # a second writer's attempt
    acks: dict[str, E.Event] = field(default_factory=dict)


class Steer:
    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        self.data = RunData(run_dir)
        self.follower = RunFollower(run_dir, self.data)
        self.acks: dict[str, E.Event] = {}

    def poll(self) -> None:
        self.follower.poll()
        for e in self.data.events:
            cid = getattr(e, "id", None)
            if cid is not None:
                self.acks.setdefault(cid, e)

    def wait_ack(self, cid: str) -> E.Event:
        assert wait_for(lambda: (self.poll(), cid in self.acks)[1], TIMEOUT), f"no acknowledgement of {cid}"
        return self.acks[cid]

    def send(self, command: Any, cid: str) -> E.Event:
        append_command(self.dir, command, cid)
        return self.wait_ack(cid)

    def write(self, text: str) -> None:
        with open(self.dir / "commands.jsonl", "a", encoding="utf-8") as f:
            f.write(text)

    def advance(self, steps: int) -> None:
        """Wait until the losses are recorded `steps` steps past the last acknowledgement."""
        target = max((e.step for e in self.acks.values()), default=0) + steps
        assert wait_for(lambda: (self.poll(), self.data.last_step >= target)[1], TIMEOUT), f"no rows up to {target}"


@contextmanager
def killed_if_left(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """`proc` killed on the way out if it still runs (a failed wait), so that no run trains on behind the tests."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def steer_a_run(tmp: Path) -> SteeredRun:
    exp = tiny_gan(tmp)
    run_dir = tmp / "steered"
    proc = start(main_cmd("--headless", "--experiment", str(exp), "--run-dir", str(run_dir), "--deterministic",
                          "--var-every", "1", "--quiet"))
    try:
        s = Steer(run_dir)
        assert wait_for(lambda: (s.poll(), s.data.start is not None)[1], TIMEOUT), proc.stderr
        holder = read_holder(run_dir)
        refused = zygote.run(main_cmd("--headless", "--experiment", str(exp), "--run-dir", str(run_dir),
                                      "--steps", "5"), capture_output=True, text=True, timeout=TIMEOUT)
        s.advance(30)
        s.send(SetFreeze(scopes=[FROZEN]), "f1")
        s.advance(60)
        s.send(SetRatio(policy={"policy": "fixed", "ratio": [3, 1]}), "r1")
        s.advance(60)
        s.write("".join(line + "\n" for _, line, _ in BAD_LINES))
        s.write('{"id": "l1", "kind": "lr", ')  # a line in two writes: the first half must wait
        s.advance(20)
        s.write('"phase": "D", "value": 0.001}\n')
        s.wait_ack("l1")
        s.advance(60)
        s.send(SetFreezeMethod(method="gate"), "m1")
        s.advance(60)
        s.send(Pause(), "p1")
        s.send(SaveCheckpoint(), "c1")  # acknowledged at the pause's step: nothing trained in between
        s.send(Continue(), "q1")
        s.advance(60)
        append_command(run_dir, Stop(), "s1")
        proc.communicate(timeout=TIMEOUT)
        s.poll()
        return SteeredRun(run_dir, exp, proc.pid, proc.returncode, holder, refused, s.acks)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
