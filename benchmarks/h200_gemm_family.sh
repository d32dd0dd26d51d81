#!/usr/bin/env bash
# One device call (<= 10 minutes) on the H200 machine, from a clean `git archive` of the commit to
# measure: every register-blocked cache form of gemm.c / bmm.c -> cuda against cuBLAS in one process,
# then the nine gemm/bmm sources re-tuned for cuda and timed untuned / tuned / PyTorch in one process.
# Prepared on the CPU machine (an untuned migration does not need the GPU):
#   python benchmarks/tune_gpu.py --phase migrate --no-tuned --work .tune_work --workers 1 --sources "$SOURCES"
# and carried with the tree (.tune_work/untuned/<source>__to__cuda) plus the pure-Python wheels in .whl/.
# Prepared 2026-12-04 (seventh session); not run then: no device machine was lent after the tests.
set -u
SOURCES=${SOURCES:-gemm/gemm.c,gemm/gemm.hip,gemm/gemm.mlu,gemm/gemm_mfma.hip,gemm/gemm_mfma_f16.hip,bmm/bmm.c,bmm/bmm.hip,bmm/bmm_mfma.hip,bmm/bmm.mlu}
OUT=${OUT:-h200_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1 \
    || { echo "wheel install failed"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 170 python3 benchmarks/gemm_forms.py --ops gemm,bmm --work /tmp/gf 2>&1 | tee "$OUT/gemm_forms.txt" | tail -40
timeout 390 python3 benchmarks/tune_gpu.py --phase all --work /tmp/tw --untuned-from .tune_work/untuned \
    --sources "$SOURCES" --max-evals 10 --budget 200 --workers 9 --migrate-s 15 --out "$OUT/tg" 2>&1 \
    | tee "$OUT/tune.txt" | tail -30
