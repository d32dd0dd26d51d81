#!/usr/bin/env bash
# One device call (<= 10 minutes) on the GPU machine: the default (untuned) cuda and hip outputs
# of every source of the perf operators, each timed next to PyTorch in one process
# (benchmarks/gpu_perf.py: CUDA events, median of repeats, checked against PyTorch), with the
# per-family geometric means of issue 15; then the tests listed in TESTS_FILE.
# The outputs are made on the CPU machine (an untuned migration does not depend on the GPU):
#   python benchmarks/migrate_all.py --to cuda --op gemm --op gemv ... --keep .keep/cuda
# Run from a snapshot: bash benchmarks/device_snapshot.sh .whl .keep, carry .devsnap, then
#   cd .devsnap && bash benchmarks/h200_defaults.sh
# Written 2026-12-05 (twelfth session).
set -u
OUT=${OUT:-h200_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1 \
    || { echo "wheel install failed"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1
cat COMMIT 2>/dev/null; nvidia-smi --query-gpu=name --format=csv,noheader
# every folder .keep/<name>: cuda outputs when <name> starts with "cuda", else hip (e.g. .keep/cuda,
# .keep/hip, .keep/cuda_block128 for a variant); each its own gpu_perf run, its own JSON folder
for d in .keep/*/; do
    name=$(basename "$d"); case "$name" in cuda*) to=cuda;; *) to=hip;; esac
    mkdir -p "$OUT/$name"
    XP_PERF_RUN_S=${RUN_S:-180} timeout ${LIMIT:-240} python3 benchmarks/gpu_perf.py "$d" --out "$OUT/$name" --to $to --jobs 16 2>&1 \
        | tee "$OUT/gpu_perf_$name.txt" | tail -16
done
# tests: node IDs in the file TESTS_FILE (one per line); -v writes each result as it finishes, so a
# run cut by its limit still says which tests ran
if [ -n "${TESTS_FILE:-}" ]; then
    DEVSEL_KEEP="$TESTS_FILE" timeout ${TEST_LIMIT:-150} python3 -m pytest -v -n 16 -p pytest_devsel \
        -p no:cacheprovider --timeout 140 -rfE tests > "$OUT/pytest.txt" 2>&1
    grep -cE "\] (PASSED|FAILED|SKIPPED|ERROR)" "$OUT/pytest.txt"
    grep -E "\] (FAILED|ERROR)|passed|failed" "$OUT/pytest.txt" | tail -20
fi
