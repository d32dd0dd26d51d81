"""A/B: run one mutant's repair with the benchmark of ROOT (old or new tree); prints a JSON line."""
import sys, io, contextlib, json, os, tempfile
root, lid, what = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, root)
sys.path.insert(0, root + "/benchmarks")
os.environ["XPILER_CACHE"] = tempfile.mkdtemp(prefix="xpiler-cache-ab-", dir="/tmp")
import repair_mutants as RM
from pathlib import Path
work = Path("/tmp/xpiler-repair-bench")
with contextlib.redirect_stdout(io.StringIO()):
    outs = RM.migrated(work)
    ms = RM.mutants(outs, 2)
m = next(m for m in ms if m.get("legacy_id", m["id"]) == lid and m["what"] == what)
row = RM.run(m, 30.0, work)
print(json.dumps({"root": root, "id": lid, "what": what, "failing": row["failing"], "repaired": row.get("repaired"),
                  "time_s": row.get("time_s"), "filter": row.get("filter"), "checks": row.get("checks"),
                  "sketch": row.get("sketch")}))
