"""Migration reports: ``report.md`` and a standalone ``report.html`` (no network needed).

Contents: source and target side by side, the pass sequence with a diff per step, the program
graph (networkx, drawn with matplotlib when available), the test table (substrate, instances,
seeds, max error), performance when measured, and the diagnostics with their IDs. Everything
is read back from the provenance log, so a report can be rebuilt from a log alone.
"""
from __future__ import annotations

import base64
import difflib
import html
import io
import json
from pathlib import Path

import networkx as nx

from .provenance import read_log


def program_graph(events: list[dict]) -> nx.DiGraph:
    """Programs (by hash) as nodes, applied passes as edges; verified programs are marked."""
    g = nx.DiGraph()
    parse = next((e for e in events if e["type"] == "parse"), None)
    if parse:
        g.add_node(parse["program_hash"], label="source", verified=True)
    tested = {e["program_hash"]: e["verified"] for e in events if e["type"] == "test"}
    for e in events:
        if e["type"] == "pass" and e.get("applied"):
            g.add_node(e["out_hash"], label=e["name"], verified=tested.get(e["out_hash"], False))
            if e["in_hash"] not in g:
                g.add_node(e["in_hash"], label="?", verified=tested.get(e["in_hash"], False))
            g.add_edge(e["in_hash"], e["out_hash"], label=e["name"])
    return g


def _graph_png(g: nx.DiGraph) -> bytes | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    if not g.nodes:
        return None
    fig, ax = plt.subplots(figsize=(7, 2.2 + 0.4 * len(g.nodes)))
    try:
        order = list(nx.topological_sort(g))
    except nx.NetworkXUnfeasible:
        order = list(g.nodes)
    pos = {n: (0, -i) for i, n in enumerate(order)}
    colors = ["#4caf50" if g.nodes[n].get("verified") else "#e57373" for n in g.nodes]
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=900)
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True)
    nx.draw_networkx_labels(g, {n: (x + 0.08, y) for n, (x, y) in pos.items()},
                            labels={n: f"{g.nodes[n].get('label')}  {n[:8]}" for n in g.nodes},
                            horizontalalignment="left", ax=ax, font_size=9)
    ax.set_xlim(-0.3, 1.5)
    ax.axis("off")
    ax.set_title("program graph (green: verified)")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _perf_png(perf: dict) -> bytes | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    if not perf:
        return None
    fig, ax = plt.subplots(figsize=(6, 1.2 + 0.45 * len(perf)))
    names, vals = list(perf), [perf[k] for k in perf]
    colors = ["#9e9e9e" if "reference" in n or "baseline" in n else "#1976d2" for n in names]
    ax.barh(names, vals, color=colors)
    for y, v in enumerate(vals):
        ax.text(v, y, f" {v:.3g} ms", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("median latency (ms), lower is better")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def search_graph(events: list[dict]) -> nx.DiGraph:
    """The tuner's explored programs (``tune`` events): nodes by hash with their latency, edges
    from the program each candidate was made from, labelled with the step."""
    g = nx.DiGraph()
    start = next((e for e in events if e["type"] == "tune" and e.get("kind") == "start"), None)
    if start is None:
        return g
    g.add_node(start.get("search_root", start["program_hash"]), latency_ms=None, verified=True, root=True)
    for e in events:
        if e["type"] == "tune" and e.get("kind") == "evaluate":
            g.add_node(e["program_hash"], latency_ms=e.get("latency_ms"), verified=e.get("verified"))
            if e.get("parent"):
                st = e.get("step") or {}
                g.add_edge(e["parent"], e["program_hash"], label=st.get("pass", "?"))
    return g


def _search_png(events: list[dict]) -> bytes | None:
    """The search curve (every candidate's latency and the best so far, by evaluation) and the
    explored program graph, side by side."""
    evals = [e for e in events if e["type"] == "tune" and e.get("kind") == "evaluate"]
    if not evals:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    start = next(e for e in events if e["type"] == "tune" and e.get("kind") == "start")
    root_ms = (start.get("root") or {}).get("latency_ms")
    src = start.get("latency_source", "")
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    xs = [e["evaluations"] for e in evals if e.get("verified") and e.get("latency_ms")]
    ys = [e["latency_ms"] for e in evals if e.get("verified") and e.get("latency_ms")]
    a.scatter(xs, ys, s=14, color="#90a4ae", label="verified candidate")
    fails = [e["evaluations"] for e in evals if not e.get("verified")]
    if fails and ys:
        a.scatter(fails, [max(ys)] * len(fails), s=14, marker="x", color="#e57373", label="failed its tests")
    best, bx, by = root_ms, [0], [root_ms]
    for e in evals:
        if e.get("verified") and e.get("latency_ms") and (best is None or e["latency_ms"] < best):
            best = e["latency_ms"]
        bx.append(e["evaluations"])
        by.append(best)
    a.step(bx, by, where="post", color="#1976d2", label="best so far")
    if root_ms:
        a.axhline(root_ms, color="#9e9e9e", linestyle="--", linewidth=1, label="untuned")
    a.set_xlabel("candidates evaluated")
    a.set_ylabel(f"latency (ms, {src})")
    a.set_title("search curve" + (" (cost model)" if src.startswith("model") else ""), fontsize=9)
    a.legend(fontsize=7)
    g = search_graph(events)
    try:
        pos = nx.nx_agraph.graphviz_layout(g, prog="dot")
    except Exception:
        pos = nx.spring_layout(g, seed=0)
    colors = ["#1976d2" if g.nodes[n].get("root") else "#4caf50" if g.nodes[n].get("verified") else "#e57373"
              for n in g.nodes]
    nx.draw_networkx(g, pos, ax=b, node_color=colors, node_size=60, with_labels=False, arrows=True, width=0.6)
    nx.draw_networkx_edge_labels(g, pos, ax=b, edge_labels=nx.get_edge_attributes(g, "label"), font_size=6)
    b.set_title("explored programs\n(blue: search root, green: verified, red: failed)", fontsize=9)
    b.axis("off")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


MAX_DIFF_LINES = 400


def _step_diffs(result) -> list[tuple[str, list[str]]]:
    """(title, unified diff lines) for each applied step of the plan that produced the result."""
    texts = getattr(result, "stage_texts", None) or {}
    out = []
    for k, st in enumerate(result.steps, start=1):
        a, b = texts.get(st.in_hash), texts.get(st.out_hash)
        if a is None or b is None:
            continue
        lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), f"before {st.pass_name}",
                                          f"after {st.pass_name}", lineterm=""))
        if len(lines) > MAX_DIFF_LINES:
            lines = lines[:MAX_DIFF_LINES] + [f"... ({len(lines) - MAX_DIFF_LINES} more lines)"]
        out.append((f"step {k}: {st.pass_name} ({st.proposer}) {st.in_hash[:10]} → {st.out_hash[:10]}", lines))
    return out


