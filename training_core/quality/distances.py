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

__all__ = ["Gaussian", "KernelDistance", "frechet_distance", "gaussian", "kernel_distance", "polynomial_kernel",
           "real_subset_sums"]

#: KID's defaults: 100 subsets of 1,000 rows (Bińkowski et al. 2018; torch-fidelity's too)
KID_SUBSETS, KID_SUBSET_SIZE = 100, 1000
#: the kernel sums of every subset at once come from the whole kernel matrix (n_x n_y entries, computed in blocks of
#: BLOCK_ROWS rows) when it costs less than the subsets' own matrices (S m² entries): an entry costs d + S
#: multiply-adds in the first, d in the second, and ELEMENTWISE more in both (the cube, the sums)
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


def _indicators(idx: np.ndarray, n: int) -> np.ndarray:
    """(n, S): column s is 1 at the rows of subset s, so that a subset's kernel sum is wᵀ K w."""
    w = np.zeros((n, idx.shape[0]))
    w[idx, np.arange(idx.shape[0])[:, None]] = 1.0
    return w


def _whole_is_cheaper(n_x: int, n_y: int, idx: np.ndarray, d: int) -> bool:
    s, m = idx.shape
    return n_x * n_y * (d + s + ELEMENTWISE) <= s * m * m * (d + ELEMENTWISE)


def within_sums(x: np.ndarray, ix: np.ndarray, whole: bool | None = None) -> np.ndarray:
    """Σ_{i≠j} k(x_i, x_j) over each subset's rows (`ix`: (S, m) row indices): from the whole kernel matrix, or
    (`whole=False`, or when cheaper) from each subset's own; None chooses the cheaper."""
    if whole if whole is not None else _whole_is_cheaper(x.shape[0], x.shape[0], ix, x.shape[1]):
        w = _indicators(ix, x.shape[0])
        diag = (np.einsum("ij,ij->i", x, x) / x.shape[1] + 1.0) ** 3  # k(x_i, x_i), left out
        return _pair_sums(x, x, w, w) - diag @ w
    out = np.empty(ix.shape[0])
    for s, i in enumerate(ix):
        k = polynomial_kernel(x[i], x[i])
        out[s] = k.sum() - np.trace(k)
    return out


def across_sums(x: np.ndarray, y: np.ndarray, ix: np.ndarray, iy: np.ndarray, whole: bool | None = None) -> np.ndarray:
    """Σ_{i,j} k(x_i, y_j) over each pair of subsets, as `within_sums` computes them."""
    if whole if whole is not None else _whole_is_cheaper(x.shape[0], y.shape[0], ix, x.shape[1]):
        return _pair_sums(x, y, _indicators(ix, x.shape[0]), _indicators(iy, y.shape[0]))
    return np.array([polynomial_kernel(x[i], y[j]).sum() for i, j in zip(ix, iy)])


def _subsets(n_x: int, n_y: int, m: int, subsets: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of each subset, (S, m) each: the real set's first, so that they depend on its size alone."""
    rng = np.random.default_rng(seed)
    ix = np.stack([rng.choice(n_x, m, replace=False) for _ in range(subsets)])
    return ix, np.stack([rng.choice(n_y, m, replace=False) for _ in range(subsets)])


def real_subset_sums(real: Any, subsets: int = KID_SUBSETS, subset_size: int = KID_SUBSET_SIZE, seed: int = 0,
                     into: dict | None = None) -> dict:
    """The real subsets' kernel sums that `kernel_distance(real, fake, ..., real_sums=into)` would compute at its
    first call, computed now (for generated sets of at least `subset_size` rows): a `Reference` does this when it
    is made, at the start of a run, so that the first measure costs what the others do."""
    x = as_features(real, "real features")
    m = min(int(subset_size), x.shape[0])
    into = {} if into is None else into
    ix, _ = _subsets(x.shape[0], m, m, int(subsets), seed)
    into[(x.shape[0], int(subsets), m, seed)] = within_sums(x, ix)
    return into


def kernel_distance(real: Any, fake: Any, subsets: int = KID_SUBSETS, subset_size: int = KID_SUBSET_SIZE,
                    seed: int = 0, real_sums: dict | None = None) -> KernelDistance:
    """KID between two sets of features (`(n, d)` arrays): the unbiased MMD² with the cubic polynomial kernel on
    `subsets` random subsets of `subset_size` rows of each (fewer when a set has fewer rows), drawn without
    replacement from a generator seeded with `seed`.

    `real_sums`: a dict kept by the caller between calls with the same real features (a `Reference` keeps
    one): the real subsets' own kernel sums, which do not depend on the generated set, are then computed once
    per (subsets, rows, seed). With a reference of 2,048 rows that is a third of the work."""
    x, y = as_features(real, "real features"), as_features(fake, "generated features")
    if x.shape[1] != y.shape[1]:
        raise UserError(f"the two sets of features have {x.shape[1]} and {y.shape[1]} dimensions; compute both "
                        f"in one feature space")
    m = min(int(subset_size), x.shape[0], y.shape[0])
    if m < 2 or int(subsets) < 1:
        raise UserError(f"the kernel distance needs subsets >= 1 of at least 2 rows of each set, got {subsets} "
                        f"subsets of {m} rows; pass more samples")
    ix, iy = _subsets(x.shape[0], y.shape[0], m, int(subsets), seed)
    key = (x.shape[0], int(subsets), m, seed)  # what decides ix
    sxx = real_sums.get(key) if real_sums is not None else None
    if sxx is None:
        sxx = within_sums(x, ix)
        if real_sums is not None:
            real_sums[key] = sxx
    mmd = (sxx + within_sums(y, iy)) / (m * (m - 1)) - 2.0 * across_sums(x, y, ix, iy) / (m * m)
    return KernelDistance(float(mmd.mean()), float(mmd.std()), int(subsets), m)
