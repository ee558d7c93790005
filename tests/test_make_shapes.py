"""resources/data/make_shapes.py and the shapes.npz it made: what is shipped is what the script draws, small enough
for the repository, and its PNG folders are what `keras.utils.image_dataset_from_directory` reads, with the same
labels and pixels."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "resources" / "data"


@pytest.fixture(scope="module")
def shapes():
    """The script as a module (resources/data is no package), without leaving byte-code beside the data."""
    spec = importlib.util.spec_from_file_location("make_shapes", DATA / "make_shapes.py")
    module = importlib.util.module_from_spec(spec)
    dont, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = dont
    return module


def test_the_shipped_file_holds_800_drawings_of_each_of_8_classes_in_under_a_megabyte(shapes):
    assert (DATA / "shapes.npz").stat().st_size < 1_000_000
    with np.load(DATA / "shapes.npz", allow_pickle=False) as z:
        images, labels, classes = z["images"], z["labels"], list(z["classes"])
    assert images.shape == (6400, 28, 28) and images.dtype == np.uint8 and labels.dtype == np.uint8
    assert classes == sorted(classes) == list(shapes.CLASSES) and len(classes) == 8
    assert np.array_equal(np.bincount(labels), [800] * 8)
    # drawings, not noise: dark borders, some ink in each, and no two alike
    assert images[:, 0, :].max() < 60 and (images.reshape(6400, -1).max(1) > 150).all()
    assert len(np.unique(images.reshape(6400, -1), axis=0)) == 6400


def test_the_script_draws_what_is_shipped(shapes):
    with np.load(DATA / "shapes.npz", allow_pickle=False) as z:
        images, labels = z["images"], z["labels"]
    for c in range(len(shapes.CLASSES)):
        rows = np.flatnonzero(labels == c)
        for i in (0, 1, shapes.PER_CLASS - 1):
            assert np.array_equal(shapes.draw(c, i), images[rows[i]]), (shapes.CLASSES[c], i)


def test_saving_the_same_arrays_twice_makes_the_same_bytes(shapes, tmp_path):
    data = shapes.make(per_class=3)
    shapes.save_npz(tmp_path / "a.npz", data)
    shapes.save_npz(tmp_path / "b.npz", data)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    with np.load(tmp_path / "a.npz", allow_pickle=False) as z:
        assert all(np.array_equal(z[k], v) for k, v in data.items())


def test_the_png_folders_read_back_with_image_dataset_from_directory(shapes, tmp_path):
    import keras
    dest = shapes.write_png_folder(tmp_path / "png", per_class=12)
    assert sorted(p.name for p in dest.iterdir()) == list(shapes.CLASSES)
    ds = keras.utils.image_dataset_from_directory(dest, color_mode="grayscale", image_size=(28, 28),
                                                  batch_size=None, shuffle=False)
    assert ds.class_names == list(shapes.CLASSES)
    got = [(x.numpy()[..., 0], int(y.numpy())) for x, y in ds]
    with np.load(DATA / "shapes.npz", allow_pickle=False) as z:
        images, labels = z["images"], z["labels"]
    want = [(images[k], c) for c in range(8) for k in np.flatnonzero(labels == c)[:12]]
    assert len(got) == len(want) == 96
    for (gx, gy), (wx, wy) in zip(got, want):  # the files of a class in name order: the npz's order
        assert gy == wy and np.array_equal(gx, wx.astype(np.float32))
