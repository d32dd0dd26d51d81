#!/usr/bin/env python3
"""Migrate gemm (softmax on a CPU without AVX-512), open its report.html in headless Chromium, and check
the screenshot.

    python benchmarks/report_screenshot.py [--out DIR]

The migration is gemm.cu -> c, so the kernel runs on a hardware substrate here (this CPU) and the
report has a performance table and plot (kernel vs the numpy reference). Checks that the page
renders offline (no network) with its plot and program graph: the screenshot must exist, be large,
contain many distinct colours, the green verified nodes of the graph and the blue bar of the
performance plot. Exit 0 when it does.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    a = ap.parse_args()
    from chrome_shot import find_chrome, screenshot
    chrome = find_chrome()
    if not chrome:
        print("no chromium here (apt-get install chromium)")
        return 2
    import xpiler
    work = Path(tempfile.mkdtemp(prefix="xpiler-report-"))
    # the c output must run natively to have a performance plot: gemm's uses AVX-512, which a CPU
    # without it only emulates (not timed); softmax's c output is scalar
    avx512 = "avx512f" in Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else False
    op = "gemm" if avx512 else "softmax"
    r = xpiler.migrate(ROOT / "examples" / op / f"{op}.cu", to="c", outdir=work / "out")
    html = r.report_path
    assert html and html.is_file()
    text = html.read_text()
    assert "http://" not in text and "https://" not in text, "the report must not reference the network"
    perf_part = text.split("<h2>Performance</h2>")[1].split("<h2>")[0]
    assert "data:image/png" in perf_part, "the report has no performance plot"
    png = Path(a.out) / f"report_{op}_cu_to_c.png"
    if not screenshot(chrome, html, png, work / "chrome", 2600, 120):
        print("no screenshot was written")
        return 1
    from PIL import Image  # matplotlib depends on pillow
    im = Image.open(png).convert("RGB")
    colours = len(set((lambda s: s.get_flattened_data() if hasattr(s, "get_flattened_data") else s.getdata())(im.resize((260, 440)))))
    pixels = list(im.get_flattened_data() if hasattr(im, "get_flattened_data") else im.getdata())
    blues = sum(1 for p in pixels if p[2] > 180 and p[0] < 60 and 90 < p[1] < 150)   # the kernel's bar
    greens = sum(1 for p in (im.get_flattened_data() if hasattr(im, "get_flattened_data") else im.getdata()) if p[1] > 150 and p[0] < 120 and p[2] < 120)
    print(f"report: {html} ({'verified' if r.verified else 'unresolved'}); screenshot {png} {im.size}, "
          f"{colours} colours, {greens} green pixels (graph), {blues} blue pixels (plot)")
    ok = im.size[0] >= 1000 and colours > 50 and greens > 100 and blues > 100
    print("RENDERED OK" if ok else "RENDER CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
