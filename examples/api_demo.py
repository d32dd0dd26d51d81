#!/usr/bin/env python3
"""The Python API in a few lines (DESIGN §3.3): verify a kernel, load it as a callable, run it.

    python examples/api_demo.py

Runs on any machine: the CUDA kernel executes on the SIMT CPU emulator when no GPU is present,
the C kernel natively. Every result names the substrate it came from.
"""
from pathlib import Path

import numpy as np

import xpiler

HERE = Path(__file__).resolve().parent

# 1. Verify: run the kernel on every instance of its spec against its numpy reference.
verdict = xpiler.test(HERE / "softmax" / "softmax_shfl.cu")
print("verify:", verdict.summary())
assert verdict.verified

# 2. Load a kernel as a Python callable on the best substrate here and call it with numpy arrays.
add = xpiler.load(HERE / "add" / "add.c")
a = np.arange(1237, dtype=np.float32)
b = np.full(1237, 0.5, dtype=np.float32)
c = np.empty_like(a)
add(a, b, c)                      # fills c, like a kernel would (and returns it)
assert np.allclose(c, a + b)
print(f"add on {add.substrate}: c[:4] = {c[:4]}")

softmax = xpiler.load(HERE / "softmax" / "softmax_shfl.cu")
x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
y = softmax(x, np.empty_like(x))
assert np.allclose(y.sum(axis=1), 1.0, atol=1e-5)
print(f"softmax on {softmax.substrate}: row sums = {y.sum(axis=1)[:3]}")

# 3. On a machine with an NVIDIA GPU and torch: CUDA tensors go straight to the kernel (no host copy).
try:
    import torch
    gpu = torch.cuda.is_available() and softmax.substrate.startswith("hw:nvidia")
except ImportError:
    gpu = False
if gpu:
    xt = torch.from_numpy(x).cuda()
    yt = softmax(xt, torch.empty_like(xt))
    assert torch.allclose(yt, torch.softmax(xt, dim=1), atol=1e-5)
    print(f"softmax on CUDA tensors ({softmax.substrate}): max |y - torch.softmax| = "
          f"{(yt - torch.softmax(xt, dim=1)).abs().max().item():.2e}")
