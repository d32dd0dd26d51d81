#!/usr/bin/env bash
# The whole default (untuned) cuda and hip suite made and timed on a warm GPU machine, in device
# calls of at most 10 minutes (the fifteenth session found 73 cuda migrations need about 440 s on
# its 16 cores, more than one call can hold beside the timing run). The work folder W outside the
# snapshot survives between calls while the machine stays warm (30 s), so make the calls back to
# back; a call whose folder is gone starts over. Each call writes its logs under $OUT.
#   bash benchmarks/device_snapshot.sh .whl        # then carry .devsnap and run in .devsnap:
#   CALL=1 bash benchmarks/gpu_suite_calls.sh      # cuda migrations, first half
#   CALL=2 bash benchmarks/gpu_suite_calls.sh      # cuda second half + the cuda timing table
#   CALL=3 bash benchmarks/gpu_suite_calls.sh      # hip migrations + the hip-on-cuda table
#   CALL=4 bash benchmarks/gpu_suite_calls.sh      # idiom counts of W, the given test files
#   CALL=5 SETS="cuda=conv1d,depthwise_conv2d hip=add" bash benchmarks/gpu_suite_calls.sh
#                                                  # only these operators: migrations, then the tables
#   CALL=6 SOURCES="gemm/gemm.c softmax/softmax.c" bash benchmarks/gpu_suite_calls.sh
#                                                  # untuned cuda outputs of these examples, then their
#                                                  # search-space candidates (benchmarks/cost_rank.py make)
#   CALL=7 bash benchmarks/gpu_suite_calls.sh      # those candidates timed: the cost model's Spearman
#   CALL=8 TIMED="cuda=keep_a hip=keep_b" bash benchmarks/gpu_suite_calls.sh
#                                                  # outputs made elsewhere (migrate_all --keep), timed
#   CALL=9 CPU=c_outs INT8="new:x.cu=d/x.c" bash benchmarks/gpu_suite_calls.sh
#                                                  # this machine's CPU: c outputs vs numpy / PyTorch CPU, one
#                                                  # thread (cpu_perf.py), int8 gemm vs oneDNN (gemm_int8_cpu.py)
#   CALL=10 bash benchmarks/gpu_suite_calls.sh     # this machine's CPU: gemm_int8_flat.cu -> c made here, tested
#                                                  # natively (XP_USE_AMX=1 and =0 builds), then its AMX and VNNI
#                                                  # paths vs oneDNN int8, one thread (SIZES=512,1024)
#   CALL=11 bash benchmarks/gpu_suite_calls.sh     # this machine's CPU: gemm_bf16.cu -> c made here and tested
#                                                  # natively (4 builds: XP_USE_AMX x XP_USE_AVX512BF16), then
#                                                  # its AMX / vdpbf16ps / widening-FMA paths vs torch.matmul bf16
# Written 2026-12-05 (fifteenth session).
set -u
OUT=${OUT:-gpu_out}
W=${W:-/tmp/xpsuite}
mkdir -p "$OUT" "$W"
if [ ! -d /tmp/site/z3 ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1 \
        || { echo "wheel install failed"; exit 1; }
fi
export PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1
cat COMMIT 2>/dev/null; nvidia-smi --query-gpu=name --format=csv,noheader
source "$(dirname "$0")/capped.sh"   # capped SECONDS CMD: the whole process group ends at SECONDS
mig() {   # target shard limit
    capped "$3" python3 benchmarks/migrate_all.py --to "$1" --shard "$2" --workers "${WORKERS:-16}" \
        --keep "$W/k" --json "$W/mig_${1}_${2/\//of}.json" > "$W/mig_${1}_${2/\//of}.txt" 2>&1
    cp "$W/mig_${1}_${2/\//of}.txt" "$OUT/" 2>/dev/null
    grep -c '^PASS' "$W/mig_${1}_${2/\//of}.txt"; grep -v '^PASS' "$W/mig_${1}_${2/\//of}.txt" | tail -12
}
case "${CALL:-1}" in
1) mig cuda 0/2 "${LIMIT:-540}" ;;
2) mig cuda 1/2 "${LIMIT:-330}"
   timeout "${PERF_S:-230}" python3 benchmarks/gpu_perf.py "$W/k" --out "$OUT" --to cuda --jobs 16 \
       > "$OUT/gpu_perf_cuda.txt" 2>&1; tail -60 "$OUT/gpu_perf_cuda.txt" ;;
