#!/usr/bin/env python3
"""Writes an MNIST-shaped batch for mnist_train.graph: DIR/x.npy (256, 784) f32 centred pixels
in [-1, 1) and DIR/labels.npy (256,) int32, the argmax of a fixed random linear map of the
pixels, so the ten classes are linearly separable.

usage: mnist_data.py DIR [SEED]
"""
import os
import sys

import numpy as np


def make_batch(seed=0, batch=256, pixels=784, classes=10):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (batch, pixels)).astype(np.float32)
    teacher = rng.standard_normal((pixels, classes)).astype(np.float32)
    labels = np.argmax(x @ teacher, axis=1).astype(np.int32)
    return x, labels


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x, labels = make_batch(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "labels.npy"), labels)
