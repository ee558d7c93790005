"""`Popen` for `python script.py ...` and `python -m module ...` at the price of a fork, not of an import.

Why: each training process the suite starts (the window's service, a headless CLI run, a multi-worker
node, a bad command line) spent 3-6 s of CPU importing TensorFlow and Keras before doing anything: on a
busy 2-core machine, a third of the suite's CPU time (and each `main.py --export` ~0.8 s importing Qt).
Here one "zygote" process per test process imports them once (no op runs, so TensorFlow has created no
thread pools yet: it creates them lazily, at the first op) and forks a child for each command line.
The child is a real process of its own, with its own pid, arguments, environment, working directory and
file descriptors 0-2 (passed over the zygote's socket), and it runs the script as `__main__` exactly as
the interpreter would; nothing else is shared.

`Popen` is `subprocess.Popen` with only the child's creation replaced, so pipes, text mode, `communicate`,
timeouts, `send_signal` and `kill` are the standard library's own. The test process waits for its
children itself: it is made a child subreaper (Linux `prctl`), and the zygote double-forks, so each child
is re-parented to the test process that asked for it. Anything that cannot be forked faithfully (another
executable, `python -c`, a different TensorFlow environment, pre-exec hooks, new sessions, no Linux
subreaper) runs as a real subprocess, as before.

The zygote: `python tests/zygote.py ADDRESS` with the socket's key in `FF_ZYGOTE_KEY`.
"""
from __future__ import annotations

import atexit
import gc
import os
import runpy
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
KEY_ENV = "FF_ZYGOTE_KEY"
#: environment variables read when TensorFlow, Keras or the interpreter start: a child whose environment
#: differs from the zygote's in one of these is not forked (TF_CONFIG is read later, by the strategy)
_AT_IMPORT = ("TF_", "CUDA", "XLA_", "KERAS", "OMP_", "MKL")
_READ_LATER = ("TF_CONFIG",)


def _import_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_AT_IMPORT) and k not in _READ_LATER}


# -- the zygote process --------------------------------------------------------------------------------
def _run_child(args: list[str], env: dict[str, str], cwd: str, fds: list[int]) -> None:
    """In the forked child: become `python *args` in `cwd` with `env` and descriptors 0-2, then exit."""
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
    for fd in set(fds):
        if fd > 2:
            os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    code: int = 0
    try:
        try:
            if args[0] == "-m":
                sys.argv = [args[1], *args[2:]]
                sys.path[0] = cwd
                sys.modules.pop(args[1], None)  # run it fresh as __main__, as `python -m` does
                runpy.run_module(args[1], run_name="__main__", alter_sys=True)
            else:
                sys.argv = list(args)
                sys.path[0] = str(Path(args[0]).resolve().parent)
                runpy.run_path(args[0], run_name="__main__")
        finally:
            threading._shutdown()  # as at a real exit: non-daemon threads are joined before atexit
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:  # noqa: BLE001 - a traceback, as the interpreter would print it
        sys.last_type, sys.last_value, sys.last_traceback = sys.exc_info()  # as it sets them, for atexit handlers
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if code == -signal.SIGINT:  # an unhandled Ctrl-C ends the process by SIGINT, as the interpreter does
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def _serve(address: str) -> None:
    from multiprocessing.connection import Client
    from multiprocessing.reduction import recv_handle
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C at the terminal is for the tests, not for us
    sys.path.insert(0, str(REPO))
    from training_core.engine.tf_quiet import quiet_stderr
    with quiet_stderr():  # its start-up notices: a real process swallows them too (training_core.engine.tf_quiet)
        import keras  # noqa: F401 - imported once here, inherited by every child
        import tensorflow  # noqa: F401

        import training_core.cli.headless  # noqa: F401
        import training_core.loop.trainer  # noqa: F401
    import app.export  # noqa: F401 - and Qt for `main.py --export`: modules only (no QApplication, no thread)
    import app.export_cli  # noqa: F401
    gc.collect()
    gc.freeze()  # the imports' ~300,000 objects: no child's garbage collection walks them again (0.3 s a walk)
    conn = Client(address, authkey=bytes.fromhex(os.environ.pop(KEY_ENV)))
    while True:
        try:
            args, env, cwd = conn.recv()
        except (EOFError, OSError):
            return
        fds = [recv_handle(conn) for _ in range(3)]
        sys.stdout.flush()
        sys.stderr.flush()
        r, w = os.pipe()
        first = os.fork()
        if first == 0:  # fork twice: the child is re-parented to the test process, which reaps it
            os.close(r)
            child = os.fork()
            if child == 0:
                os.close(w)
                conn.close()
                _run_child(args, env, cwd, fds)
            os.write(w, str(child).encode())
            os._exit(0)
        os.close(w)
        pid = int(os.read(r, 32) or b"0")
        os.close(r)
        os.waitpid(first, 0)
        for fd in fds:
            os.close(fd)
        conn.send(pid)


