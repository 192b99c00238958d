"""Headless Chromium for the report test: Debian's chromium, installed with apt when missing (CI
starts from a fresh machine), run with the flags this sandboxed, offline machine needs."""
import html
import json
import os
import re
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


# Appended to a copy of a Snakemake report: once the page has loaded and React has drawn the app, it
# presses each result's eye button (built by the report's own ButtonViewManager, as its results list
# does) and, for each image preview, measures the <img> the report shows: its decoded width, its
# width on screen and the share of its pixels that are not white. A PDF result is shown in an
# iframe, which a browser leaves blank here: it is recorded with width 0, not waited for.
PREVIEW_CHECK = """
<script>
function appeared(find) {  // React draws in tasks of its own: resolve when find() first finds it
  return new Promise(done => {
    const watch = new MutationObserver(() => { const found = find(); if (found) { watch.disconnect(); done(found); } });
    const now = find();
    if (now) return done(now);
    watch.observe(document.body, {childList: true, subtree: true, attributes: true});
  });
}

// not img.decode(): decoding off the main thread is no task, so Chromium's virtual time (the
// --virtual-time-budget the page runs under) ran out during it; drawImage decodes a loaded image itself
function drawnShare(img) {
  const canvas = document.createElement("canvas");
  [canvas.width, canvas.height] = [img.naturalWidth, img.naturalHeight];
  const context = canvas.getContext("2d");
  context.drawImage(img, 0, 0);
  const px = context.getImageData(0, 0, canvas.width, canvas.height).data;
  let drawn = 0;
  for (let k = 0; k < px.length; k += 4) drawn += px[k + 3] > 0 && px[k] + px[k + 1] + px[k + 2] < 750;
  return drawn / (px.length / 4);
}

window.addEventListener("load", async () => {
  await appeared(() => document.querySelector("#app nav"));
  const checked = {};
  for (const [path, entry] of Object.entries(results)) {
    const button = new ButtonViewManager(app).handleSelectedResult(path).props;
    if (!button.onClick) continue;  // a table: its button downloads it, nothing is previewed
    if (!entry.mime_type.startsWith("image/")) { checked[path] = {mime: entry.mime_type, width: 0}; continue; }
    button.onClick();
    const img = await appeared(() => [...document.querySelectorAll("img")].find(i => i.getAttribute("src") === entry.data_uri));
    if (!img.complete) await new Promise(done => img.addEventListener("load", done, {once: true}));
    checked[path] = {mime: entry.mime_type, width: img.naturalWidth, shown_width: img.clientWidth, drawn: drawnShare(img)};
  }
  const out = document.createElement("pre");
  out.id = "preview-check";
  out.textContent = JSON.stringify(checked);
  document.body.appendChild(out);
});
</script>
"""


def report_previews(report_path, workdir):
    """{result path: what its preview showed} for every result of the report with a view button."""
    probe = workdir / "report_preview_check.html"
    head, tail = report_path.read_text(encoding="utf-8").rsplit("</body>", 1)  # the page's own: its data holds others
    probe.write_text(head + PREVIEW_CHECK + "</body>" + tail, encoding="utf-8")
    dom = render(probe, workdir / "profile")
    found = re.search(r'<pre id="preview-check">(.*?)</pre>', dom, re.S)
    assert found, "the report's page never finished showing its previews"
    return json.loads(html.unescape(found.group(1)))
