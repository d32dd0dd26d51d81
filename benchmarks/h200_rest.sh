#!/usr/bin/env bash
# One device call (<= 10 minutes) on the H200 machine: the non-gemm cuda outputs of the suite that
# the last full tuning runs did not re-tune with the newer search steps, re-tuned and timed
# untuned / tuned / PyTorch in one process (benchmarks/tune_gpu.py). The untuned outputs are made on
# the CPU machine and carried in .tune_work/untuned (see h200_gemm_family.sh); wheels in .whl/.
# Written 2026-12-05 (ninth session). Run it from a snapshot (benchmarks/device_snapshot.sh .whl .tune_work),
# not from the working tree: the ninth session measured a tree with helpers' edits in progress.
set -u
SOURCES=${SOURCES:-layernorm/layernorm.mlu,gemv/gemv.mlu,rmsnorm/rmsnorm.mlu,softmax/softmax.mlu,softmax/softmax_avx512.c,gemv/gemv.hip,softmax/softmax.hip,relu/relu.mlu,gelu/gelu.c,gelu/gelu.mlu,sigmoid/sigmoid.c,sigmoid/sigmoid.mlu,sign/sign.c,sign/sign.hip,sign/sign.mlu,add/add.hip,add/add.mlu,relu/relu_avx512.c,add/add_avx512.c}
OUT=${OUT:-h200_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1 \
    || { echo "wheel install failed"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout ${LIMIT:-560} python3 benchmarks/tune_gpu.py --phase all --work /tmp/tw --untuned-from .tune_work/untuned \
    --sources "$SOURCES" --max-evals ${EVALS:-8} --budget ${BUDGET:-230} --workers ${WORKERS:-11} \
    --migrate-s ${MIGRATE_S:-250} --out "$OUT/tg" 2>&1 | tee "$OUT/tune.txt" | tail -40
