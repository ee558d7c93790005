"""quality/distances.py against plain NumPy written here: the Fréchet distance of Gaussians in closed form and of
sample sets by the textbook formula (the eigenvalues of the covariances' product), KID by its definition on whole
sets, unbiased (its mean over many pairs of sets of one distribution is 0, where the biased estimate is not), both
growing as samples degrade; the two ways of summing KID's subsets agree; bad input is one line."""
from __future__ import annotations

import numpy as np
import pytest

from training_core.base.errors import UserError
from training_core.quality import Gaussian, frechet_distance, gaussian, kernel_distance
from training_core.quality.distances import across_sums, real_subset_sums, within_sums


def _textbook_fd(x: np.ndarray, y: np.ndarray) -> float:
    """FID as the papers write it, with the eigenvalues of Σx Σy for Tr((Σx Σy)^½) (all real and >= 0 in exact
    arithmetic: the product of two PSD matrices is similar to a PSD one)."""
    mx, my = x.mean(0), y.mean(0)
    sx, sy = np.cov(x, rowvar=False), np.cov(y, rowvar=False)
    root_trace = np.sqrt(np.clip(np.linalg.eigvals(sx @ sy).real, 0, None)).sum()
    return float(((mx - my) ** 2).sum() + np.trace(sx) + np.trace(sy) - 2 * root_trace)


def _mmd2_unbiased(x: np.ndarray, y: np.ndarray) -> float:
    """MMD²u with k(a, b) = (aᵀb / d + 1)³, by its definition, loops over pairs written as sums."""
    d, m, n = x.shape[1], len(x), len(y)
    k = lambda a, b: (a @ b.T / d + 1) ** 3  # noqa: E731
    kxx, kyy, kxy = k(x, x), k(y, y), k(x, y)
    return float((kxx.sum() - np.trace(kxx)) / (m * (m - 1)) + (kyy.sum() - np.trace(kyy)) / (n * (n - 1))
                 - 2 * kxy.mean())


def _random_cov(rng: np.random.Generator, d: int) -> np.ndarray:
    a = rng.normal(size=(d, d))
    return a @ a.T / d + 0.1 * np.eye(d)


def test_the_frechet_distance_of_two_gaussians_is_their_closed_form():
    rng = np.random.default_rng(0)
    d = 6
    m1, m2 = rng.normal(size=d), rng.normal(size=d)
    # diagonal (commuting) covariances: ‖μ1 − μ2‖² + Σ (√a − √b)²
    a, b = rng.uniform(0.2, 3, d), rng.uniform(0.2, 3, d)
    got = frechet_distance(Gaussian(m1, np.diag(a), 100), Gaussian(m2, np.diag(b), 100))
    assert got == pytest.approx(((m1 - m2) ** 2).sum() + ((np.sqrt(a) - np.sqrt(b)) ** 2).sum(), rel=1e-12)
    # one Gaussian and itself rotated: the means' distance only when the covariance is isotropic...
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    iso = 2.0 * np.eye(d)
    assert frechet_distance(Gaussian(m1, iso, 9), Gaussian(m1 + 1, q @ iso @ q.T, 9)) == pytest.approx(d, rel=1e-12)
    # ...and in general the textbook trace, here from the symmetric square root of each covariance
    s1, s2 = _random_cov(rng, d), _random_cov(rng, d)
    w1, v1 = np.linalg.eigh(s1)
    r1 = v1 @ np.diag(np.sqrt(w1)) @ v1.T
    w, _ = np.linalg.eigh(r1 @ s2 @ r1)
    want = ((m1 - m2) ** 2).sum() + np.trace(s1 + s2) - 2 * np.sqrt(w).sum()
    assert frechet_distance(Gaussian(m1, s1, 9), Gaussian(m2, s2, 9)) == pytest.approx(want, rel=1e-10)


def test_the_frechet_distance_of_samples_is_the_textbook_formula():
    rng = np.random.default_rng(1)
    for n, d in ((500, 8), (40, 64)):  # the second has singular covariances (fewer rows than dimensions)
        x = rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
        y = rng.normal(size=(n, d)) * 1.3 + 0.2
        got = frechet_distance(x, y)
        assert np.isfinite(got) and got == pytest.approx(_textbook_fd(x, y), rel=1e-6)
        assert frechet_distance(gaussian(x), y) == got  # a Gaussian fitted once measures the same
    x = rng.normal(size=(300, 5))
    assert frechet_distance(x, x) == pytest.approx(0.0, abs=1e-9)
    shift = np.array([0.5, -1.0, 0.0, 2.0, 0.1])
    assert frechet_distance(x, x + shift) == pytest.approx((shift ** 2).sum(), rel=1e-9)


def test_the_kernel_distance_on_whole_sets_is_the_unbiased_mmd_with_the_cubic_kernel():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(120, 7)), rng.normal(size=(150, 7)) + 0.3
    one = kernel_distance(x, y, subsets=1, subset_size=500)  # subsets of at most the smaller set's 120 rows
    assert one.subset_size == 120 and one.subsets == 1 and one.std == 0.0
    assert kernel_distance(x, x[::-1], subsets=3, subset_size=120).mean == pytest.approx(_mmd2_unbiased(x, x),
                                                                                          rel=1e-10)
    z = rng.normal(size=(120, 7)) * 2
    assert kernel_distance(x, z, subsets=2, subset_size=500).mean == pytest.approx(_mmd2_unbiased(x, z), rel=1e-10)
    # identical sets: below 0 (the diagonal is left out of the within-set sums, not of the cross sum)
    assert _mmd2_unbiased(x, x) < 0 and kernel_distance(x, x).mean < 0


