#!/usr/bin/env python3
"""Regenerates the erfc coefficients in fast_math.cc: a degree-12 Chebyshev fit (in double
precision) of R(x) = erfc(x) * exp(x^2) on [1, 4] in u = (x - 2.5) / 1.5, printed as monomial
coefficients in u, lowest degree first. Prints the max relative error of R evaluated in f32."""
import math

import numpy as np
from numpy.polynomial import chebyshev

N = 2000
xs = np.cos(np.pi * (np.arange(N) + 0.5) / N) * 1.5 + 2.5
coef = chebyshev.cheb2poly(chebyshev.chebfit((xs - 2.5) / 1.5,
                                             [math.erfc(x) * math.exp(x * x) for x in xs], 12))
xt = np.linspace(1, 4, 100001).astype(np.float32)
u = ((xt - np.float32(2.5)) * np.float32(1 / 1.5)).astype(np.float32)
acc = np.float32(coef[-1])
for c in coef[-2::-1]:
    acc = (acc * u + np.float32(c)).astype(np.float32)
ref = np.array([math.erfc(x) * math.exp(x * x) for x in xt.astype(float)])
print('max relative error of R in f32:', np.max(np.abs(acc / ref - 1)))
print(',\n'.join(f'{c:.17g}' for c in coef))
