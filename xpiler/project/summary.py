"""The summary of a directory run: ``OUT/summary.json`` (for programs) and ``OUT/summary.html``
(for people: one table row per kernel file with its verdict, substrate, time and speed-up, and
a link to the kernel's own ``report.html``). The page is self-contained: inline CSS, no scripts,
no network, relative links only, so it opens from a copied or archived OUT folder.

Exit code of the run (docs/projects.md): 0 when every kernel file found was verified (files
already in the target dialect are listed and not migrated, and do not count); 3 when any was not
(unresolved, bad input, error, or no spec); 2 is left to bad input of the whole run (no kernels,
bad options), which is refused before anything is written.
"""
from __future__ import annotations

import html
import json
import time

from .. import __version__

SUMMARY_JSON = "summary.json"
SUMMARY_HTML = "summary.html"
FORMAT = 1
VERDICTS = ("verified", "unresolved", "bad input", "needs spec", "error", "already target")


def build_summary(records: list[dict], *, root, outdir, to: str, options: dict, run: int, counts: dict) -> dict:
    by = {v: sum(1 for r in records if r.get("verdict") == v) for v in VERDICTS}
    kernels = []
    for r in records:
        kernels.append({
            "file": r["rel"], "verdict": r.get("verdict"), "exit_code": r.get("exit_code"),
            "substrate": r.get("substrate"), "time_s": r.get("time_s"), "speedup": r.get("speedup"),
            "speedup_vs": r.get("speedup_vs"), "report": r.get("report"), "output": r.get("output"),
            "log": r.get("log"), "diagnostics": r.get("diagnostics", []),
            "notes": [n.get("code") for n in r.get("notes", []) if isinstance(n, dict)],
            "messages": r.get("messages", []), "spec_origin": r.get("spec_origin"), "spec": r.get("spec"),
            "mode": r.get("mode"), "run": r.get("run"),
            "input_sha256": r.get("input_sha256"), "options_sha256": r.get("options_sha256")})
    # files already in the target dialect are listed, not migrated: they do not count against the run
    all_ok = by["verified"] == len(kernels) - by["already target"]
    return {"tool": "xpiler", "version": __version__, "format": FORMAT, "time": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "root": str(root), "outdir": str(outdir), "to": to, "options": options, "run": run,
            "counts": {**counts, **{v.replace(" ", "_"): n for v, n in by.items()}},
            "exit_code": 0 if all_ok else 3, "kernels": kernels}


def write_summary(od, summary: dict):
    """Write both files through ``od`` (OUT's OutDir: only files xpiler wrote are replaced)."""
    sj = od.write_text(SUMMARY_JSON, json.dumps(summary, indent=1, default=str) + "\n")
    sh = od.write_text(SUMMARY_HTML, render_html(summary))
    return sj, sh


_CLASS = {"verified": "ok", "unresolved": "bad", "bad input": "warn", "needs spec": "warn", "error": "err",
          "already target": "same"}


def render_html(s: dict) -> str:
    esc = html.escape
    c = s["counts"]
    rows = []
    for k in s["kernels"]:
        v = k.get("verdict") or "?"
        link = (f'<a href="{esc(k["report"])}">report</a>' if k.get("report") else "—")
        t = "" if k.get("time_s") is None else f"{k['time_s']:.1f} s"
        sp = ("" if k.get("speedup") is None
              else f"{k['speedup']:.2f}× <small>vs {esc(str(k.get('speedup_vs') or 'baseline'))}</small>")
        why = ""
        if v != "verified":
            msg = (k.get("messages") or [""])[0]
            why = f'<div class="why">{esc(msg[:400])}</div>'
        ids = " ".join(dict.fromkeys(k.get("diagnostics") or []))
        mode = k.get("mode") or ""
        rows.append(
            f'<tr><td><code>{esc(k["file"])}</code>{why}</td>'
            f'<td><span class="badge {_CLASS.get(v, "err")}">{esc(v)}</span></td>'
            f'<td>{esc(k.get("substrate") or "—")}</td><td class="num">{t}</td><td class="num">{sp or "—"}</td>'
            f'<td>{link}</td><td><small>{esc(ids)}</small></td><td><small>{esc(mode)}</small></td></tr>')
    tiles = "".join(
        f'<div class="tile {_CLASS[v]}"><b>{c.get(v.replace(" ", "_"), 0)}</b><br>{esc(v)}</div>' for v in VERDICTS)
    modes = ", ".join(f"{c.get(m, 0)} {m}" for m in ("new", "unchanged", "resumed", "restarted", "recovered"))
    opts = ", ".join(f"{k}={v}" for k, v in s["options"].items() if v is not None)
    state = "every kernel verified" if s["exit_code"] == 0 else "not every kernel verified"
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>xpiler: {esc(s['root'])} → {esc(s['to'])}</title>
<style>body{{font-family:sans-serif;margin:1.5em;max-width:1400px}} table{{border-collapse:collapse;width:100%}}
td,th{{border:1px solid #ccc;padding:.25em .5em;font-size:13px;vertical-align:top;text-align:left}}
th{{background:#eceff1}} .num{{text-align:right;white-space:nowrap}} .why{{color:#555;font-size:11px;white-space:pre-wrap}}
.badge{{display:inline-block;padding:.1em .6em;border-radius:.8em;color:#fff;font-weight:bold;white-space:nowrap}}
.ok{{background:#2e7d32}} .bad{{background:#c62828}} .warn{{background:#ef6c00}} .err{{background:#616161}} .same{{background:#546e7a}}
.tiles{{display:flex;gap:.8em;margin:1em 0}} .tile{{color:#fff;padding:.5em 1em;border-radius:.4em;min-width:6em;
text-align:center}} .tile b{{font-size:1.6em}}</style></head><body>
<h1>xpiler: {esc(s['root'])} → {esc(s['to'])}</h1>
<p><b>{esc(state)}</b> (exit code {s['exit_code']}). {c.get('total', len(s['kernels']))} kernel file(s); this run
(run {s['run']}, {esc(s['time'])}): {esc(modes)}. xpiler {esc(str(s['version']))}; options: {esc(opts)}.</p>
<div class="tiles">{tiles}</div>
<p>Each verdict names the substrate it was reached on (<code>emu:…</code> is an emulator, <code>hw:…</code>
hardware). Speed-up is the reference's time over the migrated kernel's, measured only on hardware substrates.</p>
<table><tr><th>file</th><th>verdict</th><th>substrate</th><th>time</th><th>speed-up</th><th>report</th>
<th>diagnostics</th><th>this run</th></tr>
{''.join(rows)}
</table>
<p><small>Machine-readable: <a href="summary.json">summary.json</a>; what each run did:
<code>project-state.jsonl</code> (docs/projects.md).</small></p>
</body></html>
"""
