"""What the export draws of a frozen variable's curve (app/export/curves.py), read back from the SVG: a freeze is
a step at the freeze's own step, as in the window (app/plots/update_stretches.py, the same `freeze_at`), not a
slope from the last trained record down to the "0" floor at the next record."""
from __future__ import annotations

import numpy as np
import pytest

from app.export import Figure, svg_bytes
from training_core.figures import FigureSpec
from training_core.runs import read_run
from tests.app import svg_shapes as svg

FROZEN_AT = 90  # the sweep's planned freeze (tests/app/conftest.py, `freeze_sweep`)
VAR = "discriminator/dense_1/kernel"


@pytest.fixture(scope="module")
def frozen_point(freeze_sweep):
    """The sweep's 1:1 point that froze discriminator/dense_1 from step 90: its D records at 49 and 99."""
    [d] = [p for p in (freeze_sweep / "runs").iterdir() if "ratio=1_1-freeze=discriminator" in p.name]
    return read_run(d)


@pytest.mark.parametrize("bands", [None, "minmax"])
def test_a_freeze_is_drawn_as_a_step_at_its_step(qapp, frozen_point, bands):
    store = frozen_point
    steps, _, _ = store.var_series(VAR, "update_ratio")
    frozen = np.asarray(store.frozen_series(VAR), bool)
    i = int(np.flatnonzero(frozen)[0])
    assert steps[i - 1] < FROZEN_AT < steps[i]  # the freeze falls between two records: what sloped
    fig = Figure([("frozen", store)], FigureSpec(plots=["updates"], variables=[VAR], width_in=3.5, height_in=2.6,
                                                 smoothing=0.0, bands=bands))
    _, shapes = svg.read(svg_bytes(fig))
    [panel] = fig.layout()
    x_freeze, x_before, x_after = (float(panel.X(v)) for v in (FROZEN_AT, steps[i - 1], steps[i]))
    muted, colour = fig.theme.muted.lower(), fig.theme.colour(0).name().lower()
    [dotted] = [s for s in shapes if s.stroke.lower() == muted and s.dashed and len(s.points) >= 3]
    # the trained line (its one record, at 49) holds its level to the freeze's x, and ends there
    [trained] = [s for s in shapes if s.stroke.lower() == colour and not s.dashed and len(s.points) >= 2
                 and abs(s.xs[-2] - x_before) < 0.05]
    assert trained.xs[-1] == pytest.approx(x_freeze, abs=0.05) and trained.ys[-1] == pytest.approx(trained.ys[-2], abs=0.05)
    # the frozen stretch begins with the drop: straight down at the freeze's x, then along the floor
    (x0, y0), (x1, y1), (x2, y2) = dotted.points[:3]
    assert x0 == pytest.approx(x_freeze, abs=0.05) and x1 == pytest.approx(x_freeze, abs=0.05)
    assert y0 == pytest.approx(trained.ys[-1], abs=0.05) and y1 > y0 + 5  # a drop of more than 5 pt
    assert x2 == pytest.approx(x_after, abs=0.05) and y2 == pytest.approx(y1, abs=0.05)
    for (ax, ay), (bx, by) in zip(dotted.points, dotted.points[1:]):  # no segment slopes across the freeze
        assert not (ax < x_freeze - 0.05 < x_freeze + 0.05 < bx and abs(ay - by) > 0.05)