# every file write_report may write (checked by a migration before it writes anything)
REPORT_FILES = ("report.md", "report.html", "program_graph.png", "performance.png", "search.png")


def write_report(outdir: Path, src: Path, spec, result, log_path: Path, owner=None) -> Path:
    """Write report.md, report.html and the figures into ``outdir``. ``owner`` (an
    ``xpiler.migration.outdir.OutDir``) records each file as written by xpiler; a migration
    always passes it, after checking that these names are its own to replace."""
    def put(name: str, data) -> Path:
        if owner is not None:
            return owner.write_bytes(name, data) if isinstance(data, bytes) else owner.write_text(name, data)
        p = Path(outdir) / name
        p.write_bytes(data) if isinstance(data, bytes) else p.write_text(data)
        return p

    header, events = read_log(log_path)
    src_text = Path(src).read_text()
    tgt_text = result.code or ""
    stages = [e for e in events if e["type"] == "pass"]
    tests = [e for e in events if e["type"] == "test"]
    diags = [d.to_json() for d in result.diagnostics]
    g = program_graph(events)
    gpng = _graph_png(g)
    perf = {e["label"]: e["median_ms"] for e in events if e["type"] == "tune" and "median_ms" in e}
    perf_rows = [r for e in events if e["type"] == "perf" for r in e.get("rows", [])]
    perf_notes = [e["note"] for e in events if e["type"] == "perf" and e.get("note")]
    for r in perf_rows:
        perf[f"migrated kernel ({r['substrate']}, {r['instance']})"] = r["kernel_ms"]
        perf[f"{r['baseline']} ({r['instance']})"] = r["baseline_ms"]
    ppng = _perf_png(perf)
    if ppng:
        put("performance.png", ppng)
    spng = _search_png(events)
    if spng:
        put("search.png", spng)
    tune_res = next((e for e in events if e["type"] == "tune" and e.get("kind") == "result"), None)
    tune_lines = []
    if tune_res is not None:
        tstart = next((e for e in events if e["type"] == "tune" and e.get("kind") == "start"), {})
        src_l = tstart.get("latency_source", "?")
        steps_t = ", ".join(f"{st['pass']}({', '.join(f'{k}={v}' for k, v in st['params'].items() if k != 'target')})"
                            for st in tune_res.get("steps", [])) or "none (untuned kernel kept)"
        u, t = tune_res.get("untuned_ms"), tune_res.get("tuned_ms")
        tune_lines = [f"Latency source: **{src_l}**" + (" (the analytical cost model: a ranking, not a measurement)"
                                                         if str(src_l).startswith("model") else " (measured)") + ".",
                      f"Chosen steps: {steps_t}.",
                      f"Untuned {u if u is None else f'{u:.4g}'} ms, tuned {t if t is None else f'{t:.4g}'} ms; "
                      f"{tune_res.get('evaluations')} candidates, stopped: {tune_res.get('stopped')}."]
        if tune_res.get("note"):
            tune_lines.append(f"_{tune_res['note']}_")
    if gpng:
        put("program_graph.png", gpng)

    state = "VERIFIED" if result.verified else "UNRESOLVED (no verified kernel)"
    md = [f"# xpiler migration report: {Path(src).name} → {result.target}", "",
          f"**{state}**. Output: `{result.output_path.name if result.output_path else '-'}`. "
          f"Time {result.elapsed_s:.1f} s. Tool {header.get('version')} ({header.get('git')}).", ""]
    if result.verdict is not None:
        v = result.verdict
        md += [f"Last verdict: {v.summary()}", ""]
    md += ["## Tests", "", "| stage | dialect | substrate | instances | seeds | verified | max abs err | max rel err |",
           "|---|---|---|---|---|---|---|---|"]
    for t in tests:
        md.append(f"| {t['stage']} | {t['dialect']} | {t['substrate']} | {', '.join(t['instances'])} | "
                  f"{t['seeds']} | {'yes' if t['verified'] else 'NO'} | {t['max_abs_error']:.3g} | {t['max_rel_error']:.3g} |")
    md += ["", "## Pass sequence", ""]
    for s in stages:
        if s.get("applied"):
            md.append(f"- `{s['name']}` {json.dumps(s['params'])} → {s['dialect']} program {s['out_hash'][:10]}")
        else:
            md.append(f"- `{s['name']}` not applied ({s.get('code')}: {s.get('why')})")
    step_diffs = _step_diffs(result)
    if step_diffs:
        md += ["", "## Diff per step", ""]
        for title, lines in step_diffs:
            md += [f"### {title}", "", "```diff"] + lines + ["```", ""]
    if diags:
        md += ["", "## Diagnostics", ""] + [f"- {d['severity']} **{d['code']}**: {d['message']}" for d in diags]
    md += ["", "## Performance", ""]
    if perf_rows:
        md += ["| instance | shape | substrate | kernel ms | baseline | baseline ms | baseline / kernel |",
               "|---|---|---|---|---|---|---|"]
        md += [f"| {r['instance']} | {r['shape']} | {r['substrate']} | {r['kernel_ms']:.4g} | {r['baseline']} | "
               f"{r['baseline_ms']:.4g} | {r['speedup_vs_baseline']:.2f}× |" for r in perf_rows]
    md += [f"- {k}: {v:.4g} ms" for k, v in perf.items() if not perf_rows]
    md += [f"_{n}_" for n in perf_notes]
    if not perf and not perf_notes:
        md.append("_not measured in this run_")
    if ppng:
        md += ["", "![performance](performance.png)"]
    from .asm import report_sections
    asm_md, asm_html = report_sections(events)
    md += asm_md
    if tune_lines:
        md += ["", "## Tuning (MCTS)", ""] + tune_lines + (["", "![search](search.png)"] if spng else [])
    md += ["", "## Source", "", "```c", src_text.rstrip(), "```", "", f"## Target ({result.target})", "", "```c",
           tgt_text.rstrip(), "```", "", "## Diff source → target", "", "```diff"]
    md += list(difflib.unified_diff(src_text.splitlines(), tgt_text.splitlines(), "source", "target", lineterm=""))
    md += ["```", ""]
    if gpng:
        md += ["![program graph](program_graph.png)", ""]
    put("report.md", "\n".join(md))

    def esc(s):
        return html.escape(s)

    def img(png):
        return f'<img alt="figure" src="data:image/png;base64,{base64.b64encode(png).decode()}">' if png else ""

    rows = "".join(f"<tr><td>{esc(t['stage'])}</td><td>{t['dialect']}</td><td>{esc(t['substrate'])}</td>"
                   f"<td>{esc(', '.join(t['instances']))}</td><td>{t['seeds']}</td>"
                   f"<td class={'ok' if t['verified'] else 'bad'}>{'yes' if t['verified'] else 'NO'}</td>"
                   f"<td>{t['max_abs_error']:.3g}</td><td>{t['max_rel_error']:.3g}</td></tr>" for t in tests)
    steps_html = "".join(f"<li><code>{esc(s['name'])}</code> {esc(json.dumps(s['params']))}"
                         + (f" → {s['dialect']} <code>{s['out_hash'][:10]}</code>" if s.get("applied")
                            else f" — not applied ({esc(str(s.get('code')))}: {esc(str(s.get('why')))})") + "</li>"
                         for s in stages)
    diff = esc("\n".join(difflib.unified_diff(src_text.splitlines(), tgt_text.splitlines(), "source", "target",
                                              lineterm="")))
    diag_html = "".join(f"<li><b>{esc(d['code'])}</b> {esc(d['severity'])}: {esc(d['message'])}</li>" for d in diags)
    perf_table = ("<table><tr><th>instance</th><th>shape</th><th>substrate</th><th>kernel ms</th><th>baseline</th>"
                  "<th>baseline ms</th><th>baseline / kernel</th></tr>" + "".join(
                      f"<tr><td>{esc(r['instance'])}</td><td>{esc(r['shape'])}</td><td>{esc(r['substrate'])}</td>"
                      f"<td>{r['kernel_ms']:.4g}</td><td>{esc(r['baseline'])}</td><td>{r['baseline_ms']:.4g}</td>"
                      f"<td>{r['speedup_vs_baseline']:.2f}×</td></tr>" for r in perf_rows) + "</table>") if perf_rows else ""
    step_diffs_html = "".join(f"<details><summary>diff of {esc(t)}</summary><pre>{esc(chr(10).join(ls))}</pre></details>"
                              for t, ls in step_diffs)
    notes_html = "".join(f"<p><i>{esc(n)}</i></p>" for n in perf_notes)
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>xpiler report: {esc(Path(src).name)}</title>
<style>body{{font-family:sans-serif;margin:1.5em;max-width:1400px}} pre{{background:#f6f8fa;padding:.6em;overflow:auto;
font-size:12px}} .cols{{display:flex;gap:1em}} .cols>div{{flex:1;min-width:0}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.2em .5em;font-size:13px}} .ok{{color:#2e7d32}} .bad{{color:#c62828;font-weight:bold}}
.state{{font-size:1.2em;font-weight:bold}}</style></head><body>
<h1>xpiler: {esc(Path(src).name)} → {esc(result.target)}</h1>
<p class="state {'ok' if result.verified else 'bad'}">{esc(state)}</p>
<p>Output <code>{esc(result.output_path.name if result.output_path else '-')}</code>; {result.elapsed_s:.1f} s;
xpiler {esc(str(header.get('version')))} ({esc(str(header.get('git')))}).</p>
<h2>Tests</h2><table><tr><th>stage</th><th>dialect</th><th>substrate</th><th>instances</th><th>seeds</th><th>verified</th>
<th>max abs err</th><th>max rel err</th></tr>{rows}</table>
<h2>Pass sequence</h2><ol>{steps_html}</ol>{step_diffs_html}
<h2>Program graph</h2>{img(gpng) or '<p>(matplotlib not installed)</p>'}
<h2>Performance</h2>{perf_table}{img(ppng) or '<p>No latency measured in this run.</p>'}{notes_html}
{asm_html}
{('<h2>Tuning (MCTS)</h2>' + ''.join(f'<p>{esc(x)}</p>' for x in tune_lines) + img(spng)) if tune_lines else ''}
<h2>Diagnostics</h2><ul>{diag_html or '<li>none</li>'}</ul>
<h2>Source and target</h2><div class="cols"><div><h3>source ({esc(spec.dialect)})</h3><pre>{esc(src_text)}</pre></div>
<div><h3>target ({esc(result.target)})</h3><pre>{esc(tgt_text)}</pre></div></div>
<h2>Diff</h2><pre>{diff}</pre></body></html>"""
    return put("report.html", page)
