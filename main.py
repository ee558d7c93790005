"""Freezeframe: `python main.py` opens the window; `--headless` trains on the terminal (no window);
`--export RUN_DIR` renders figures from a run directory. `python main.py --help` says so too. See README."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv: list[str]) -> int:
    if "--export" in argv and "--headless" in argv:  # each would report the other's options as unknown
        print("error: --export draws figures from a finished record and trains nothing; drop --headless",
              file=sys.stderr)
        return 2
    if "--headless" in argv or "--list-scopes" in argv:
        from training_core.cli.headless import main as headless
        return headless(argv)
    if "--export" in argv:
        from app.export_cli import main as export
        return export(argv)
    from app.launch import run_app
    return run_app(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
