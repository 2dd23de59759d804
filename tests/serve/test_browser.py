"""The reverse-dictionary page in a real browser: ``defsentflow serve`` on a free loopback port,
headless Chromium (the system's, Debian package ``chromium``) driven by Playwright.

Skips, saying why, when the ``chromium`` binary or the ``playwright`` package is missing; no
browser is ever downloaded.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.serve.conftest import DEFS

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (Debian: apt-get install chromium)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def aliased(served, tiny_mlm_dir):
    """A second served model, and an alias (tiny@champion) naming the model that is *not* the first index:
    the first view must answer from the alias the Model box shows, not from the first index."""
    import pyarrow as pa

    from defsentflow.registry import record_change
    from defsentflow.revdict import build_revdict_index
    from defsentflow.serve.catalog import ServeCatalog
    from defsentflow.storage import Catalog

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEFSENTFLOW_HOME", str(served))
        table = pa.table({"entry": list(DEFS), "definition": list(DEFS.values()), "split": ["test"] * len(DEFS)})
        build_revdict_index(str(tiny_mlm_dir), table, mode="cosine", device="cpu")
        Catalog().register_model("tiny-other", tiny_mlm_dir, method="defsent_plus", pooling="mean")
        ids = [i.model_id for i in ServeCatalog(served).indexes()]
        named = next(m for m in ids if m != ids[0])
        record_change(Catalog(), "tiny@champion", named, action="gate")
    return named


@pytest.fixture()
def server(served):
    import httpx

    port = _free_port()
    env = {**os.environ, "DEFSENTFLOW_HOME": str(served), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "defsentflow.cli", "serve", "--port", str(port)], env=env,
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"defsentflow serve exited with {proc.returncode}: {proc.stdout.read()[-2000:]}")
            try:
                if httpx.get(url + "/api/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("defsentflow serve did not answer within 120 s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_typing_a_definition_shows_its_entry_first(aliased, server, served, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as pw:
        # the system Chromium; --no-sandbox: CI containers run as root, where Chromium's sandbox refuses to start
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 800})
            page.goto(server + "/revdict")
            assert page.title().startswith("Reverse dictionary")
            # the first view: the Model box shows the alias, and the table below is its model's answer
            shown = page.eval_on_selector("#model", "s => s.options[s.selectedIndex].text")
            assert shown.startswith(f"tiny@champion: {aliased} since"), shown
            assert page.inner_text("#results").strip() and \
                page.locator(".hits p.muted").first.inner_text().startswith(f"{aliased} (")
            assert "ranked by score" in page.locator(".hits p.muted").first.inner_text()  # which score ranks
            page.fill("#q", DEFS["king"])
            page.select_option("#model", "tiny-pst")
            page.fill("#k", "5")
            page.click("#lookup")
            page.wait_for_selector("#results")
            entries = page.locator("#results td.entry").all_inner_texts()
            assert entries[0] == "king" and len(entries) == 5
            assert page.input_value("#q") == DEFS["king"]  # the form keeps what was typed
            shot = tmp_path / "revdict.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            # an unknown model is a clear message on the page, not a stack trace
            page.goto(server + "/revdict?q=a+dog&model=nobody")
            assert "served models: " in page.inner_text("#error") and "tiny-pst" in page.inner_text("#error")
            # the page opens with an example look-up; a second model shows beside the first
            page.goto(server + "/revdict")
            assert page.is_visible("#example") and page.locator("#results td.entry").count() == 10
            page.select_option("#beside", "tiny-pst")
            page.click("#lookup")
            page.wait_for_selector("#beside-results")
            left, right = (page.locator(sel).bounding_box() for sel in ("#results", "#beside-results"))
            assert right["x"] > left["x"] + left["width"] - 1  # side by side at 1100 px
            # the leaderboard fits 1280 px with a realistic set of figures (STS12-16, STS-B, SICK-R, the
            # reverse dictionary in three modes on dev and test): no sideways scroll of the page or the table
            from defsentflow.storage import Catalog

            fig = lambda t, s, m, v: {"task": t, "setting": s, "metric": m, "value": v, "n": 3, "pooling": "mean"}  # noqa: E731
            Catalog(served).record_metrics("dsp-tiny", [
                *(fig(t, "all", "spearman", 70.123) for t in ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb-test",
                                                              "sickr")),
                *(fig(t, mode, "mrr", 0.12345) for t in ("revdict", "revdict-dev") for mode in ("head", "cosine", "hybrid"))])
            page.set_viewport_size({"width": 1280, "height": 800})
            page.goto(server + "/leaderboard")
            assert "tiny-pst" in page.inner_text("#leaderboard")
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            assert page.evaluate("(t => t.parentElement.scrollWidth <= t.parentElement.clientWidth)"
                                 "(document.querySelector('#leaderboard'))")
            assert page.inner_text("th.group.dev") == "dev" and page.get_attribute("a.run", "href").startswith("/runs")
        finally:
            browser.close()
