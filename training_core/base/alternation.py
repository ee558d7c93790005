"""Alternation policies: which phase runs the next step.

Pure Python on the host, decided between steps, so changing the ratio never touches the compiled
step. A policy is described by a plain dict (`to_dict`/`policy_from_dict`) so it can travel in a
command and sit in `config.toml`.
"""
from __future__ import annotations

from typing import Any, Sequence

from training_core.base.errors import UserError
from training_core.base.scopes import counted


def parse_ratio(text: str) -> list[int]:
    """`"5:1"` -> `[5, 1]`: the form only (a zero count is refused against the phases, `check_counts`)."""
    parts = [p.strip() for p in str(text).split(":")]
    try:
        counts = [int(p) for p in parts]
    except ValueError:
        raise UserError(f"ratio {text!r} is not of the form A:B[:C...] with whole numbers, e.g. 5:1") from None
    if any(c < 0 for c in counts):
        raise UserError(f"ratio {text!r} has a negative count; use whole numbers >= 0, e.g. 5:1")
    if sum(counts) == 0:
        raise UserError(f"ratio {text!r} runs no phase at all; give at least one phase a count > 0, e.g. 1:1")
    return counts


def check_counts(counts: Sequence[int], phase_names: Sequence[str], what: str = "ratio", where: str = "") -> None:
    """Every phase of a fixed ratio takes at least one step. A zero count passed without a word, and the
    phase never ran (`--ratio 5:0`); what stops a phase is freezing what it trains. `what` and `where` name
    the ratio and where it came from (`default ratio`, ` in x.py`)."""
    if any(c < 0 for c in counts):
        return  # (refused as negative, by FixedRatio)
    for name, c in zip(phase_names, counts):
        if c == 0:
            fix = ":".join(str(n or 1) for n in counts)
            raise UserError(f"{what} {':'.join(map(str, counts))}{where} gives phase {name!r} 0 steps, so it would "
                            f"never train; give every phase a count >= 1 (e.g. {fix}), or freeze what {name} "
                            f"trains to stop it")


class Policy:
    """Base: `next_phase(runnable)` picks the phase index for the next step, or None if none can run."""

    needs_loss = False

    def __init__(self, n_phases: int) -> None:
        self.n = n_phases
        self.current = 0
        self.in_phase = 0  # steps taken in the current stay

    def next_phase(self, runnable: Sequence[bool]) -> int | None:
        raise NotImplementedError

    def observe(self, phase: int, loss: float) -> None:
        """Loss of the step just taken (only called when `needs_loss`)."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """Where the policy stands within its cycle (a checkpoint saves it, so a resumed run picks the
        same phases as one never interrupted)."""
        return {"current": self.current, "in_phase": self.in_phase}

    def set_state(self, state: dict[str, Any]) -> "Policy":
        self.current = int(state.get("current", 0)) % self.n
        self.in_phase = int(state.get("in_phase", 0))
        return self

    def continue_from(self, other: "Policy") -> "Policy":
        """Pick up where a replaced policy stood, so a live change does not restart the cycle."""
        self.current, self.in_phase = other.current, other.in_phase
        return self

    def _advance(self) -> None:
        self.current = (self.current + 1) % self.n
        self.in_phase = 0


class FixedRatio(Policy):
    """`counts[i]` steps of phase i, then the next phase, cyclically (`5:1` = n_critic 5)."""

    def __init__(self, counts: Sequence[int]) -> None:
        super().__init__(len(counts))
        if sum(counts) <= 0 or any(c < 0 for c in counts):
            raise UserError(f"ratio {':'.join(map(str, counts))} must have counts >= 0 and at least one > 0")
        self.counts = [int(c) for c in counts]

    def next_phase(self, runnable: Sequence[bool]) -> int | None:
        for _ in range(self.n + 1):
            if self.in_phase < self.counts[self.current] and runnable[self.current]:
                self.in_phase += 1
                return self.current
            self._advance()
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"policy": "fixed", "ratio": list(self.counts)}


class Adaptive(Policy):
    """Stay in a phase until its loss falls below its threshold, at most `max_steps` steps a stay.

    Like fastai's AdaptiveGANSwitcher. Needs each step's loss on the host, which costs one small
    device-to-host read per step; the fixed ratio needs none.
    """

    needs_loss = True

    def __init__(self, thresholds: Sequence[float], max_steps: int = 50, min_steps: int = 1) -> None:
        super().__init__(len(thresholds))
        if max_steps < 1 or min_steps < 1 or min_steps > max_steps:
            raise UserError(f"adaptive policy needs 1 <= min_steps <= max_steps, got {min_steps} and {max_steps}")
        self.thresholds = [float(t) for t in thresholds]
        self.max_steps, self.min_steps = int(max_steps), int(min_steps)
        self._leave = False

    def next_phase(self, runnable: Sequence[bool]) -> int | None:
        if self._leave or self.in_phase >= self.max_steps:
            self._leave = False
            self._advance()
        for _ in range(self.n + 1):
            if runnable[self.current]:
                self.in_phase += 1
                return self.current
            self._advance()
        return None

    def state(self) -> dict[str, Any]:
        return {**super().state(), "leave": self._leave}

    def set_state(self, state: dict[str, Any]) -> "Policy":
        self._leave = bool(state.get("leave", False))
        return super().set_state(state)

    def observe(self, phase: int, loss: float) -> None:
        if phase == self.current and self.in_phase >= self.min_steps and loss < self.thresholds[phase]:
            self._leave = True

    def to_dict(self) -> dict[str, Any]:
        return {"policy": "adaptive", "thresholds": list(self.thresholds), "max_steps": self.max_steps,
                "min_steps": self.min_steps}


def policy_from_dict(d: dict[str, Any], phase_names: Sequence[str], owner: str = "the experiment") -> Policy:
    """Build and validate a policy against the experiment's phases. Anything malformed is a `UserError`:
    a policy may come from a hand-written line of `commands.jsonl`, and a bad one must not end the run.
    `owner` names whose phases they are in a refusal: a script's `start_run` has no experiment ("the run")."""
    try:
        return _policy_from_dict(d, phase_names, owner)
    except (TypeError, ValueError, OverflowError, AttributeError) as e:
        example = {"policy": "fixed", "ratio": [1] * len(phase_names)}
        raise UserError(f"schedule policy {d!r} is malformed ({type(e).__name__}: {e}); "
                        f"write it like {example}"[:400]) from None