3) mig hip 0/1 "${LIMIT:-400}"
   timeout "${PERF_S:-170}" python3 benchmarks/gpu_perf.py "$W/k" --out "$OUT" --to hip --jobs 16 \
       > "$OUT/gpu_perf_hip.txt" 2>&1; tail -50 "$OUT/gpu_perf_hip.txt" ;;
4) python3 benchmarks/idiom_check.py --json "$OUT/idiom.json" "$W/k" > "$OUT/idiom.txt" 2>&1; tail -8 "$OUT/idiom.txt"
   [ -n "${TESTS:-}" ] && timeout "${TEST_S:-400}" python3 -m pytest -v -n 16 -p no:cacheprovider -rfE $TESTS \
       > "$OUT/pytest.txt" 2>&1; grep -E "FAILED|passed|failed" "$OUT/pytest.txt" 2>/dev/null | tail -20 ;;
5) # SETS="cuda=conv1d,depthwise_conv2d hip=add,relu": migrations of those operators to each target
   for set in ${SETS:?SETS names target=op,op pairs}; do
       t=${set%%=*}; ops=""
       for o in $(echo "${set#*=}" | tr , ' '); do ops="$ops --op $o"; done
       timeout "${LIMIT:-300}" python3 benchmarks/migrate_all.py --to "$t" $ops --workers "${WORKERS:-16}" \
           --keep "$W/k" --json "$W/mig_ops_$t.json" > "$OUT/mig_ops_$t.txt" 2>&1
       grep -c '^PASS' "$OUT/mig_ops_$t.txt"; grep -v '^PASS' "$OUT/mig_ops_$t.txt" | tail -6
   done
   for set in ${SETS}; do
       t=${set%%=*}
       timeout "${PERF_S:-150}" python3 benchmarks/gpu_perf.py "$W/k" --out "$OUT" --to "$t" --jobs 16 \
           > "$OUT/gpu_perf_ops_$t.txt" 2>&1; tail -40 "$OUT/gpu_perf_ops_$t.txt"
   done ;;
6) srcs=""; for x in ${SOURCES:?SOURCES names example files}; do srcs="$srcs --source examples/$x"; done
   timeout "${LIMIT:-240}" python3 benchmarks/migrate_all.py --to cuda $srcs --workers "${WORKERS:-16}" \
       --keep "$W/r" > "$OUT/mig_rank.txt" 2>&1
   grep -c '^PASS' "$OUT/mig_rank.txt"; grep -v '^PASS' "$OUT/mig_rank.txt" | tail -6
   timeout "${MAKE_S:-300}" python3 benchmarks/cost_rank.py make "$W/r" "$W/cands" --per-kernel "${PER:-12}" \
       --seed "${SEED:-0}" --jobs "${WORKERS:-16}" > "$OUT/cost_rank_make.txt" 2>&1; tail -25 "$OUT/cost_rank_make.txt"
   cp "$W/cands/manifest.json" "$OUT/cost_rank_manifest.json" 2>/dev/null ;;
7) timeout "${PERF_S:-540}" python3 benchmarks/cost_rank.py time "$W/cands" --jobs 16 > "$OUT/cost_rank_time.txt" 2>&1
   cp "$W/cands/timed.json" "$OUT/cost_rank_timed.json" 2>/dev/null; tail -45 "$OUT/cost_rank_time.txt" ;;
