"""Makes the run behind the docs' example figure (docs/images/example_figure.png, in docs/figures.md):
3,000 ring steps with discriminator/dense_1 frozen from the start; at 30% the freeze set is replaced by
generator/dense_1, at 55% D's learning rate drops to 5e-5, at 70% the ratio becomes 2:1. The commands are
sent from an observer, as any script can steer a run, from `on_step_end`, so each applies at exactly its step:
sent from `on_metrics` they waited for the next batch of numbers, which comes every `fetch_every` steps *or*
`fetch_seconds`, whichever is first, so on a busy machine the same run changed things at other steps (a seed's
freeze at 127 instead of 122) and its figure was laid out differently.

    python resources/docs/make_example_run.py /tmp/example-run 3000
    python main.py --export /tmp/example-run --plots losses,updates --size 7.16 --out fig.pdf
    pdftoppm -png -r 300 -singlefile fig.pdf docs/images/example_figure

Two optional arguments after the steps: the seed (default 0), and a number of steps by which every change comes
later (default 0): the tests make seeds of one setting with it (tests/app/conftest.py, `steered_runs`).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from training_core import Observer, RunConfig, SetFreeze, SetLearningRate, SetRatio, Trainer  # noqa: E402


class Plan(Observer):
    def __init__(self, steps: int, shift: int = 0) -> None:
        self.plan = {int(steps * 0.3) + shift: SetFreeze(("generator/dense_1",)),
                     int(steps * 0.55) + shift: SetLearningRate("D", 5e-5),
                     int(steps * 0.7) + shift: SetRatio({"policy": "fixed", "ratio": [2, 1]})}

    def on_step_end(self, run) -> None:
        """After step `at`: the command applies at that boundary, on any machine at any speed."""
        if run.step in self.plan:
            run.send(self.plan.pop(run.step))


if __name__ == "__main__":
    run_dir, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    seed, shift = (int(a) for a in (sys.argv[3:5] + ["0", "0"])[:2])
    Trainer(RunConfig(example="ring", steps=steps, run_dir=run_dir, freeze=["discriminator/dense_1"], fetch_every=20,
                      seed=seed), Plan(steps, shift)).run()
