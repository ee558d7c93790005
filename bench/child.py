"""A benchmark's measurement in a fresh Python process, read back as the last JSON line it prints.

Why a process of its own: TensorFlow's settings (thread pools, devices, XLA) are fixed when it first runs an op,
so a measurement that needs the CLI's settings, the window's, or two logical devices cannot share the process of
`bench/run.py`; and a fresh process starts every variant from the same cold caches.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

ROOT = Path(__file__).resolve().parents[1]


def run_child(module: str, args: Sequence[str], what: str, timeout: float = 3000,
              env: Mapping[str, str] | None = None) -> Any:
    """`python -m module args...` from the repository root; its last line starting with `{`, parsed. A child
    that fails, or prints no such line, raises with the end of its stderr (`what` names it)."""
    out = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=timeout, env=None if env is None else {**os.environ, **env})
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{what} failed: {out.stderr[-3000:]}")
    return json.loads(lines[-1])
