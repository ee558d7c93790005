"""The docs' WGAN-GP experiment (docs/experiments.md, "Custom losses"), live-control script
(docs/live-control.md) and sample-quality experiment and offline script (docs/quality.md) are code a user
copies: they must run as printed. Each block is read from its docs page itself, found by the HTML comment that
marks it, so the page cannot drift from what was run. (The blocks lived in README.md until its guide moved to
docs/; the tests keep their names.)"""
from __future__ import annotations

import numpy as np

from training_core import RunConfig, read_events, read_scalars

from .helpers import REPO, Script, run, write_file

MARKER = "<!-- wgan-gp: tests/core/test_readme.py runs this block -->"


def readme_block(marker: str) -> str:
    """The Python block right after `marker`, from the one page under docs/ that holds the marker: found by
    the marker rather than by a file name, so a block can move between pages without the test going stale,
    and a marker lost or copied fails here instead of testing some other block."""
    pages = [p for p in sorted((REPO / "docs").rglob("*.md")) if marker in p.read_text(encoding="utf-8")]
    assert len(pages) == 1, f"{marker!r} should be on exactly one docs page, found on {pages}"
    text = pages[0].read_text(encoding="utf-8")
    start = text.index("```python\n", text.index(marker)) + len("```python\n")
    return text[start:text.index("```", start)]


class Samples(Script):
    def __init__(self) -> None:
        super().__init__(None)
        self.samples: list[dict] = []

    def on_samples(self, samples: dict) -> None:
        self.samples.append(samples)


def test_the_readme_wgan_gp_trains_5_to_1_with_finite_losses(tmp_path):
    path = write_file(tmp_path, "wgan_gp.py", readme_block(MARKER))
    obs = Samples()
    trainer = run(RunConfig(experiment_file=str(path), steps=120, run_dir=str(tmp_path / "run"), checkpoint_every=0),
                  obs)
    assert trainer.prepared.warnings == []  # every draw goes through ctx
    sc = read_scalars(tmp_path / "run")
    assert len(sc["loss/D"].steps) == 100 and len(sc["loss/G"].steps) == 20  # the critic trains 5:1
    assert all(np.isfinite(s.values).all() for s in sc.values())
    assert not [e for e in read_events(tmp_path / "run") if e.kind in ("error", "nan", "warning", "retrace")]
    s = obs.samples[-1]
    assert s["kind"] == "points2d" and s["real"].shape == (512, 2) and s["fake"].shape == (512, 2)


LIVE = "<!-- live-control: tests/core/test_readme.py runs this block -->"


def test_the_readme_live_control_block_steers_a_run_as_it_says(tmp_path):
    """The "Live control from code" block, at a tenth of its steps (600), into a temporary directory: every
    command it sends is applied, in order, each at or after the step it waited for, and the run ends at its
    target. (As first printed it sent everything at once and let the main thread return: nothing trained.)"""
    import re
    code = readme_block(LIVE).replace("steps=6000", "steps=600").replace('"runs/live"', repr(str(tmp_path / "live")))
    code = re.sub(r"at\((\d+)\)", lambda m: f"at({int(m.group(1)) // 10})", code)
    exec(compile(code, "docs/live-control.md (live control)", "exec"), {"__name__": "readme_live"})
    events = [e for e in read_events(tmp_path / "live") if e.kind in ("freeze", "ratio", "lr", "pause", "step",
                                                                      "continue", "stop")]
    kinds = [e.kind for e in events]
    assert kinds[:5] == ["freeze", "ratio", "ratio", "lr", "pause"] and kinds[-1] == "stop", kinds
    assert "step" in kinds and "continue" in kinds and events[-1].reason == "done" and events[-1].step == 600
    for e, at in zip(events, (100, 200, 300, 400, 500)):
        assert e.step >= at, (e.kind, e.step, at)
    pause, step, cont = (next(e for e in events if e.kind == k) for k in ("pause", "step", "continue"))
    assert pause.step == step.step and cont.step == step.step + 10  # ten steps between, paused around them


QUALITY = "<!-- quality: tests/core/test_readme.py runs this block -->"
QUALITY_OFFLINE = "<!-- quality-offline: tests/core/test_readme.py runs this block -->"


def test_the_quality_blocks_measure_a_run_and_then_its_saved_samples(tmp_path, capsys):
    """docs/quality.md: the experiment file trains 40 steps with FID and KID as its metrics (in the feature space
    trained on the shapes, cached in the test session's cache directory), and the offline block then measures
    the run's saved samples, one line per samples file."""
    from training_core.rundir.samples import list_samples
    path = write_file(tmp_path, "shapes_gan.py", readme_block(QUALITY))
    d = tmp_path / "run"
    run(RunConfig(experiment_file=str(path), example=None, steps=40, run_dir=str(d), checkpoint_every=0,
                  sample_every=0.2, tensorboard=False))
    sc = read_scalars(d)
    for tag in ("metric/fid", "metric/kid", "metric/kid_std"):
        assert len(sc[tag].steps) >= 2 and np.isfinite(sc[tag].values).all(), tag  # at step 0 and at the end
    assert (sc["metric/fid"].values > 0).all() and (sc["metric/kid_std"].values > 0).all()
    # (a measure of seconds is paced, and says so in a warning: that one is expected, a failure is not)
    assert not [e for e in read_events(d) if e.kind == "error" or (e.kind == "warning" and "failed" in e.message)]
    code = readme_block(QUALITY_OFFLINE)
    assert '"runs/shapes_gan-20261202-101500"' in code
    capsys.readouterr()
    exec(compile(code.replace('"runs/shapes_gan-20261202-101500"', repr(str(d))), "docs/quality.md (offline)",
                 "exec"), {"__name__": "readme_quality"})
    lines = capsys.readouterr().out.splitlines()
    steps = [s for s, _ in list_samples(d)]
    assert len(steps) >= 2 and [int(ln.split()[1][:-1]) for ln in lines] == steps
    assert all(" KID " in ln and " ± " in ln for ln in lines)
