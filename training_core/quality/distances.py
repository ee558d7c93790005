"""The two distances between real and generated samples in a feature space: Fréchet (FID's) and kernel (KID's).

Both take features, `(n, d)` arrays (or anything NumPy reads as one: tensors, lists), real first. They are plain
NumPy in float64, so they run anywhere, on any thread, and the same features give the same number.

Fréchet distance (Heusel et al. 2017, "GANs trained by a two time-scale update rule"): fit a Gaussian to each
set and take the squared 2-Wasserstein distance between the two,

    d² = ‖μr − μg‖² + Tr(Σr + Σg − 2 (Σr Σg)^½).

Why not `scipy.linalg.sqrtm(Σr @ Σg)`, as pytorch-fid does: the product of two covariances is not symmetric,
and its square root by Schur decomposition comes back complex with small imaginary parts, or fails on a singular
product (features with fewer samples than dimensions), which pytorch-fid patches by adding ε·I. Only the trace
is needed, and Tr((Σr Σg)^½) = Tr((A Σg A)^½) with A = Σr^½: A Σg A is symmetric positive semi-definite, so its
eigenvalues come from `eigh`, real, and the ones round-off left slightly below zero are clipped to 0. Two
symmetric eigendecompositions, no complex numbers, no ε. The Fréchet distance is biased: its expected value
falls as n grows, so numbers are comparable only at the same n (Chong & Forsyth 2020).

Kernel distance (Bińkowski et al. 2018, "Demystifying MMD GANs"): the squared maximum mean discrepancy with
the cubic polynomial kernel k(x, y) = (xᵀy / d + 1)³, estimated without bias on random subsets of m rows of
each set and averaged over the subsets, with their standard deviation (as torch-fidelity reports it):

    MMD²u = Σ_{i≠j} k(xi, xj) / m(m−1) + Σ_{i≠j} k(yi, yj) / m(m−1) − 2 Σ_{i,j} k(xi, yj) / m².

Unbiased: its expected value is 0 when both sets come from one distribution, so a single estimate can be
negative, and it is comparable across sample sizes. The subsets are drawn from a seeded generator: the same
features give the same value.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from training_core.base.errors import UserError

__all__ = ["Gaussian", "KernelDistance", "frechet_distance", "gaussian", "kernel_distance", "polynomial_kernel"]

#: KID's defaults: 100 subsets of 1,000 rows (Bińkowski et al. 2018; torch-fidelity's too)
KID_SUBSETS, KID_SUBSET_SIZE = 100, 1000
#: the kernel sums of every subset at once come from the whole kernel matrices when these (n_r² + n_g² + n_r n_g
#: entries, computed in blocks of BLOCK_ROWS rows) cost less than the subsets' own matrices (3 S m² entries);
#: an entry costs d + S multiply-adds in the first, d in the second, and ELEMENTWISE more in both (the cube, sums)
BLOCK_ROWS, ELEMENTWISE = 512, 16


def as_features(x: Any, what: str = "features") -> np.ndarray:
    """`x` as a float64 `(n, d)` array: a tensor or array of features, each row flattened."""
    if hasattr(x, "numpy") and callable(x.numpy):
        x = x.numpy()
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0 or a.shape[0] == 0:
        raise UserError(f"{what} must be an array of rows (n, d) with n > 0, got shape {a.shape}; pass one row per "
                        f"sample")
    a = a.reshape(a.shape[0], -1)
    if not np.isfinite(a).all():
        bad = int((~np.isfinite(a)).any(axis=1).sum())
        raise UserError(f"{what} holds NaN or Inf in {bad} of {a.shape[0]} rows; check the model that made them")
    return a


@dataclass
class Gaussian:
    """The mean and covariance of a set of features: all the Fréchet distance uses of it. Fit the real data's
    once (`gaussian(real_features)`) and measure every generated set against it: the square root of its
    covariance, the costlier half of the distance, is then computed once too."""

    mean: np.ndarray  # (d,)
    cov: np.ndarray  # (d, d), with n − 1 in the denominator
    n: int  # the rows it was fitted to
    _root: np.ndarray | None = field(default=None, repr=False, compare=False)

    def sqrt_cov(self) -> np.ndarray:
        """Σ^½, the symmetric square root (computed at the first call, kept)."""
        if self._root is None:
            self._root = _sqrt_psd(self.cov)
        return self._root


def gaussian(features: Any) -> Gaussian:
    """The Gaussian fitted to `features` (`(n, d)`, n ≥ 2)."""
    f = as_features(features)
    if f.shape[0] < 2:
        raise UserError(f"a covariance needs at least 2 rows of features, got {f.shape[0]}; pass more samples")
    return Gaussian(f.mean(axis=0), np.atleast_2d(np.cov(f, rowvar=False)), f.shape[0])


def _sqrt_psd(a: np.ndarray) -> np.ndarray:
    """The symmetric square root of a symmetric positive semi-definite matrix (round-off's negatives as 0)."""
    w, v = np.linalg.eigh(a)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def trace_sqrt_product(a: Gaussian, b: Gaussian) -> float:
    """Tr((Σa Σb)^½), as Tr((R Σb R)^½) with R = Σa^½: the eigenvalues of a symmetric matrix."""
    r = a.sqrt_cov()
    m = r @ b.cov @ r
    w = np.linalg.eigvalsh((m + m.T) / 2)
    return float(np.sqrt(np.clip(w, 0.0, None)).sum())


def frechet_distance(real: Any, fake: Any) -> float:
    """‖μr − μg‖² + Tr(Σr + Σg − 2 (Σr Σg)^½) between two sets of features (`(n, d)` arrays, or `Gaussian`s
    fitted once). Never negative: round-off below 0 (identical sets) is returned as 0. Cost: O(n d² + d³)."""
    a = real if isinstance(real, Gaussian) else gaussian(real)
    b = fake if isinstance(fake, Gaussian) else gaussian(fake)
    if a.mean.shape != b.mean.shape:
        raise UserError(f"the two sets of features have {a.mean.shape[0]} and {b.mean.shape[0]} dimensions; "
                        f"compute both in one feature space")
    diff = a.mean - b.mean
    d2 = float(diff @ diff) + float(np.trace(a.cov) + np.trace(b.cov)) - 2.0 * trace_sqrt_product(a, b)
    return max(d2, 0.0)


def polynomial_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """KID's kernel, k(x, y) = (xᵀy / d + 1)³, between every row of `x` and every row of `y`."""
    k = x @ y.T
    k *= 1.0 / x.shape[1]
    k += 1.0
    return k * k * k  # (not `** 3`: NumPy's float power is several times slower than two products)


@dataclass(frozen=True)
class KernelDistance:
    """The kernel distance: the mean of the subsets' unbiased MMD² estimates, and their standard deviation."""

    mean: float
    std: float
    subsets: int
    subset_size: int

    def __float__(self) -> float:
        return self.mean


def _pair_sums(x: np.ndarray, y: np.ndarray, wx: np.ndarray, wy: np.ndarray) -> np.ndarray:
    """For each subset s: Σ_{i,j} wx[i,s] k(x_i, y_j) wy[j,s], from the whole kernel matrix, BLOCK_ROWS rows of
    it at a time (memory: BLOCK_ROWS × n, never n × n)."""
    out = np.zeros(wx.shape[1])
    for i in range(0, x.shape[0], BLOCK_ROWS):
        k = polynomial_kernel(x[i:i + BLOCK_ROWS], y)
        out += np.einsum("is,is->s", wx[i:i + BLOCK_ROWS], k @ wy)
    return out


def _mmd_whole(x: np.ndarray, y: np.ndarray, ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
    """Every subset's MMD²u at once: a subset's kernel sum is wᵀ K w with w its rows' indicator vector."""
    s, m = ix.shape
    wx, wy = np.zeros((x.shape[0], s)), np.zeros((y.shape[0], s))
    wx[ix, np.arange(s)[:, None]] = 1.0
    wy[iy, np.arange(s)[:, None]] = 1.0
    diag_x = (np.einsum("ij,ij->i", x, x) / x.shape[1] + 1.0) ** 3  # k(x_i, x_i), left out of the sums
    diag_y = (np.einsum("ij,ij->i", y, y) / y.shape[1] + 1.0) ** 3
    kxx = _pair_sums(x, x, wx, wx) - diag_x @ wx
    kyy = _pair_sums(y, y, wy, wy) - diag_y @ wy
    kxy = _pair_sums(x, y, wx, wy)
    return (kxx + kyy) / (m * (m - 1)) - 2.0 * kxy / (m * m)


def _mmd_subsets(x: np.ndarray, y: np.ndarray, ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
    """Every subset's MMD²u from its own m × m kernel matrices (cheaper when the sets are much larger than m)."""
    m = ix.shape[1]
    out = np.empty(ix.shape[0])
    for s, (i, j) in enumerate(zip(ix, iy)):
        a, b = x[i], y[j]
        kxx, kyy, kxy = polynomial_kernel(a, a), polynomial_kernel(b, b), polynomial_kernel(a, b)
        out[s] = ((kxx.sum() - np.trace(kxx)) + (kyy.sum() - np.trace(kyy))) / (m * (m - 1)) - 2.0 * kxy.sum() / (m * m)
    return out


def kernel_distance(real: Any, fake: Any, subsets: int = KID_SUBSETS, subset_size: int = KID_SUBSET_SIZE,
                    seed: int = 0) -> KernelDistance:
    """KID between two sets of features (`(n, d)` arrays): the unbiased MMD² with the cubic polynomial kernel on
    `subsets` random subsets of `subset_size` rows of each (fewer when a set has fewer rows), drawn without
    replacement from a generator seeded with `seed`."""
    x, y = as_features(real, "real features"), as_features(fake, "generated features")
    if x.shape[1] != y.shape[1]:
        raise UserError(f"the two sets of features have {x.shape[1]} and {y.shape[1]} dimensions; compute both "
                        f"in one feature space")
    m = min(int(subset_size), x.shape[0], y.shape[0])
    if m < 2 or int(subsets) < 1:
        raise UserError(f"the kernel distance needs subsets >= 1 of at least 2 rows of each set, got {subsets} "
                        f"subsets of {m} rows; pass more samples")
    rng = np.random.default_rng(seed)
    ix = np.stack([rng.choice(x.shape[0], m, replace=False) for _ in range(int(subsets))])
    iy = np.stack([rng.choice(y.shape[0], m, replace=False) for _ in range(int(subsets))])
    n_x, n_y = x.shape[0], y.shape[0]
    whole = (n_x * n_x + n_y * n_y + n_x * n_y) * (x.shape[1] + int(subsets) + ELEMENTWISE)
    per_subset = 3 * int(subsets) * m * m * (x.shape[1] + ELEMENTWISE)
    mmd = (_mmd_whole if whole <= per_subset else _mmd_subsets)(x, y, ix, iy)
    return KernelDistance(float(mmd.mean()), float(mmd.std()), int(subsets), m)
