#!/usr/bin/env bash
# The one test command (README): installs pinned dependencies, then runs the whole suite offscreen.
# (The quick benchmark is not a test: .ci/run runs it after this, to check that it still runs.)
set -euo pipefail
cd "$(dirname "$0")"
python -m pip install -q -r requirements-dev.txt
export QT_QPA_PLATFORM=offscreen TF_CPP_MIN_LOG_LEVEL=2
# A file's tests share its fixtures, in one worker. A worker that crashes ends the run at once
# (--max-worker-restart=0): pytest-xdist 3.8's load-file scheduler can deadlock after replacing a crashed
# worker, and a hang must not eat CI's time. Unattended (no terminal on stdin, as in CI) pytest runs
# under a timeout, ~6x the suite's time on a busy 2-core machine: a guard against hangs, not a speed
# limit. At a terminal it runs as is, so that Ctrl-C reaches it (timeout moves it out of the terminal's
# process group).
guard=()
if [ ! -t 0 ]; then guard=(timeout -k 30 3600); fi
${guard[@]+"${guard[@]}"} python -m pytest -q -n 3 --dist loadfile --max-worker-restart=0 "$@"
