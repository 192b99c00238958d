"""Headless Chromium for the report test: Debian's chromium, installed with apt when missing (CI
starts from a fresh machine), run with the flags this sandboxed, offline machine needs."""
import os
import shutil
import subprocess

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=20000"]  # let the report's scripts render before the dump


def chromium():
    """The chromium binary; installs Debian's package if missing, skips where that is impossible."""
    path = shutil.which("chromium")
    if path:
        return path
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("no chromium, and no root apt-get to install it")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
                   check=True, env=env, capture_output=True)
    return shutil.which("chromium")


def render(html_path, profile_dir, screenshot=None):
    """The DOM after the page's scripts ran (and a screenshot when asked)."""
    args = [chromium(), *FLAGS, f"--user-data-dir={profile_dir}"]
    if screenshot:
        args += [f"--screenshot={screenshot}", "--window-size=1400,1000"]
    else:
        args += ["--dump-dom"]
    proc = subprocess.run(args + [html_path.resolve().as_uri()], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout
