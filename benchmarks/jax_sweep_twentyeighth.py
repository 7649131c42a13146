#!/usr/bin/env python3
"""Benchmark (not a test): a twenty-eighth sweep of JAX programs, run exactly as jax_sweep.py
runs its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked),
on classical machine learning and signal processing as JAX code has it: a biquad IIR filter
and Goertzel's algorithm as scans, an FIR filter, autocorrelation and a Hilbert envelope by
FFT, an STFT, full-batch logistic regression and minibatch SVM training loops, k-nearest
neighbours, PCA and spectral embedding by eigh, Gaussian naive Bayes, a decision stump search,
EM for a diagonal Gaussian mixture, ridge regression by Cholesky, random Fourier features,
an exponential moving average as a scan, peak picking, zero
crossings, a 1-D median filter, a DCT by matrix, a histogram of gradient orientations and
kernel ridge prediction.
Written as held-out programs; k-nearest neighbours, the mixture's EM, the STFT, the DCT, the
spectral embedding and the EMA are other formulations or shapes of programs in earlier
sweeps.

    .venv/bin/python benchmarks/jax_sweep_twentyeighth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    r = np.random.RandomState(28)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def biquad(x):
        b0, b1, b2, a1, a2 = 0.2, 0.4, 0.2, -0.6, 0.2

        def step(s, xn):
            x1, x2, y1, y2 = s
            y = b0 * xn + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
            return (xn, x1, y, y1), y
        z = jnp.zeros((), x.dtype)
        return lax.scan(step, (z, z, z, z), x)[1]

    def goertzel(x, freqs):
        coeff = 2 * jnp.cos(2 * jnp.pi * freqs / x.shape[0])

        def step(s, xn):
            s1, s2 = s
            s0 = xn + coeff * s1 - s2
            return (s0, s1), None
        (s1, s2), _ = lax.scan(step, (jnp.zeros_like(freqs), jnp.zeros_like(freqs)), x)
        return s1 * s1 + s2 * s2 - coeff * s1 * s2

    def fir(x, taps):
        return jnp.convolve(x, taps, mode='same')

    def autocorrelation(x):
        n = x.shape[0]
        f = jnp.fft.rfft(x - x.mean(), 2 * n)
        ac = jnp.fft.irfft(f * jnp.conj(f))[:n]
        return ac / ac[0]

    def hilbert_envelope(x):
        n = x.shape[0]
        h = jnp.zeros(n).at[0].set(1).at[1:n // 2].set(2).at[n // 2].set(1)
        return jnp.abs(jnp.fft.ifft(jnp.fft.fft(x) * h))

    def stft(x):
        frame, hop = 512, 128
        idx = jnp.arange(0, x.shape[0] - frame + 1, hop)[:, None] + jnp.arange(frame)[None, :]
        return jnp.abs(jnp.fft.rfft(x[idx] * jnp.hanning(frame), axis=-1))

    def logistic_regression(x, y):
        def step(i, w):
            p = jax.nn.sigmoid(x @ w)
            return w - 0.1 * x.T @ (p - y) / x.shape[0]
        return lax.fori_loop(0, 50, step, jnp.zeros(x.shape[1], x.dtype))

    def svm_sgd(xb, yb):
        def step(w, batch):
            x, y = batch
            margin = y * (x @ w)
            grad = 1e-3 * w - ((margin < 1) * y) @ x / x.shape[0]
            return w - 0.05 * grad, jnp.mean(jnp.maximum(0, 1 - margin))
        return lax.scan(step, jnp.zeros(xb.shape[2], xb.dtype), (xb, yb))

    def knn(q, refs, labels):
        d = (q * q).sum(1)[:, None] - 2 * q @ refs.T + (refs * refs).sum(1)[None, :]
        _, idx = lax.top_k(-d, 5)
        votes = jax.nn.one_hot(labels[idx], 10).sum(1)
        return jnp.argmax(votes, axis=1)

    def pca(x):
        xc = x - x.mean(0)
        w, v = jnp.linalg.eigh(xc.T @ xc / x.shape[0])
        top = v[:, ::-1][:, :16]
        return jnp.abs(xc @ top)  # eigenvectors' signs are arbitrary

    def naive_bayes(x, y, xt):
        oh = jax.nn.one_hot(y, 10)
        n = oh.sum(0)
        mu = oh.T @ x / n[:, None]
        var = oh.T @ (x * x) / n[:, None] - mu * mu + 1e-3
        ll = -0.5 * (((xt[:, None, :] - mu) ** 2) / var + jnp.log(var)).sum(-1)
        return jnp.argmax(ll + jnp.log(n / n.sum()), axis=1)

    def decision_stump(x, y):
        order = jnp.argsort(x, axis=0)
        ys = y[order]  # labels in each feature's order
        left = jnp.cumsum(ys, axis=0)
        total = ys.sum(0)
        k = jnp.arange(1, x.shape[0] + 1, dtype=x.dtype)[:, None]
        gain = left ** 2 / k + (total - left) ** 2 / jnp.maximum(x.shape[0] - k, 1)
        best = jnp.argmax(gain[:-1], axis=0)
        return best, jnp.max(gain[:-1], axis=0)

    def gmm_em(x, mu0):
        def step(i, s):
            mu, var, pi = s
            ll = -0.5 * (((x[:, None, :] - mu) ** 2) / var + jnp.log(var)).sum(-1) + jnp.log(pi)
            resp = jax.nn.softmax(ll, axis=1)
            nk = resp.sum(0) + 1e-6
            mu = resp.T @ x / nk[:, None]
            var = resp.T @ (x * x) / nk[:, None] - mu * mu + 1e-3
            return mu, var, nk / x.shape[0]
        k = mu0.shape[0]
        return lax.fori_loop(0, 5, step, (mu0, jnp.ones_like(mu0), jnp.full(k, 1.0 / k)))

    def ridge(x, y):
        a = x.T @ x + 1.0 * jnp.eye(x.shape[1], dtype=x.dtype)
        c = jnp.linalg.cholesky(a)
        return jax.scipy.linalg.cho_solve((c, True), x.T @ y)

    def random_fourier(x, w, b, beta):
        return jnp.cos(x @ w + b) @ beta * np.sqrt(2.0 / w.shape[1])

    def spectral_embedding(x):
        d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
        a = jnp.exp(-d2 / 8.0)
        dinv = lax.rsqrt(a.sum(1))
        lap = a * dinv[:, None] * dinv[None, :]
        w, v = jnp.linalg.eigh(lap)
        return w[-8:]

    def ema(xs):
        def step(s, x):
            s = 0.95 * s + 0.05 * x
            return s, s
        return lax.scan(step, xs[0], xs)[1]

    def peaks(x):
        mid = x[1:-1]
        is_peak = (mid > x[:-2]) & (mid >= x[2:]) & (mid > 1.0)
        return is_peak.sum(), jnp.where(is_peak, mid, 0).max()

    def zero_crossings(frames):
        s = jnp.signbit(frames)
        return (s[:, 1:] != s[:, :-1]).sum(1)

    def median_filter(x):
        n = x.shape[0]
        p = jnp.pad(x, 2, mode='edge')
        stacked = jnp.stack([p[i:i + n] for i in range(5)])
        return jnp.sort(stacked, axis=0)[2]

    def dct(x):
        n = x.shape[1]
        k = np.arange(n)
        m = np.cos(np.pi / n * (k[None, :] + 0.5) * k[:, None]).astype(np.float32)
        return x @ m.T

    def gradient_histogram(img):
        gx = img[1:-1, 2:] - img[1:-1, :-2]
        gy = img[2:, 1:-1] - img[:-2, 1:-1]
        mag = jnp.sqrt(gx * gx + gy * gy)
        ang = jnp.arctan2(gy, gx) % jnp.pi
        bins = jnp.clip((ang / jnp.pi * 9).astype(jnp.int32), 0, 8)
        return (jax.nn.one_hot(bins, 9) * mag[..., None]).reshape(-1, 9).sum(0)

    def kernel_ridge(xtr, alpha, xte):
        d2 = (xte * xte).sum(1)[:, None] - 2 * xte @ xtr.T + (xtr * xtr).sum(1)[None, :]
        return jnp.exp(-d2 / 64.0) @ alpha

    t = np.arange(1 << 14, dtype=np.float32)
    tone = (np.sin(0.05 * t) + 0.3 * f32(1 << 14)).astype(np.float32)
    xlr = f32(4096, 64)
    ylr = (xlr @ f32(64) > 0).astype(np.float32)
    xsvm = f32(64, 64, 128)
    ysvm = np.sign(xsvm @ f32(128)).astype(np.float32)
    xnb = f32(8192, 32) + np.repeat(np.arange(10), 820)[:8192, None].astype(np.float32) * 0.3
    ynb = np.repeat(np.arange(10), 820)[:8192].astype(np.int32)
    clusters = (f32(4096, 8) + 3 * r.randint(0, 8, (4096, 1))).astype(np.float32)
    return {
        'biquad iir filter scan 2^14': (biquad, [tone], 1e-3),
        'goertzel 64 frequencies scan 4096': (
            goertzel, [tone[:4096], np.arange(1, 65, dtype=np.float32) * 8], 1e-2),
        'fir filter 63 taps 2^16': (fir, [f32(1 << 16), f32(63)]),
        'autocorrelation by rfft 2^16': (autocorrelation, [f32(1 << 16)], 1e-3),
        'hilbert envelope by fft 2^15': (hilbert_envelope, [f32(1 << 15)], 1e-3),
        'stft 512 hop 128 of 2^16': (stft, [f32(1 << 16)], 1e-3),
        'logistic regression fori 50 4096x64': (logistic_regression, [xlr, ylr], 1e-3),
        'linear svm minibatch sgd scan 64 x 64x128': (svm_sgd, [xsvm, ysvm], 1e-3),
        'k nearest neighbours 1024 of 8192 x 128': (
            knn, [f32(1024, 128), f32(8192, 128), r.randint(0, 10, 8192).astype(np.int32)]),
        'pca by eigh 4096x128 top 16': (pca, [f32(4096, 128) * np.linspace(0.1, 3, 128).astype(
            np.float32)], 1e-2),
        'gaussian naive bayes 8192x32 10 classes': (naive_bayes, [xnb, ynb, f32(2048, 32)]),
        'decision stump search 4096x32': (
            decision_stump, [f32(4096, 32), (r.rand(4096) > 0.5).astype(np.float32)], 1e-3),
        'gmm em fori 5 4096x8 k8': (gmm_em, [clusters, clusters[:8]], 1e-2),
        'ridge by cholesky 4096x256': (ridge, [f32(4096, 256), f32(4096, 4)], 1e-3),
        'random fourier features 4096x32 -> 1024': (
            random_fourier, [f32(4096, 32), f32(32, 1024), r.uniform(0, 6.28, 1024).astype(
                np.float32), f32(1024)], 1e-3),
        'spectral embedding eigh 512x16': (spectral_embedding, [f32(512, 16)], 1e-2),
        'exponential moving average scan 8192 x 32': (ema, [f32(8192, 32)]),
        'peak picking 2^20': (peaks, [f32(1 << 20)]),
        'zero crossings 1024 frames of 512': (zero_crossings, [f32(1024, 512)]),
        'median filter 5 of 2^18': (median_filter, [f32(1 << 18)]),
        'dct-ii by matrix 4096x256': (dct, [f32(4096, 256)], 1e-3),
        'gradient orientation histogram 512x512': (gradient_histogram, [f32(512, 512)], 1e-3),
        'kernel ridge predict 2048 train 512 test': (
            kernel_ridge, [f32(2048, 16), f32(2048), f32(512, 16)], 1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
