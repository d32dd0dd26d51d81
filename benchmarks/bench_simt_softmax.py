"""Time the SIMT CPU emulator on a barrier-heavy kernel: row softmax, 64 blocks x 256 threads,
21 __syncthreads() per block (tests/simt/softmax_rows.cu).

Prints the median wall time of one launch measured inside the process (so compile and process
start are excluded), the number of fiber switches, and checks the result against numpy.
This measures the emulator, not a GPU: never report it as kernel performance.

    python benchmarks/bench_simt_softmax.py [--cols 1024] [--repeats 5] [--asan]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xpiler.platforms.cuda import CudaPlatform  # noqa: E402

KERNEL = ROOT / "tests" / "simt" / "softmax_rows.cu"

MAIN = r"""
#include <time.h>
#include <algorithm>
#include <vector>
static double xpb_now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char** argv) {
  int rows = 64, cols = atoi(argv[1]), reps = atoi(argv[2]);
  std::vector<float> hx((size_t)rows * cols), hy((size_t)rows * cols);
  FILE* f = fopen(argv[3], "rb"); if (fread(hx.data(), 4, hx.size(), f) != hx.size()) return 2; fclose(f);
  float *x, *y; cudaMalloc(&x, hx.size() * 4); cudaMalloc(&y, hy.size() * 4);
  cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice);
  std::vector<double> ts;
  long long sw0 = xps::g.switches;
  for (int r = 0; r < reps; ++r) {
    double t0 = xpb_now();
    softmax_rows<<<rows, THREADS>>>(x, y, rows, cols);
    ts.push_back(xpb_now() - t0);
  }
  cudaMemcpy(hy.data(), y, hy.size() * 4, cudaMemcpyDeviceToHost);
  f = fopen(argv[4], "wb"); fwrite(hy.data(), 4, hy.size(), f); fclose(f);
  std::sort(ts.begin(), ts.end());
  printf("median_s %.6f min_s %.6f switches_per_launch %lld\n", ts[ts.size() / 2], ts[0], (xps::g.switches - sw0) / reps);
  return 0;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cols", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--asan", action="store_true", help="build with AddressSanitizer (slower)")
    a = ap.parse_args()
    plat = CudaPlatform()
    with tempfile.TemporaryDirectory(prefix="xpbench") as d:
        d = Path(d)
        src = plat.prepare(KERNEL.read_text() + MAIN, str(KERNEL))
        (d / "bench.cpp").write_text(src)
        flags = plat.emu_flags(a.asan)
        subprocess.run(["g++", *flags, "bench.cpp", "-o", "bench"], cwd=d, check=True)
        rng = np.random.default_rng(0)
        x = (rng.standard_normal((64, a.cols)) * 4).astype(np.float32)
        x.tofile(d / "x.bin")
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
        p = subprocess.run([str(d / "bench"), str(a.cols), str(a.repeats), "x.bin", "y.bin"], cwd=d, env=env,
                           capture_output=True, text=True)
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            return 1
        y = np.fromfile(d / "y.bin", dtype=np.float32).reshape(64, a.cols)
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
        err = float(np.abs(y - ref).max())
        fields = dict(zip(p.stdout.split()[::2], p.stdout.split()[1::2]))
        print(f"substrate emu:simt-cpu{' +asan' if a.asan else ''}  softmax 64 blocks x 256 threads, cols={a.cols}, "
              f"21 barriers/block")
        print(f"launch time: median {float(fields['median_s']):.4f} s  (min {float(fields['min_s']):.4f} s, "
              f"{a.repeats} launches)  fiber switches/launch: {fields['switches_per_launch']}  max |err| = {err:.2e}")
        return 0 if err < 1e-5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
