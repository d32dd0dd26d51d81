"""A/B: one mutant's repair with the benchmark of ROOT (before / after this session's tester changes)."""
import sys, io, contextlib, json, os, tempfile, time
root, mid = sys.argv[1], sys.argv[2]
sys.path.insert(0, root); sys.path.insert(0, root + "/benchmarks")
os.environ["XPILER_CACHE"] = tempfile.mkdtemp(prefix="xpiler-cache-ab-", dir="/tmp/h14s7")
import repair_mutants as RM
from pathlib import Path
work = Path("/tmp/h14s7/bench")
with contextlib.redirect_stdout(io.StringIO()):
    outs = RM.migrated(work)
    ms = RM.mutants(outs, 2)
m = next(m for m in ms if m["id"] == mid)
l0 = open('/proc/loadavg').read().split()[0]
row = RM.run(m, 30.0, work)
print(json.dumps({"root": root, "id": mid, "failing": row["failing"], "repaired": row.get("repaired"),
                  "time_s": row.get("time_s"), "test_s": row.get("test_s"), "filter": row.get("filter"),
                  "checks": row.get("checks"), "load1": l0}))