def test_the_kernel_distance_is_unbiased_and_the_biased_estimate_is_not():
    """Over 40 pairs of independent sets drawn from one distribution the estimates average to 0 (within 3 standard
    errors), and are negative about half the time; the V-statistic (diagonal kept) is positive every time."""
    rng = np.random.default_rng(3)
    ours, biased = [], []
    for _ in range(40):
        x, y = rng.normal(size=(60, 4)), rng.normal(size=(60, 4))
        ours.append(kernel_distance(x, y, subsets=1, subset_size=60).mean)
        k = lambda a, b: (a @ b.T / 4 + 1) ** 3  # noqa: E731
        biased.append(k(x, x).mean() + k(y, y).mean() - 2 * k(x, y).mean())
    ours = np.array(ours)
    assert abs(ours.mean()) < 3 * ours.std(ddof=1) / np.sqrt(len(ours))
    assert 5 < (ours < 0).sum() < 35
    assert min(biased) > 0 and np.mean(biased) > 10 * ours.std(ddof=1) / np.sqrt(len(ours))


def test_both_distances_grow_as_samples_degrade():
    rng = np.random.default_rng(4)
    real = rng.normal(size=(2048, 16)) @ rng.normal(size=(16, 16)) / 4  # features of order 1, as KID's kernel wants
    clean = real[rng.permutation(2048)] + rng.normal(size=real.shape) * 1e-3
    fids, kids = [], []
    for noise in (0.0, 0.25, 0.5, 1.0, 2.0):
        fake = clean + rng.normal(size=real.shape) * noise
        fids.append(frechet_distance(real, fake))
        kids.append(kernel_distance(real, fake).mean)
    assert fids == sorted(fids) and kids == sorted(kids) and fids[0] < 1e-3 * fids[-1]
    assert abs(kids[0]) < 1e-2 * kids[-1]  # (subsets of one set, drawn apart: near 0, of either sign)


def test_the_two_ways_of_summing_the_subsets_agree():
    """Whole kernel matrices with indicator vectors (small sets) and each subset's own matrices (large sets):
    the same sums on the same subsets, to round-off; `kernel_distance` is repeatable by its seed, and the real
    subsets' sums kept between calls give the same numbers."""
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(700, 12)), rng.normal(size=(900, 12)) * 1.2
    ix = np.stack([rng.choice(700, 300, replace=False) for _ in range(9)])
    iy = np.stack([rng.choice(900, 300, replace=False) for _ in range(9)])
    for whole in (True, False):
        mmd = (within_sums(x, ix, whole) + within_sums(y, iy, whole)) / (300 * 299) \
            - 2 * across_sums(x, y, ix, iy, whole) / 300 ** 2
        for i in range(9):
            assert mmd[i] == pytest.approx(_mmd2_unbiased(x[ix[i]], y[iy[i]]), rel=1e-10)
    a, b = kernel_distance(x, y, 20, 300, seed=1), kernel_distance(x, y, 20, 300, seed=1)
    assert a == b and kernel_distance(x, y, 20, 300, seed=2) != a and a.std > 0
    kept: dict = {}
    assert kernel_distance(x, y, 20, 300, seed=1, real_sums=kept) == a and len(kept) == 1
    assert kernel_distance(x, y * 2, 20, 300, seed=1, real_sums=kept) == kernel_distance(x, y * 2, 20, 300, seed=1)
    early = real_subset_sums(x, 20, 300, seed=1)  # computed before any generated set: the same sums
    assert early.keys() == kept.keys() and np.array_equal(*early.values(), *kept.values())
    big = rng.normal(size=(6000, 12))  # the per-subset way: 6,000² entries would cost more than 20 × 100²
    assert np.isfinite(kernel_distance(big, y, 20, 100).mean)


@pytest.mark.parametrize("call, words", [
    (lambda: frechet_distance(np.zeros((5, 3)), np.zeros((5, 4))), "3 and 4 dimensions"),
    (lambda: kernel_distance(np.zeros((5, 3)), np.zeros((5, 4))), "3 and 4 dimensions"),
    (lambda: frechet_distance(np.zeros((1, 3)), np.zeros((5, 3))), "at least 2 rows"),
    (lambda: kernel_distance(np.ones((5, 3)), np.full((5, 3), np.nan)), "NaN or Inf in 5 of 5 rows"),
    (lambda: kernel_distance(np.ones((5, 3)), np.ones((1, 3))), "at least 2 rows"),
    (lambda: frechet_distance(np.zeros((0, 3)), np.zeros((5, 3))), "n > 0"),
])
def test_bad_input_is_one_line_that_names_it(call, words):
    with pytest.raises(UserError) as e:
        call()
    assert words in str(e.value) and "\n" not in str(e.value) and ";" in str(e.value)
