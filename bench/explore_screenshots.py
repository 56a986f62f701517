"""docs/'s screenshots of `curate explore`, from a real run of the project's sample (what `make
run` writes to out/sample): the overview, a document the rules dropped with its rules table,
and the near-duplicate clusters. Needs Debian's chromium and playwright (`make test`'s tools).

    python bench/explore_screenshots.py [--run out/sample] [--out docs]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.outputs.explore.server import Explorer, start  # noqa: E402
from curate_pipeline.outputs.publish.versions import published_path  # noqa: E402

ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--run", default=str(ROOT / "out" / "sample"))
    ap.add_argument("--out", default=str(ROOT / "docs"))
    args = ap.parse_args()
    run, out = Path(args.run), Path(args.out)
    try:
        published_path(run)
    except FileNotFoundError:
        print(f"{run}: no finished run (make run writes out/sample)", file=sys.stderr)
        return 2
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium is not installed: apt-get install chromium", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    server = start(Explorer(run), port=0)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    ledger = json.loads((published_path(run) / "manifest.json").read_text())["counts"]["rejected"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready='1']", timeout=30_000)
        page.screenshot(path=str(out / "explore-overview.png"))
        reason = next((r for r in ledger if r.startswith("rules:")), next(iter(ledger)))
        page.click(f"#reasons a:text-is('{reason}')")
        page.wait_for_selector("#doc-list tr.row")
        page.click("#doc-list tr.row >> nth=0")
        page.wait_for_selector("#doc:not([hidden])")
        page.wait_for_function("document.getElementById('doc-page-text').textContent.length > 0")
        page.screenshot(path=str(out / "explore-document.png"), full_page=True)
        page.click("#tab-clusters")
        page.wait_for_timeout(1000)
        if page.locator("#cluster-list tr.row").count():
            page.click("#cluster-list tr.row >> nth=0")
            page.wait_for_selector("#cluster-members table tr.row")
        page.screenshot(path=str(out / "explore-clusters.png"))
        browser.close()
    server.shutdown()
    print(f"screenshots of {run} in {out}: explore-overview.png, explore-document.png, "
          "explore-clusters.png")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
