#!/usr/bin/env bash
# The one test command (README): installs pinned dependencies, then runs the whole suite offscreen.
set -euo pipefail
cd "$(dirname "$0")"
python -m pip install -q -r requirements-dev.txt
export QT_QPA_PLATFORM=offscreen TF_CPP_MIN_LOG_LEVEL=2
python -m pytest -q -n 2 --dist loadfile "$@"  # a file's tests share its fixtures, in one worker
if [ -z "${FF_SKIP_BENCH:-}" ]; then python bench/run.py --quick; fi
