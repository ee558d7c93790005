"""The suite's forked processes (tests/zygote.py) behave as real interpreters would: their own pid,
arguments, working directory, environment, descriptors, exit code and death by signal, and what cannot be
forked faithfully runs as a real subprocess."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests import zygote

SCRIPT = '''
import json, os, sys
line = sys.stdin.readline()
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("ZYGOTE_PROBE"), "name": __name__,
                  "tf": "tensorflow" in sys.modules, "pid": os.getpid(), "ppid": os.getppid(), "line": line}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
'''


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(SCRIPT)
    return path


def test_a_forked_child_is_the_script_run_as_main_in_its_own_process(tmp_path, script):
    work = tmp_path / "work"
    work.mkdir()
    r = zygote.run([sys.executable, str(script), "3", "x y"], cwd=work, env={**os.environ, "ZYGOTE_PROBE": "p"},
                   input="hello\n", capture_output=True, text=True, timeout=300)
    got = json.loads(r.stdout)
    assert r.returncode == 3 and r.stderr == "to stderr\n"
    assert got["argv"] == [str(script), "3", "x y"] and got["cwd"] == str(work) and got["env"] == "p"
    assert got["name"] == "__main__" and got["line"] == "hello\n"
    assert got["tf"], "not forked from the zygote: it would have had to import TensorFlow"
    assert got["pid"] != os.getpid() and got["ppid"] == os.getpid()  # re-parented to us, as a real child


def test_the_test_process_reaps_a_child_killed_by_a_signal(script):
    proc = zygote.Popen([sys.executable, str(script), "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        text=True)
    assert proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL


def test_what_a_fork_cannot_show_runs_in_a_fresh_interpreter(script):
    r = zygote.run([sys.executable, "-c", "import sys; print('tensorflow' in sys.modules)"], capture_output=True,
                   text=True, timeout=120)
    assert r.stdout.strip() == "False"
    r = zygote.run([sys.executable, str(script), "0"], env={**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0"},
                   input="\n", capture_output=True, text=True, timeout=300)
    assert not json.loads(r.stdout)["tf"], "a different TensorFlow environment must not be forked"
