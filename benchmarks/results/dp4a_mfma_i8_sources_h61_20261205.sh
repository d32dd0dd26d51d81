cd /work/main
run() { # src to name
  r=$(timeout 600 .venv/bin/xpiler migrate $1 --to $2 -o /tmp/h61/f_$3_$2 --no-perf 2>&1 | tail -1)
  echo "$1 -> $2: $(echo "$r" | cut -c1-200)"
}
git log --oneline | head -1
uptime
for t in c hip bang; do run examples/wild/gemm/gemm_int8_dp4a.cu $t dp4a; done
run examples/conv2d_nhwc/conv2d_nhwc_vnni.c cuda vnni
run examples/conv2d_nhwc/conv2d_nhwc_vnni.c hip vnni
for t in c hip bang; do run /tmp/h61/f_vnni_cuda/conv2d_nhwc_vnni.cu $t vnnicu; done
for t in cuda c bang; do run /tmp/h61/f_vnni_hip/conv2d_nhwc_vnni.hip $t vnnihip; done
for p in "gemm_int8_flat.cu c" "gemm_int8_flat.cu hip" "gemm_int8_fix.mlu c" "gemm_int8_fix.mlu hip" "gemm_int8_fix.mlu cuda" "gemm_u8s8_vnni.cpp cuda" "gemm_u8s8_vnni.cpp hip" "gemm_u8s8_vnni.cpp c"; do set -- $p; run examples/wild/gemm/$1 $2 ${1%%.*}; done
uptime
