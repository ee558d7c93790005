"""Makes the docs' comparison figure (docs/images/comparison_figure.png, in docs/figures.md): three ring
runs at the ratios 1:1, 3:1 and 5:1 (15,000 steps each, trained at once, headless), drawn overlaid by the
export command, then turned into a PNG for the docs:

    python resources/docs/make_comparison.py /tmp/cmp docs/images/comparison_figure.png

The export command it runs (printed too) is what a user types for their own runs.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RATIOS = ("1:1", "3:1", "5:1")
STEPS = 15000


def main(folder: str, png: str) -> int:
    base = Path(folder)
    base.mkdir(parents=True, exist_ok=True)
    dirs = [base / f"ratio-{r.replace(':', 'to')}" for r in RATIOS]
    procs = [subprocess.Popen([sys.executable, "main.py", "--headless", "--example", "ring", "--steps", str(STEPS),
                               "--ratio", r, "--run-dir", str(d), "--quiet"], cwd=ROOT)
             for r, d in zip(RATIOS, dirs) if not (d / "events.jsonl").is_file()]
    if any(p.wait() for p in procs):
        return 1
    pdf = base / "comparison.pdf"
    cmd = [sys.executable, "main.py", "--export", *map(str, dirs), "--labels", ",".join(RATIOS),
           "--plots", "losses,metrics,updates", "--vars", "discriminator/dense_1/kernel", "--smoothing", "0.9",
           "--size", "7.16", "--layout", "column", "--out", str(pdf)]
    print(" ".join(cmd[1:]))
    if subprocess.run(cmd, cwd=ROOT).returncode:
        return 1
    out = Path(png).resolve()
    subprocess.run(["pdftoppm", "-png", "-r", "300", "-singlefile", str(pdf), str(out.with_suffix(""))], check=True)
    print(f"wrote {out} from {pdf} ({pdf.stat().st_size / 1024:.0f} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/cmp",
                  sys.argv[2] if len(sys.argv) > 2 else str(ROOT / "docs" / "images" / "comparison_figure.png")))
