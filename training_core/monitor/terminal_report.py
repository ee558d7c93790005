"""What a monitored run says on the terminal: where its record goes, how to watch it, and every leak.

Why on the terminal too: whoever runs a script with `fit()` or a loop of their own reads its terminal, not
necessarily a window; a discriminator that trains while its author believes it frozen must be said where
they look. One line each, on stderr (the loop's own output on stdout stays its own). The window shows the
same `leak` events on its plots and in its scope tree.
"""
from __future__ import annotations

import sys
from typing import TextIO

from training_core.base import events as E
from training_core.observers.base import Observer, RunHandle


#: why a frozen variable moved, by the leak's method (the monitor's run says "fit" or "own loop")
WHY = {**E.FIT_LEAK_CAUSES,
       "own loop": "the loop updates it outside run.apply_gradients",
       "exact": "the loop updates it outside run.apply_gradients",
       "gate": "the gate method leaves it to the optimizer's momentum and decay"}


class TerminalReport(Observer):
    """Prints the run directory once, each leak, each warning and each refused command."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream
        self.quiet = quiet

    def _say(self, text: str) -> None:
        print(f"freezeframe: {text}", file=self.stream or sys.stderr, flush=True)

    def on_run_begin(self, run: RunHandle) -> None:
        if not self.quiet:
            how = "continued" if run.resumed else "recording"
            self._say(f"{how} to {run.run_dir} from step {run.step} (watch and steer it: python main.py --attach "
                      f"{run.run_dir})")

    def on_event(self, event: E.Event) -> None:
        if isinstance(event, E.Leak):
            self._say(f"leak: {event.variable} moved by {event.update_norm:.3g} (||dW||) at step {event.at_step} "
                      f"while frozen: {WHY.get(event.method, 'something in the step still updates it')}")
        elif isinstance(event, E.Warning) and not self.quiet:
            self._say(f"warning: {event.message}")
        elif isinstance(event, E.Rejected):
            self._say(f"command refused at step {event.step}: {event.message}")