8) for set in ${TIMED:?TIMED names target=folder pairs}; do
       t=${set%%=*}; d=${set#*=}
       timeout "${PERF_S:-150}" python3 benchmarks/gpu_perf.py "$d" --out "$OUT/$(basename "$d")" --to "$t" --jobs 16 \
           > "$OUT/gpu_perf_$(basename "$d")_$t.txt" 2>&1; tail -45 "$OUT/gpu_perf_$(basename "$d")_$t.txt"
   done ;;
9) lscpu | grep -E "Model name"; grep -o 'avx512_vnni\|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
   [ -n "${CPU:-}" ] && OMP_NUM_THREADS=1 timeout "${PERF_S:-200}" python3 benchmarks/cpu_perf.py "$CPU" --threads 1 \
       --out "$OUT" > "$OUT/cpu_perf.txt" 2>&1; tail -30 "$OUT/cpu_perf.txt" 2>/dev/null
   [ -n "${INT8:-}" ] && OMP_NUM_THREADS=1 timeout "${INT8_S:-150}" python3 benchmarks/gemm_int8_cpu.py $INT8 \
       --sizes 512 --rounds 3 --repeats 10 --json "$OUT/gemm_int8_cpu.json" > "$OUT/gemm_int8_cpu.txt" 2>&1
   tail -12 "$OUT/gemm_int8_cpu.txt" 2>/dev/null ;;
10) lscpu | grep -E "Model name"; grep -o 'avx512_vnni\|amx_int8\|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
   gcc --version | head -1; uname -r
   timeout "${LIMIT:-200}" python3 -m xpiler migrate examples/wild/gemm/gemm_int8_flat.cu --to c -o "$W/amx" \
       > "$OUT/amx_migrate.txt" 2>&1; tail -2 "$OUT/amx_migrate.txt"
   f="$W/amx/gemm_int8_flat.c"; cp "$f" "$OUT/" 2>/dev/null
   timeout "${TEST_S:-200}" python3 -m xpiler test "$f" --spec "$f.toml" > "$OUT/amx_test.txt" 2>&1; head -2 "$OUT/amx_test.txt"
   OMP_NUM_THREADS=1 timeout "${INT8_S:-200}" python3 benchmarks/gemm_int8_cpu.py "amx=$f@XP_USE_AMX=1" \
       "vnni=$f@XP_USE_AMX=0" --sizes "${SIZES:-512,1024}" --rounds "${ROUNDS:-5}" --repeats 10 --no-numpy \
       --json "$OUT/gemm_int8_amx.json" > "$OUT/gemm_int8_amx.txt" 2>&1; tail -14 "$OUT/gemm_int8_amx.txt" ;;
11) lscpu | grep -E "Model name"; grep -o 'avx512_bf16\|amx_bf16\|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
   gcc --version | head -1
   timeout "${LIMIT:-200}" python3 -m xpiler migrate examples/gemm/gemm_bf16.cu --to c -o "$W/bf16" \
       > "$OUT/bf16_migrate.txt" 2>&1; tail -2 "$OUT/bf16_migrate.txt"
   f="$W/bf16/gemm_bf16.c"; cp "$f" "$OUT/" 2>/dev/null
   timeout "${TEST_S:-200}" python3 -m xpiler test "$f" --spec "$f.toml" > "$OUT/bf16_test.txt" 2>&1; head -2 "$OUT/bf16_test.txt"
   OMP_NUM_THREADS=1 timeout "${BF16_S:-240}" python3 benchmarks/gemm_bf16_cpu.py \
       "amx=$f@XP_USE_AMX=1,XP_USE_AVX512BF16=1" "dpbf16=$f@XP_USE_AMX=0,XP_USE_AVX512BF16=1" \
       "fma=$f@XP_USE_AMX=0,XP_USE_AVX512BF16=0" --sizes "${SIZES:-512,1024}" --rounds "${ROUNDS:-5}" --repeats 10 \
       --json "$OUT/gemm_bf16_cpu.json" > "$OUT/gemm_bf16_cpu.txt" 2>&1; tail -14 "$OUT/gemm_bf16_cpu.txt" ;;
esac
