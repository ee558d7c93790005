"""Run many `python main.py ...` command lines for the price of one TensorFlow import.

Why: the bad-input table has ~50 command lines, and each real subprocess spends 3-6 s importing
TensorFlow and Keras before it can refuse its input in one line: most of the suite's time on a slow
2-core machine. This runner is itself a subprocess: it imports TensorFlow, Keras and the CLI once (no op
runs, so TensorFlow has created no thread pools yet: it creates them lazily, at the first op), then
forks one child per command line. Each child is a fresh process with that import already done: it runs
`main.main(argv)` with its own stdout and stderr (file descriptors 1 and 2 redirected to files, so
TensorFlow's C++ logging is captured too, as with a real subprocess) and exits with main's exit code.
Nothing else is shared: a child's experiment import, Keras name counters and files die with it.

Protocol: `python tests/core/forkrun.py SPEC.json OUT.json`; SPEC is {"parallel": n, "timeout": s,
"cases": {name: [argv...]}} with argv after `main.py`; OUT gets {name: [returncode, stdout, stderr]}.
A child that outlives the timeout is killed (returncode -9).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def _child(argv: list[str], out_path: str, err_path: str) -> None:
    out_fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    err_fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    code = 1
    try:
        import main
        sys.argv = [str(REPO / "main.py"), *argv]
        code = main.main(argv) or 0
    except SystemExit as e:  # argparse and friends
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - a traceback, as `python main.py` would print it
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        import atexit
        atexit._run_exitfuncs()  # as a real exit would: the descriptor-2 filter (tf_quiet.py) drains there
    os._exit(code)


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    os.chdir(REPO)
    sys.path.insert(0, str(REPO))
    import keras  # noqa: F401 - imported once here, inherited by every child
    import tensorflow  # noqa: F401

    import training_core.cli  # noqa: F401
    tmp = Path(tempfile.mkdtemp(prefix="ff-forkrun-"))
    waiting = list(spec["cases"].items())
    running: dict[int, tuple[str, float]] = {}
    results: dict[str, list] = {}
    while waiting or running:
        while waiting and len(running) < spec["parallel"]:
            name, argv = waiting.pop(0)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(argv, str(tmp / f"{name}.out"), str(tmp / f"{name}.err"))
            running[pid] = (name, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for p, (name, t0) in list(running.items()):
                if time.monotonic() - t0 > spec["timeout"]:
                    os.kill(p, signal.SIGKILL)
            time.sleep(0.02)
            continue
        name, _ = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        results[name] = [code, (tmp / f"{name}.out").read_text(errors="replace"),
                         (tmp / f"{name}.err").read_text(errors="replace")]
    Path(sys.argv[2]).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
