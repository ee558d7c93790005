"""Freezeframe: `python main.py` opens the window; `--headless` trains on the terminal (no window);
`--export RUN_DIR` renders figures from a run directory. `python main.py --help` says so too. See README.

The code is app/entry.py, which the installed `freezeframe` command runs too; importing it first sets
TensorFlow's log level before anything imports TensorFlow."""
import sys

from app.entry import main

if __name__ == "__main__":
    sys.exit(main())
