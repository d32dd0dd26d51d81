#!/usr/bin/env bash
# One batched run on the H200 device machine (see benchmarks/RESULTS.md): installs the pure-Python
# dependencies from carried wheels, runs the GPU-only tests, then times the kept cuda and hip
# migration outputs against PyTorch.  Usage (from the repository root on the device):
#   bash benchmarks/h200_session.sh KEPT_DIR WHEEL_DIR
# Writes its logs and JSON to $OUT (or ./h200_out).
set -u
KEPT=${1:?kept migration outputs}
WHEELS=${2:?wheel folder}
OUT=${OUT:-h200_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-deps "$WHEELS"/pycparser*.whl "$WHEELS"/networkx*.whl "$WHEELS"/z3*.whl \
    "$WHEELS"/rank_bm25*.whl 2>&1 | tail -2
nvidia-smi -L
# the whole suite on the GPU machine (Ubuntu 24.04, gcc 13), 16 workers; -v writes each result as it
# finishes, so the names of failing tests survive even when the call's time limit cuts the run
timeout 540 python3 -m pytest -v -n 16 -p no:cacheprovider -rfE 2>&1 > "$OUT/pytest_h200.txt"
grep -E "FAILED|ERROR|passed|failed" "$OUT/pytest_h200.txt" | tail -40
PYTHONPATH=. python3 examples/api_demo.py 2>&1 | tail -5 | tee "$OUT/api_demo.txt"
python3 -m xpiler migrate examples/gemm/gemm.c --to cuda -o /tmp/gm_cuda 2>&1 | tail -1
cp /tmp/gm_cuda/report.md "$OUT/report_gemm_c_to_cuda.md"; cp /tmp/gm_cuda/performance.png "$OUT/performance_gemm_c_to_cuda.png"
# each call of the device tool runs at most 10 minutes: split the two timing runs over two calls if needed
python3 benchmarks/gpu_perf.py "$KEPT" --out "$OUT" --to cuda --jobs 16 2>&1 | tee "$OUT/gpu_perf_cuda.txt" | tail -80
python3 benchmarks/gpu_perf.py "$KEPT" --out "$OUT" --to hip --jobs 16 2>&1 | tee "$OUT/gpu_perf_hip.txt" | tail -60
