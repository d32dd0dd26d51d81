"""Headless Chromium for the report screenshot checks (benchmarks/report_screenshot.py,
benchmarks/project_resume.py): find the browser, render one local page offline to a PNG."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def find_chrome() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def screenshot(chrome: str, html: Path, png: Path, profile: Path, height: int, timeout: float) -> bool:
    """Render ``html`` (a local file) to ``png`` at 1300 x ``height`` with networking features
    off and a throw-away profile; True when the PNG was written."""
    png.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={profile}", f"--window-size=1300,{height}", f"--screenshot={png}",
                    html.as_uri()], capture_output=True, timeout=timeout)
    return png.is_file()
