"""The window imports training_core on the GUI thread: that import, and the TF-free helpers the
window calls (run readers, scope tree, smoothing, commands), must load neither Qt nor TensorFlow."""
from __future__ import annotations

import json
import subprocess
import sys

from .helpers import REPO, env

FORBIDDEN = ("PySide6", "shiboken6", "pyqtgraph", "tensorflow", "keras", "tensorboard")

PROBE = r"""
import json, sys, tempfile
from pathlib import Path
import training_core as tc
import training_core.cli.headless, training_core.rundir.reading, training_core.rundir.writer
import training_core.runs, training_core.figures
d = Path(tempfile.mkdtemp())
(d / "scalars.csv").write_text("step,wall_time,tag,value\n1,0.5,loss/D,1.25\n")
(d / "events.jsonl").write_text('{"step": 0, "kind": "start", "time": 0}\n')
(d / "config.toml").write_text('example = "ring"\nsteps = 3\n')
used = [tc.read_scalars(d)["loss/D"].values.tolist(), len(tc.read_events(d)), tc.RunConfig.from_dict(tc.read_config(d)).steps,
        tc.format_tree(tc.build_scope_tree([tc.VarInfo("g/d/kernel", (2, 3), "float32", True)])).count("\n"),
        tc.ema_smooth([1.0, 2.0], 0.5)[0].tolist(), tc.command_from_dict(tc.SetFreeze(["g"]).to_dict()).scopes,
        tc.builtin_examples(), tc.parse_ratio("5:1")]
print(json.dumps({"modules": sorted(sys.modules), "used": used}))
"""


def test_importing_training_core_loads_neither_qt_nor_tensorflow():
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    loaded = sorted({m.split(".")[0] for m in out["modules"]} & set(FORBIDDEN))
    assert loaded == [], f"importing training_core loaded {loaded}"
    assert out["used"] == [[1.25], 1, 3, 4, [1.0, 5 / 3], ["g"], ["digits", "factorization", "ring", "shapes"], [5, 1]]
