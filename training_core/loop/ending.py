"""How a run ends, whatever ended it (its step target, a Stop, an error, a second Ctrl-C): the measure in flight
taken or dropped, the observers' last word (the final checkpoint, the end's samples and measure), then an
`error` event when it failed and the `stop` event whose reason is true, and the run directory's lock let go.

Kept apart from the loop (loop/trainer.py) because every way out goes through it, and what it must keep is one
list: a failure while ending (a full disk at the final checkpoint) still ends with the `stop` event, and the
rows the record held back for a dropped measure are written before it (observers/record.py).
"""
from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

from training_core.base import events as E
from training_core.experiment.usercode import failure_line
from training_core.rundir import lock as runlock

if TYPE_CHECKING:
    from training_core.loop.trainer import Trainer


def end(tr: "Trainer", reason: str, error: BaseException | None) -> BaseException | None:
    """End the run that stopped for `reason` (with `error`, when it failed); returns the error to raise again
    (the first: one while ending only when there was none before)."""
    try:
        if reason == "done":  # the measure in flight is recorded: a finished run's last ones are worth the wait
            tr.measures.collect(wait=True)
        tr.measures.close()  # a Stop or an error drops it: the run ends now (the rows it held are written)
        tr.fetch()
        tr.warm.end()
        for o in tr.observers:
            o.on_run_end(tr.handle, reason)
        tr.fetch()  # what observers recorded at the end (final metrics)
    except BaseException as e:  # noqa: BLE001 - the final checkpoint failed (a full disk): not "done"
        if error is None:
            reason, error = "error", e
    finally:
        tr.measures.close()
    tr.flow.stopping, tr.flow.running = True, False
    if error is not None:
        tr.emit(E.Error(message=run_failure_line(tr, error),
                        detail=getattr(error, "detail", None) or "".join(traceback.format_exception(error))))
    stop = tr.flow.stop_command
    tr.emit(E.Stop(reason=reason, traces=tr.traces, retraces=tr.retraces,
                   command=None if stop is None else stop.command.to_dict(), id=None if stop is None else stop.id))
    tr.report_status()
    if tr.lock is not None:
        runlock.release(tr.lock)
    return error


def run_failure_line(tr: "Trainer", error: BaseException) -> str:
    """The one line that says why the run failed (a lost multi-worker peer, or where user code raised)."""
    p = tr.prepared
    lost = tr.source.failure_line(error, tr.state.step, tr.run_dir)
    if lost or p is None:
        return lost or " ".join(str(error).split())
    return failure_line(error, p.source, tr.status().phase or None, tr.state.step)