def _count(c: Any) -> int:
    if isinstance(c, bool) or not isinstance(c, (int, float)) or c != int(c):
        raise ValueError(f"ratio count {c!r} is not a whole number")
    return int(c)


def _policy_from_dict(d: dict[str, Any], phase_names: Sequence[str], owner: str) -> Policy:
    n = len(phase_names)
    if not isinstance(d, dict):
        raise UserError(f"a schedule is a table such as {{policy = \"fixed\", ratio = [1, 1]}}, got {d!r}")
    kind = d.get("policy", "fixed")
    if kind == "fixed":
        ratio = d.get("ratio", [1] * n)
        if isinstance(ratio, str):
            counts = parse_ratio(ratio)
        else:
            try:
                counts = [_count(c) for c in ratio]  # 2.0 from a JSON line is a whole number
            except (TypeError, ValueError):
                raise UserError(f"ratio {ratio!r} is not a list of whole numbers; give e.g. [5, 1] or \"5:1\"") from None
        if len(counts) != n:
            raise UserError(
                f"ratio {':'.join(map(str, counts))} has {counted(len(counts), 'count')} but {owner} has "
                f"{counted(n, 'phase')} "
                f"({', '.join(phase_names)}); give one count per phase, e.g. {':'.join(['1'] * n)}")
        check_counts(counts, phase_names)
        return FixedRatio(counts)
    if kind == "adaptive":
        th = d.get("thresholds")
        if isinstance(th, dict):
            unknown = set(th) - set(phase_names)
            if unknown:
                raise UserError(f"adaptive threshold for unknown phase(s) {', '.join(sorted(unknown))}; "
                                f"phases are {', '.join(phase_names)}")
            th = [th.get(p, float("-inf")) for p in phase_names]
        if not isinstance(th, (list, tuple)) or len(th) != n:
            raise UserError(f"adaptive policy needs one threshold per phase ({', '.join(phase_names)})")
        try:
            return Adaptive([float(t) for t in th], _whole(d.get("max_steps", 50)), _whole(d.get("min_steps", 1)))
        except (TypeError, ValueError):
            raise UserError(f"adaptive policy {d!r} needs numbers for its thresholds and whole numbers for "
                            f"max_steps and min_steps") from None
    raise UserError(f"unknown schedule policy {kind!r}; use 'fixed' or 'adaptive'")


def _whole(x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(x)
    return x
