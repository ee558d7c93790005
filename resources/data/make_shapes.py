"""Makes shapes.npz: 6,400 28×28 grayscale drawings of 8 shapes (800 each), white strokes on black, as MNIST.

    python resources/data/make_shapes.py              # writes shapes.npz beside this file (what is shipped)
    python resources/data/make_shapes.py --png DIR    # writes DIR/<class>/<class>_0000.png ... from shapes.npz

Why drawn, not downloaded: an image GAN on the CPU needs images a small DCGAN learns in minutes and whose samples
a person can judge at a glance, and Freezeframe downloads nothing. Each drawing varies where a hand-drawn one would:
position (±2.5 px), size (radius 6.5–9.5 px), stroke (1.5–3 px), rotation (±15°, so a square never turns into the
diamond), brightness (200–255), and an ellipse's aspect. Strokes are anti-aliased: each pixel is the covered share
of 4×4 sub-pixels. Every image comes from a generator seeded by (SEED, class, index), so any one of them can be
drawn again alone, and the file is the same bytes on every run of this script (`save_npz`).

Why an .npz and not the PNG folders themselves: 6,400 files in the repository (and in every install) against one
file of 0.77 MB; `--png` (or `write_png_folder`) writes the folders `keras.utils.image_dataset_from_directory`
reads in a second, into a directory of the caller's choosing. The PNG encoder is the standard library's zlib: no
image library needed.
"""
from __future__ import annotations

import argparse
import struct
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np

#: in alphabetical order, as `image_dataset_from_directory` numbers the folders: the PNGs' labels are the npz's
CLASSES = ("arrow", "circle", "cross", "diamond", "plus", "square", "star", "triangle")
PER_CLASS, SIZE, SEED = 800, 28, 20240527
SUPER = 4  # sub-pixels per pixel along each axis
HERE = Path(__file__).resolve().parent
NPZ = HERE / "shapes.npz"


def _segments(cls: str, r: float, theta: float) -> list[tuple[complex, complex]]:
    """The strokes of one shape centred at 0, as (start, end) points in the complex plane (y down)."""
    def poly(points: list[complex]) -> list[tuple[complex, complex]]:
        return [(points[i], points[(i + 1) % len(points)]) for i in range(len(points))]

    turn = np.exp(1j * theta)
    if cls == "square":
        return poly([r * np.exp(1j * (np.pi / 4 + k * np.pi / 2)) * turn for k in range(4)])
    if cls == "triangle":
        return poly([r * np.exp(1j * (-np.pi / 2 + k * 2 * np.pi / 3)) * turn + 0.15j * r for k in range(3)])
    if cls == "diamond":
        return poly([complex(r * 0.7 * np.cos(a), r * np.sin(a)) * turn for a in np.arange(4) * np.pi / 2])
    if cls in ("plus", "cross"):
        base = theta + (np.pi / 4 if cls == "cross" else 0.0)
        return [(-r * np.exp(1j * (base + a)), r * np.exp(1j * (base + a))) for a in (0.0, np.pi / 2)]
    if cls == "star":
        return poly([(r if k % 2 == 0 else 0.42 * r) * np.exp(1j * (-np.pi / 2 + k * np.pi / 5)) * turn
                     for k in range(10)])
    if cls == "arrow":
        tip, tail = r * turn, -r * turn
        return [(tail, tip), (tip, tip - 0.55 * r * np.exp(1j * 0.6) * turn),
                (tip, tip - 0.55 * r * np.exp(-1j * 0.6) * turn)]
    raise ValueError(cls)


def _grid() -> np.ndarray:
    """Sub-pixel centres, in pixel units, as complex numbers (x + iy), SIZE·SUPER along each axis."""
    c = (np.arange(SIZE * SUPER) + 0.5) / SUPER
    return c[None, :] + 1j * c[:, None]


def draw(cls: int, index: int) -> np.ndarray:
    """One 28×28 uint8 drawing: image `index` of class `cls` (an index into CLASSES)."""
    rng = np.random.default_rng([SEED, cls, index])
    centre = complex(*(SIZE / 2 + rng.uniform(-2.5, 2.5, 2)))
    r, width = rng.uniform(6.5, 9.5), rng.uniform(1.5, 3.0)  # (at most 13.5 px from the middle: never cut off)
    theta = np.deg2rad(rng.uniform(-15, 15))
    brightness = rng.uniform(200, 255)
    p = _grid() - centre
    name = CLASSES[cls]
    if name == "circle":
        aspect, turn = rng.uniform(0.8, 1.0), np.exp(-1j * rng.uniform(0, np.pi))
        q = p * turn
        dist = np.abs(np.abs(q.real + 1j * q.imag / aspect) - r)
    else:
        dist = np.full(p.shape, np.inf)
        for a, b in _segments(name, r, theta):
            ab = b - a
            t = np.clip(((p - a) * np.conj(ab)).real / abs(ab) ** 2, 0.0, 1.0)
            dist = np.minimum(dist, np.abs(p - a - t * ab))
    ink = (dist <= width / 2).reshape(SIZE, SUPER, SIZE, SUPER).mean(axis=(1, 3))
    return np.round(ink * brightness).astype(np.uint8)


def make(per_class: int = PER_CLASS) -> dict[str, np.ndarray]:
    """`images` (n, 28, 28) uint8, `labels` (n,) uint8 (class after class), `classes` (the names)."""
    images = np.stack([draw(c, i) for c in range(len(CLASSES)) for i in range(per_class)])
    labels = np.repeat(np.arange(len(CLASSES), dtype=np.uint8), per_class)
    return {"images": images, "labels": labels, "classes": np.array(CLASSES)}


def save_npz(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """`np.savez_compressed`, but with fixed zip dates (NumPy stamps each entry with the time of writing), so the
    same arrays make the same bytes and a regenerated file shows no change in git."""
    with zipfile.ZipFile(path, "w") as z:
        for name, value in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with z.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(value), allow_pickle=False)


def png_bytes(image: np.ndarray) -> bytes:
    """An 8-bit grayscale PNG of a (h, w) uint8 array: signature, IHDR, one zlib IDAT, IEND."""
    h, w = image.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + image[y].tobytes() for y in range(h))  # filter 0 (none) per row
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def write_png_folder(dest: str | Path, npz: str | Path = NPZ, per_class: int | None = None) -> Path:
    """`dest/<class>/<class>_NNNN.png` for every image of `npz` (or the first `per_class` of each class): the
    layout `keras.utils.image_dataset_from_directory(dest)` reads, labels from the folder names."""
    dest = Path(dest)
    with np.load(npz, allow_pickle=False) as z:
        images, labels, classes = z["images"], z["labels"], [str(c) for c in z["classes"]]
    for c, name in enumerate(classes):
        (dest / name).mkdir(parents=True, exist_ok=True)
        for i, k in enumerate(np.flatnonzero(labels == c)[:per_class]):
            (dest / name / f"{name}_{i:04d}.png").write_bytes(png_bytes(images[k]))
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", metavar="DIR", help="write the PNG folders of shapes.npz into DIR instead")
    args = ap.parse_args(argv)
    if args.png:
        print(write_png_folder(args.png))
        return 0
    data = make()
    save_npz(NPZ, data)
    print(f"{NPZ}: {len(data['images'])} images, {NPZ.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
