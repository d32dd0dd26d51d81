#!/bin/bash
OUT=/tmp/h14s7/runs/ab_before_after.jsonl; : > $OUT; i=0
for mid in "$@"; do
  if [ $((i % 2)) -eq 0 ]; then order="/tmp/h14s7/before /tmp/h14s7/code"; else order="/tmp/h14s7/code /tmp/h14s7/before"; fi
  for root in $order; do
    (cd $root && /work/main/.venv/bin/python /tmp/h14s7/ab_one.py $root "$mid" 2>/dev/null | tail -1) >> $OUT
  done
  i=$((i+1))
done