# -- the test process's side ---------------------------------------------------------------------------
class _Zygote:
    """The connection to this test process's zygote (started at first use, ended at exit)."""

    def __init__(self) -> None:
        import ctypes
        import secrets
        from multiprocessing.connection import Listener
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
        key = secrets.token_bytes(32)
        listener = Listener(family="AF_UNIX", authkey=key)
        self.env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
                    "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen([sys.executable, __file__, listener.address], cwd=REPO,
                                        env={**self.env, KEY_ENV: key.hex()})
        listener._listener._socket.settimeout(300)  # a zygote that fails to start must not hang the suite
        try:
            self.conn = listener.accept()
        finally:
            listener.close()
        self.lock = threading.Lock()
        atexit.register(self.close)

    def spawn(self, args: list[str], env: dict[str, str], cwd: str, fds: list[int]) -> int:
        from multiprocessing.reduction import send_handle
        with self.lock:
            self.conn.send((args, env, cwd))
            for fd in fds:
                send_handle(self.conn, fd, self.process.pid)
            pid = self.conn.recv()
        if pid <= 0:
            raise OSError("the zygote could not fork")
        return pid

    def close(self) -> None:
        self.conn.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


_zygote: _Zygote | None = None
_zygote_lock = threading.Lock()
_unavailable = False


def _get() -> _Zygote | None:
    global _zygote, _unavailable
    with _zygote_lock:
        if _zygote is None and not _unavailable:
            try:
                _zygote = _Zygote()
            except (OSError, AttributeError):  # not Linux, or no subreaper: real subprocesses
                _unavailable = True
        return _zygote


def _python_args(args: Any, executable: Any) -> list[str] | None:
    """The arguments after the interpreter if `args` is `python script.py ...` or `python -m mod ...`."""
    if isinstance(args, (str, bytes, os.PathLike)) or executable not in (None, sys.executable):
        return None
    args = [os.fspath(a) for a in args]
    if len(args) < 2 or args[0] != sys.executable:
        return None
    if args[1] == "-m" and len(args) >= 3:
        return args[1:]
    return args[1:] if args[1].endswith(".py") else None


class Popen(subprocess.Popen):
    """`subprocess.Popen`, whose Python children are forked from the zygote (module docstring)."""

    def _execute_child(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo,
                       creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite,
                       restore_signals, gid, gids, uid, umask, start_new_session, *rest):  # noqa: ANN001
        argv = None if shell or preexec_fn or pass_fds or start_new_session or any(
            x not in (None, -1) for x in (gid, gids, uid, *rest)) or umask not in (None, -1) \
            else _python_args(args, executable)
        full_env = dict(os.environ if env is None else env)
        zygote = _get() if argv is not None else None
        if zygote is None or _import_env(full_env) != _import_env(zygote.env):
            return super()._execute_child(args, executable, preexec_fn, close_fds, pass_fds, cwd, env,
                                          startupinfo, creationflags, shell, p2cread, p2cwrite, c2pread,
                                          c2pwrite, errread, errwrite, restore_signals, gid, gids, uid,
                                          umask, start_new_session, *rest)
        fds = [fd if fd != -1 else i for i, fd in enumerate((p2cread, c2pwrite, errwrite))]
        try:
            self.pid = zygote.spawn(argv, full_env, os.fspath(cwd) if cwd is not None else os.getcwd(), fds)
            self._child_created = True
        finally:  # the child's ends of the pipes, as the standard library's own _execute_child does
            self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)


def run(args: list[str], *, timeout: float | None = None, input: Any = None, check: bool = False,
        **kw: Any) -> subprocess.CompletedProcess:
    """`subprocess.run` with this module's `Popen` (its `capture_output`, `timeout` and `check` too)."""
    if kw.pop("capture_output", False):
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    with Popen(args, stdin=subprocess.PIPE if input is not None else kw.pop("stdin", None), **kw) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


if __name__ == "__main__":
    _serve(sys.argv[1])
