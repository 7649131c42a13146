#!/usr/bin/env python3
"""Regenerates the exp and expm1 coefficients in fast_math.cc: near-minimax polynomials (in
double precision, Lawson's iteration on weighted least squares) for the relative error on
|r| <= ln2 / 2, the range left by the Cody-Waite reduction.

- exp: e^r = 1 + r + c2 r^2 + ... + c6 r^6 (the first two terms exact, so e^0 = 1);
- expm1: expm1(r) / r = 1 + r / 2 + d2 r^2 + ... + d6 r^6.

Prints each error with the coefficients rounded to f32, then the coefficients."""
import numpy as np

N = 4000
R = np.cos(np.pi * (np.arange(N) + 0.5) / N) * np.log(2) / 2 * 1.0001


def fit(target, fixed, degree):
    """Coefficients of degree len(fixed)..degree minimizing max |p / target - 1|."""
    powers = np.arange(len(fixed), degree + 1)
    a = R[:, None] ** powers / target[:, None]
    b = 1 - sum(c * R**k for k, c in enumerate(fixed)) / target
    w = np.ones(N)
    for _ in range(300):
        sw = np.sqrt(w)
        coef, *_ = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)
        err = np.abs(a @ coef - b)
        w = w * err / np.sum(w * err)
    rounded = np.float32(coef).astype(np.float64)
    return rounded, np.max(np.abs(a @ rounded - b))


for name, target, fixed in (("exp", np.exp(R), [1, 1]), ("expm1", np.expm1(R) / R, [1, 0.5])):
    coef, err = fit(target, fixed, 6)
    print(f"{name}: max relative error {err:.2e}")
    print(",\n".join(f"{c:.9g}" for c in coef))
