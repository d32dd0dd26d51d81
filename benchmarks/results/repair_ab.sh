#!/bin/bash
# A/B of the repair time: each failing mutant of LIST (a repair_mutants JSON) is repaired by the old tree
# (/tmp/xp-before: git archive 4f68731 | tar -x -C /tmp/xp-before) and by this tree, one fresh process and
# an empty build cache each, the order alternating per mutant; OUT gets one JSON line per run.
# A/B on the mutants of a result file: old tree then new tree (alternating order), one process each
LIST=$1; OUT=$2
: > $OUT
python3 -c "
import json,sys
for r in json.load(open('$LIST')):
    if r['failing']: print(r.get('legacy_id', r['id']) + '\t' + r['what'])
" > /tmp/repair_ab_list.txt
i=0
while IFS=$'\t' read -r lid what; do
  if [ $((i % 2)) -eq 0 ]; then order="/tmp/xp-before /work/main"; else order="/work/main /tmp/xp-before"; fi
  for root in $order; do
    (cd $root && /work/main/.venv/bin/python /work/main/benchmarks/results/repair_ab_one.py $root "$lid" "$what" 2>/dev/null | tail -1) >> $OUT
  done
  i=$((i+1))
done < /tmp/repair_ab_list.txt
