#!/usr/bin/env python3
"""Regenerates the atan coefficients of FastAtan2F32 in fast_math.cc: a near-minimax
polynomial (double precision, Lawson's iteration on weighted least squares) for the relative
error of atan(u) = u + u^3 P(u^2) on |u| <= tan(pi/8), the range left by the reduction.

Prints the error with the coefficients rounded to f32 for degrees 3 to 5 of P, then the
coefficients (fast_math.cc uses degree 4)."""
import numpy as np

N = 4000
U = np.abs(np.cos(np.pi * (np.arange(N) + 0.5) / N) * np.tan(np.pi / 8) * 1.0001)
U = U[U > 1e-4]


def fit(degree):
    target = np.arctan(U)
    a = U[:, None] ** 3 * (U[:, None] ** 2) ** np.arange(degree + 1) / target[:, None]
    b = 1 - U / target
    w = np.ones(len(U))
    for _ in range(300):
        sw = np.sqrt(w)
        coef, *_ = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)
        err = np.abs(a @ coef - b)
        w = w * err / np.sum(w * err)
    rounded = np.float32(coef).astype(np.float64)
    return rounded, np.max(np.abs(a @ rounded - b))


for degree in (3, 4, 5):
    coef, err = fit(degree)
    print(f'degree {degree}: max relative error {err:.3g}: {[float(c) for c in coef]}')
