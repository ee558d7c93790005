"""What TensorBoard is shown of a run besides its numbers: sample drawings as pictures, control changes as
lines of text, the configuration as HParams values. Plain Python and NumPy (no TensorFlow): the record
writer's thread calls these and hands the results to `rundir/tensorboard.EventWriter`.

The pictures follow the window's samples view (`app/plots/samples.py`), so a co-author opening `tb/` sees
what the window showed:

  images    real images from the data, up to 2 rows of 8, above what the model generated, up to 8 x 8;
            values -1..1 as black..white, a mid-grey pixel between images, a white band between the two
            grids (where the window writes "generated"). Small images are enlarged by a whole factor, each
            pixel a square block, so that an image is at least `MIN_CELL_PX` pixels high: a browser blurs an
            8 x 8 digit it scales itself.
  points2d  real points (grey, under) and generated ones (orange) in x, y from -3 to 3, a line at every
            unit and darker axes, in a `POINTS_PX`-pixel square: the window's scatter without tick labels.
  matrix    target, reconstruction and their difference side by side, on one colour scale symmetric
            around 0 (± the target's largest magnitude; blue negative, red positive: CET-D1, as the window).

A kind without a view (an experiment's own) gets no picture, as the window shows none.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from training_core.base import events as E

SAMPLES_TAG = "samples"
CONTROLS_TAG = "controls"
GRID = 8  # up to GRID x GRID generated images, as the window
REAL_ROWS = 2  # rows of real images above them
MIN_CELL_PX = 32
POINTS_PX = 300
POINT_RANGE = 3.0
MATRIX_MIN_PX = 240  # each heat map at least this many pixels on its longer side

WHITE = 255
GAP = 0.0  # between images: mid-grey in -1..1, so images with a black background stay apart
REAL_POINTS = (127, 127, 127, 0x80)  # the window's palette: real grey, generated in the generator's colour
FAKE_POINTS = (255, 127, 14, 0xC0)
REAL_SIZE, FAKE_SIZE = 3, 4  # pixels, as the window's scatter
GRID_LINE, AXIS_LINE = (232, 232, 232), (190, 190, 190)
#: CET-D1 at 9 evenly spaced points (pyqtgraph's table, which the window uses), interpolated linearly
CET_D1 = np.array([[33, 81, 219], [111, 116, 225], [159, 155, 231], [201, 196, 236], [237, 231, 233],
                   [240, 189, 177], [231, 139, 118], [214, 87, 62], [192, 2, 6]], dtype=np.float64)

DESCRIPTIONS = {
    "images": "Real images from the data (top, up to 2 rows of 8) above what the model generated (up to 8 x 8), "
              "as the window's samples view shows them: values -1..1 as black..white, mid-grey between images.",
    "points2d": "Real points (grey) under generated ones (orange), x and y from -3 to 3 with a line at every unit "
                "(the axes darker), as the window's samples view shows them.",
    "matrix": "Target, reconstruction and their difference, side by side, on one colour scale symmetric around 0 "
              "(blue negative, red positive, to the target's largest magnitude), as the window's samples view.",
}
CONTROLS_DESCRIPTION = ("The run's control changes, one line each at the step after which it applied "
                        "(step N+1 is the first step it affects), as `events.jsonl` records them.")


# -- samples ----------------------------------------------------------------------------------------------
def sample_picture(samples: dict[str, Any]) -> np.ndarray | None:
    """The picture of one drawing as uint8 pixels (height, width, 1 or 3 channels), or None for a kind
    without a view or a drawing without the arrays its kind needs."""
    draw = _VIEWS.get(str(samples.get("kind")))
    return None if draw is None else draw(samples)


def _images(s: dict[str, Any]) -> np.ndarray | None:
    fake = _as_images(s.get("fake"))
    if fake is None:
        return None
    real = _as_images(s.get("real"))
    parts = [_tile(fake, GRID)]
    if real is not None:
        top = _tile(real, REAL_ROWS)
        band = np.full((top.shape[0] // 2 + 2, 1, top.shape[2]), np.nan, dtype=np.float32)  # the window's gap
        parts = [top, band] + parts
    channels = max(p.shape[2] for p in parts)
    width = max(p.shape[1] for p in parts)
    rows = []
    for p in parts:
        if p.shape[2] < channels:
            p = np.repeat(p, channels, axis=2)
        pad = np.full((p.shape[0], width - p.shape[1], channels), np.nan, dtype=np.float32)
        rows.append(np.concatenate([p, pad], axis=1))
    grid = np.concatenate(rows, axis=0)
    pixels = np.where(np.isnan(grid), WHITE, np.round((np.clip(grid, -1.0, 1.0) + 1.0) * 127.5)).astype(np.uint8)
    h = fake.shape[1] if real is None else min(fake.shape[1], real.shape[1])
    k = max(1, math.ceil(MIN_CELL_PX / max(h, 1)))
    return _enlarge(pixels, k)


def _as_images(a: Any) -> np.ndarray | None:
    """(n, h, w, 1 or 3) float32 from (n, h, w), (n, h, w, c) or one (h, w); NaN as black. Other channel
    counts keep the first channel, as the window shows them."""
    if a is None:
        return None
    a = np.asarray(a, dtype=np.float32)
    if a.ndim == 2:
        a = a[None]
    if a.ndim == 3:
        a = a[..., None]
    if a.ndim != 4 or not a.size:
        return None
    if a.shape[3] not in (1, 3):
        a = a[..., :1]
    return np.nan_to_num(a, nan=-1.0, posinf=1.0, neginf=-1.0)


def _tile(a: np.ndarray, rows: int) -> np.ndarray:
    """Up to GRID x `rows` images tiled row by row, GRID to a row, one GAP pixel between them."""
    n, h, w, c = a.shape
    n = min(n, GRID * rows)
    cols = min(GRID, n)
    nrows = -(-n // cols)
    out = np.full((nrows * (h + 1) - 1, cols * (w + 1) - 1, c), GAP, dtype=np.float32)
    for i in range(n):
        r, col = divmod(i, cols)
        out[r * (h + 1):r * (h + 1) + h, col * (w + 1):col * (w + 1) + w] = a[i]
    return out


def _enlarge(pixels: np.ndarray, k: int) -> np.ndarray:
    return pixels if k == 1 else np.repeat(np.repeat(pixels, k, axis=0), k, axis=1)


def _points(s: dict[str, Any]) -> np.ndarray | None:
    real, fake = _xy(s.get("real")), _xy(s.get("fake"))
    if real is None and fake is None:
        return None
    size = POINTS_PX
    img = np.full((size, size, 3), float(WHITE))
    for u in range(-int(POINT_RANGE), int(POINT_RANGE) + 1):
        px = min(round((u + POINT_RANGE) / (2 * POINT_RANGE) * (size - 1)), size - 1)
        colour = AXIS_LINE if u == 0 else GRID_LINE
        img[:, px] = colour
        img[size - 1 - px, :] = colour
    for pts, (r, g, b, alpha), stamp in ((real, REAL_POINTS, REAL_SIZE), (fake, FAKE_POINTS, FAKE_SIZE)):
        if pts is None or not len(pts):
            continue
        count = _coverage(pts, size, stamp)
        hit = count > 0
        keep = (1.0 - alpha / 255.0) ** count[hit]  # n points drawn over each other, each at `alpha`
        img[hit] = img[hit] * keep[:, None] + np.array([r, g, b], dtype=np.float64) * (1.0 - keep[:, None])
    return np.round(img).astype(np.uint8)


def _xy(a: Any) -> np.ndarray | None:
    if a is None:
        return None
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0 or a.size % 2:
        return None
    a = a.reshape(-1, 2)
    return a[np.isfinite(a).all(axis=1)]


def _coverage(pts: np.ndarray, size: int, stamp: int) -> np.ndarray:
    """How many `stamp`-pixel squares centred on the points cover each pixel (points outside -3..3 are not
    drawn, as the window's fixed range hides them)."""
    pts = pts[(np.abs(pts) < POINT_RANGE + 1).all(axis=1)]  # (far points, cast to integers, could wrap around)
    col = np.floor((pts[:, 0] + POINT_RANGE) / (2 * POINT_RANGE) * size).astype(np.int64)
    row = np.floor((POINT_RANGE - pts[:, 1]) / (2 * POINT_RANGE) * size).astype(np.int64)
    lo = -(stamp // 2)
    flat = []
    for dr in range(lo, lo + stamp):
        for dc in range(lo, lo + stamp):
            r, c = row + dr, col + dc
            inside = (r >= 0) & (r < size) & (c >= 0) & (c < size)
            flat.append(r[inside] * size + c[inside])
    return np.bincount(np.concatenate(flat), minlength=size * size).reshape(size, size)


def _matrix(s: dict[str, Any]) -> np.ndarray | None:
    target, rec = s.get("target"), s.get("reconstruction")
    if target is None or rec is None:
        return None
    target, rec = (np.atleast_2d(np.asarray(a, dtype=np.float64)) for a in (target, rec))
    if target.ndim != 2 or not target.size:
        return None
    diff = target - rec if target.shape == rec.shape else np.zeros_like(target)
    rec = rec if rec.shape == target.shape else np.zeros_like(target)
    finite = np.abs(target[np.isfinite(target)])
    m = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    rows, cols = target.shape
    gap = max(1, round(0.25 * max(rows, cols)))
    white = np.full((rows, gap, 3), float(WHITE))
    maps = [_diverging(a, m) for a in (target, rec, diff)]
    picture = np.concatenate([maps[0], white, maps[1], white, maps[2]], axis=1)
    k = max(1, math.ceil(MATRIX_MIN_PX / max(rows, cols)))
    return _enlarge(np.round(picture).astype(np.uint8), k)


def _diverging(a: np.ndarray, m: float) -> np.ndarray:
    t = (np.clip(np.nan_to_num(a, nan=0.0), -m, m) / m + 1.0) / 2.0 * (len(CET_D1) - 1)  # 0 .. 8
    i = np.minimum(np.floor(t).astype(np.int64), len(CET_D1) - 2)
    f = (t - i)[..., None]
    return CET_D1[i] * (1.0 - f) + CET_D1[i + 1] * f


_VIEWS: dict[str, Callable[[dict[str, Any]], np.ndarray | None]] = {
    "images": _images, "points2d": _points, "matrix": _matrix}


# -- control changes --------------------------------------------------------------------------------------
def control_line(event: E.Event) -> str | None:
    """One line of Markdown for a control change, a rollback, a resume, the start and the stop, and the
    alarms the window marks (nan, leak); None for the rest (traces, checkpoints, warnings)."""
    line = _LINES.get(type(event))
    return None if line is None else line(event)


def _names(scopes: Any) -> str:
    return ", ".join(f"`{s}`" for s in scopes) if scopes else "nothing"


def _freeze(e: E.Freeze) -> str:
    return f"**freeze** {_names(e.scopes)}" + (" (BatchNormalization statistics still update)"
                                                 if e.update_frozen_stats and e.scopes else "")


def _settings(e: E.Start | E.Resumed) -> str:
    lr = ", ".join(f"{p} {_number(v)}" for p, v in e.lr.items())
    return (f"ratio {schedule_text(e.schedule)}, learning rates {lr or 'as the experiment sets them'}, "
            f"freeze {_names(e.freeze)}, method {e.method}, on {e.device or '?'}")


def _start(e: E.Start) -> str:
    return f"**start** `{e.experiment}`: {_settings(e)}"


def _resumed(e: E.Resumed) -> str:
    return f"**resumed** from `{e.checkpoint}` in a new process: {_settings(e)}"


def _rollback(e: E.Rollback) -> str:
    return f"**rollback** from step {e.from_step} to `{e.checkpoint}` ({e.reason})"


def _number(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


_LINES: dict[type, Callable[[Any], str]] = {
    E.Start: _start,
    E.Resumed: _resumed,
    E.Freeze: _freeze,
    E.Ratio: lambda e: f"**ratio** {schedule_text(e.policy)}",
    E.LearningRate: lambda e: f"**lr** of {e.phase}: {_number(e.value)}",
    E.Method: lambda e: f"**method** {e.method}",
    E.Pause: lambda e: f"**pause** ({e.reason})",
    E.Resume: lambda e: "**continue**",
    E.Step: lambda e: f"**step** {e.n} step{'s' if e.n != 1 else ''}, then pause",
    E.Rollback: _rollback,
    E.Rejected: lambda e: f"**rejected** {e.message}",
    E.Nan: lambda e: f"**nan** the loss of {e.phase} was {e.value} at step {e.at_step}",
    E.Leak: lambda e: f"**leak** `{e.variable}` moved while frozen (first at step {e.at_step}, method {e.method})",
    E.Stop: lambda e: f"**stop** ({e.reason})",
}


def schedule_text(policy: dict[str, Any]) -> str:
    """A schedule as the window's ratio box writes it: `5:1`, or the adaptive policy in a few words."""
    if not isinstance(policy, dict) or not policy:
        return "?"
    if policy.get("policy", "fixed") == "fixed":
        ratio = policy.get("ratio")
        return ":".join(str(c) for c in ratio) if isinstance(ratio, (list, tuple)) else str(ratio)
    th = policy.get("thresholds")
    th = ", ".join(_number(float(t)) for t in th) if isinstance(th, (list, tuple)) else str(th)
    return (f"adaptive (leave a phase below loss {th}; {policy.get('min_steps', 1)} to "
            f"{policy.get('max_steps', 50)} steps a stay)")


# -- the configuration ------------------------------------------------------------------------------------
def run_hparams(event: E.Start | E.Resumed, config: Any | None = None) -> dict[str, bool | float | str]:
    """The run's settings as HParams values (numbers, strings, booleans): what the run started with, from
    its `start` event (a resumed one: its `resumed` event) and its configuration. A learning rate is
    `lr/<phase>`; the freeze set one string (`none` when empty)."""
    out: dict[str, bool | float | str] = {}
    experiment = getattr(event, "experiment", "") or (
        (config.experiment_file or config.example or "") if config is not None else "")
    if experiment:
        out["experiment"] = str(experiment)
    if config is not None:
        out["seed"] = int(config.seed)
        if config.batch_size is not None:
            out["batch_size"] = int(config.batch_size)
        if config.steps is not None:
            out["steps"] = int(config.steps)  # this process's target (a resume's `--steps`)
        out["count"] = str(config.count or "all")  # which phase's steps `steps` counts (`--count G`)
        out["on_nan"] = str(config.on_nan)
    schedule = event.schedule or (config.schedule if config is not None else {})
    if schedule:
        out["ratio"] = schedule_text(schedule)
    lr = event.lr or (config.lr if config is not None else {})
    for phase, value in lr.items():
        out[f"lr/{phase}"] = float(value)
    out["freeze"] = ", ".join(event.freeze) if event.freeze else "none"
    out["update_frozen_stats"] = bool(event.update_frozen_stats)
    out["freeze_method"] = str(event.method)
    device = event.device or (config.device if config is not None else "")
    if device:
        out["device"] = str(device)
    out["strategy"] = str(event.strategy)
    out["replicas"] = int(event.replicas)
    return out
