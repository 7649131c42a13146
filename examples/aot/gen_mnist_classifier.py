#!/usr/bin/env python3
"""Writes mnist_classifier.hlo: an MNIST classifier's forward pass for a batch of 32 images,
x[32,784] -> dense 512 + ReLU -> dense 10 -> softmax, returning (probabilities[32,10],
logits[32,10]); the weights are parameters (x, w1[784,512], b1[512], w2[512,10], b2[10]).
usage: gen_mnist_classifier.py [OUT_FILE] (default: mnist_classifier.hlo beside this file)"""
import os
import sys

B, D, H, C = 32, 784, 512, 10
TEXT = f"""// An MNIST classifier's forward pass (dense {D}-{H}-{C}, ReLU, softmax), batch {B};
// written by gen_mnist_classifier.py.
HloModule mnist_classifier

max_f32 {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}}

add_f32 {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}

ENTRY main {{
  x = f32[{B},{D}] parameter(0)
  w1 = f32[{D},{H}] parameter(1)
  b1 = f32[{H}] parameter(2)
  w2 = f32[{H},{C}] parameter(3)
  b2 = f32[{C}] parameter(4)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  xw = f32[{B},{H}] dot(x, w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  b1b = f32[{B},{H}] broadcast(b1), dimensions={{1}}
  pre = f32[{B},{H}] add(xw, b1b)
  zb = f32[{B},{H}] broadcast(zero), dimensions={{}}
  h = f32[{B},{H}] maximum(pre, zb)
  hw = f32[{B},{C}] dot(h, w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  b2b = f32[{B},{C}] broadcast(b2), dimensions={{1}}
  logits = f32[{B},{C}] add(hw, b2b)
  m = f32[{B}] reduce(logits, ninf), dimensions={{1}}, to_apply=max_f32
  mb = f32[{B},{C}] broadcast(m), dimensions={{0}}
  shifted = f32[{B},{C}] subtract(logits, mb)
  e = f32[{B},{C}] exponential(shifted)
  s = f32[{B}] reduce(e, zero), dimensions={{1}}, to_apply=add_f32
  sb = f32[{B},{C}] broadcast(s), dimensions={{0}}
  probs = f32[{B},{C}] divide(e, sb)
  ROOT out = (f32[{B},{C}], f32[{B},{C}]) tuple(probs, logits)
}}
"""

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                               "mnist_classifier.hlo")
    with open(out, "w") as f:
        f.write(TEXT)
