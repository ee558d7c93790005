"""A conditional DCGAN on the 6,400 28x28 shapes shipped in resources/data (8 classes): after 3,000 steps (85-190 s
on a busy 2-core CPU) each column draws its shape cleanly (circles, crosses, diamonds, pluses, squares, triangles;
stars the roughest), and sharper still by 6,000.

What it shows, in one GAN-shortcut file: data through tf.data (a seeded shuffle and a random shift of every
image by up to 2 pixels, made by stateless ops keyed by the batch's index, so a resumed or replayed run reads the
batches the run never interrupted would have read); labels given to both models (`conditional = True`: the
generator is told which shape to draw, the discriminator scores an image as that shape by a projection of the
label's embedding); the samples view as one column per class (real shapes on top, generated below); and FID/KID
curves in a feature space trained on the shapes when the run first starts (a few seconds, then cached).
"""
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from training_core import quality

noise_dim = 32
batch_size = 64
# Adam at 1e-3 (beta_1 0.5), not DCGAN's 2e-4: in the same 3,000 steps the samples went from "told apart, not
# crisp" to clean strokes (FID 2.32 -> 0.96 at seed 0, 1.72 -> 0.54 at seed 1; 5e-4 was between), and it still
# improved at 6,000 steps (FID 0.53) without a collapse. Measured 2026-12-02 (the issue 24 notes).
learning_rate = 1e-3
ratio = "1:1"
sample_kind = "images"
conditional = True
SHIFT = 2  # pixels: the augmentation moves each image by -SHIFT..SHIFT in x and in y

_z = np.load(Path(__file__).resolve().parent.parent / "data" / "shapes.npz")
IMAGES = (_z["images"].astype(np.float32) / 127.5 - 1.0)[..., None]  # 0..255 -> -1..1, (6400, 28, 28, 1)
LABELS = _z["labels"].astype(np.int32)
CLASSES = [str(c) for c in _z["classes"]]  # arrow circle cross diamond plus square star triangle
K = len(CLASSES)

# FID and KID are measured in a small classifier trained on the shapes: trained the first time (seconds), loaded
# from its cache file afterwards, by every run and seed. Its numbers compare runs, not papers (docs/quality.md).
space = quality.trained_features(IMAGES, LABELS)
reference = space.reference(IMAGES)


def optimizer(phase):
    return keras.optimizers.Adam(learning_rate, beta_1=0.5)


def _shift(i, index):
    """The batch `index` (row numbers into IMAGES) as images moved by up to SHIFT pixels each, from a seed made
    of the batch's number `i` in the stream: the same batch of a replay moves the same way."""
    seed = tf.stack([tf.cast(i, tf.int32), 24])
    d = tf.random.stateless_uniform([batch_size, 2], seed=seed, minval=0, maxval=2 * SHIFT + 1, dtype=tf.int32)
    x = tf.pad(tf.gather(_images, index), [[0, 0], [SHIFT, SHIFT], [SHIFT, SHIFT], [0, 0]], constant_values=-1.0)
    r = tf.range(28)
    x = tf.gather(x, d[:, :1] + r, axis=1, batch_dims=1)  # rows dy..dy+27 of each image
    x = tf.gather(x, d[:, 1:] + r, axis=2, batch_dims=1)  # then columns dx..dx+27
    return x, tf.gather(_labels, index)


_images, _labels = tf.constant(IMAGES), tf.constant(LABELS)


def real_data():
    # Row numbers are shuffled, not images: the shuffle buffer, which every checkpoint holds, is 6,400 integers.
    rows = tf.data.Dataset.range(len(IMAGES)).shuffle(len(IMAGES), seed=0).repeat()
    return rows.batch(batch_size, drop_remainder=True).enumerate().map(_shift)


def generator():
    with keras.name_scope("generator"):
        z, y = keras.Input((noise_dim,), name="z"), keras.Input((), dtype="int32", name="label")
        h = keras.layers.Concatenate(name="z_and_label")([z, keras.layers.Embedding(K, 8, name="label_emb")(y)])
        h = keras.layers.Dense(7 * 7 * 32, name="dense")(h)
        h = keras.layers.BatchNormalization(name="bn_1")(h)
        h = keras.layers.LeakyReLU(0.2, name="act_1")(h)
        h = keras.layers.Reshape((7, 7, 32), name="reshape")(h)
        h = keras.layers.Conv2DTranspose(32, 4, strides=2, padding="same", name="deconv_1")(h)  # 14x14
        h = keras.layers.BatchNormalization(name="bn_2")(h)
        h = keras.layers.LeakyReLU(0.2, name="act_2")(h)
        out = keras.layers.Conv2DTranspose(1, 4, strides=2, padding="same", activation="tanh", name="deconv_2")(h)
        return keras.Model([z, y], out, name="generator")  # 28x28


def discriminator():
    with keras.name_scope("discriminator"):
        x, y = keras.Input((28, 28, 1), name="image"), keras.Input((), dtype="int32", name="label")
        h = keras.layers.Conv2D(32, 4, strides=2, padding="same", name="conv_1")(x)
        h = keras.layers.LeakyReLU(0.2, name="act_1")(h)
        h = keras.layers.Conv2D(64, 4, strides=2, padding="same", name="conv_2")(h)
        h = keras.layers.LeakyReLU(0.2, name="act_2")(h)
        h = keras.layers.Flatten(name="flatten")(h)  # where a stroke is matters: no global pooling
        # the projection discriminator (Miyato & Koyama 2018): D(x, y) = w.h(x) + embed(y).h(x)
        proj = keras.layers.Dot(axes=1, name="projection")([h, keras.layers.Embedding(K, 7 * 7 * 64, name="label_emb")(y)])
        out = keras.layers.Add(name="out")([keras.layers.Dense(1, name="dense")(h), proj])
        return keras.Model([x, y], out, name="discriminator")


def sample(ctx):
    """One column per class: two real shapes of that class on top (from the step's real rows), eight generated
    below; the window draws the first 16 reals in 2 rows of 8 and 64 fakes in 8 rows of 8."""
    x, y = ctx.batch
    real = np.full((2 * K,) + IMAGES.shape[1:], -1.0, np.float32)  # black where the rows hold no such shape
    for c in range(K):
        mine = x[y == c][:2]
        real[c:c + K * len(mine):K] = mine
    labels = np.tile(np.arange(K, dtype=np.int32), ctx.n // K)
    fake = ctx.models.generator([ctx.normal((len(labels), noise_dim)), keras.ops.convert_to_tensor(labels)],
                                training=False)
    return {"real": real, "fake": np.asarray(fake)}


METRIC_SAMPLES = 512  # of the 2,048 ctx.n offers: a measure then costs ~0.5 s here, not ~2 s, so the curves get a
# point every ~10 s instead of every ~40 s (a measure takes at most 5% of the time). FID at a fixed n: comparable.


def metrics(ctx):
    n = METRIC_SAMPLES
    labels = keras.ops.convert_to_tensor(np.arange(n, dtype=np.int32) % K)  # every class alike, as the data
    fake = ctx.models.generator([ctx.normal((n, noise_dim)), labels], training=False)
    return quality.scores(space, reference, fake)  # {"fid", "kid", "kid_std"}
