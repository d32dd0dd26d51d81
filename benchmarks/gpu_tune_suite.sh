#!/usr/bin/env bash
# Tuned vs untuned vs PyTorch for every cuda output of the suite (issue 13), in device calls of at
# most 10 minutes on a warm GPU machine, both migrations of each source made there
# (benchmarks/tune_gpu.py; the work folder W outside the snapshot survives between calls while the
# machine stays warm, and a finished migration is not run again).
#   bash benchmarks/device_snapshot.sh .whl [.keep]   # then carry .devsnap and run in .devsnap:
#   CALL=1 bash benchmarks/gpu_tune_suite.sh   # the c-gemm ASan probe, then migrations until MIGRATE_S
#   CALL=2 bash benchmarks/gpu_tune_suite.sh   # the rest of the migrations, then the timed table
#   UNTUNED=untuned CALL=1 ...                  # untuned outputs carried in (made on another machine)
#   SOURCES=add/add.mlu,relu/relu.mlu CALL=2 ...  # only these examples
# Written 2026-12-05 (thirteenth session).
set -u
OUT=${OUT:-gpu_out}
W=${W:-/tmp/xptune_suite}
mkdir -p "$OUT" "$W"
if [ ! -d /tmp/site/z3 ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1 \
        || { echo "wheel install failed"; exit 1; }
fi
export PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1
cat COMMIT 2>/dev/null; nvidia-smi --query-gpu=name --format=csv,noheader; gcc --version | head -1
ARGS="--work $W --max-evals ${EVALS:-5} --budget ${BUDGET:-90} --workers ${WORKERS:-10} --out $OUT/tg"
# UNTUNED=DIR: the untuned outputs were made elsewhere (tune_gpu.py --phase migrate --no-tuned, carried
# in the snapshot), so this machine runs only the tuned migrations
[ -n "${UNTUNED:-}" ] && ARGS="$ARGS --untuned-from $UNTUNED"
# SOURCES=a/a.mlu,b/b.c: only these examples (tune_gpu.py --sources)
[ -n "${SOURCES:-}" ] && ARGS="$ARGS --sources $SOURCES"
source "$(dirname "$0")/capped.sh"   # capped SECONDS CMD: the whole process group ends at SECONDS
if [ "${CALL:-1}" = 1 ]; then
    if [ -z "${NO_ASAN:-}" ]; then    # NO_ASAN=1: skip the probe (it takes up to 120 s)
        timeout 120 python3 benchmarks/asan_probe_c.py > "$OUT/asan_probe_c.txt" 2>&1
        cat "$OUT/asan_probe_c.txt" | head -60
    fi
    capped ${LIMIT:-500} python3 benchmarks/tune_gpu.py --phase migrate $ARGS --migrate-s ${MIGRATE_S:-330} \
        > "$OUT/tune_migrate1.txt" 2>&1
    tail -8 "$OUT/tune_migrate1.txt"
else
    capped ${LIMIT:-570} python3 benchmarks/tune_gpu.py --phase all $ARGS --migrate-s ${MIGRATE_S:-200} \
        > "$OUT/tune_all.txt" 2>&1
    tail -70 "$OUT/tune_all.txt"
    # the logs the Spearman figure and the speed-up-vs-budget curve are read from
    mkdir -p "$OUT/logs"
    for d in "$W"/tuned/*__to__cuda; do cp "$d/provenance.jsonl" "$OUT/logs/$(basename "$d").jsonl" 2>/dev/null; done
fi
