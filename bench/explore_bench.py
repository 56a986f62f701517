"""How long the explorer's queries take on a finished run (medians of 7, in-process, no HTTP):
a page of a reason, a page of a language, a text search, one document with the page's visible
text read again from its archive, the clusters page, the filters' facets.

    python bench/explore_bench.py OUTPUT_DIR

Writes bench/results/explore.json.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import ReadConf  # noqa: E402
from curate_pipeline.outputs.explore.page_text import visible_text  # noqa: E402
from curate_pipeline.outputs.explore.store import Filters, OutputStore  # noqa: E402


def median_s(call, n: int = 7) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times), 4)


def main() -> int:
    out = sys.argv[1]
    t0 = time.perf_counter()
    store = OutputStore.open(out)
    opened = time.perf_counter() - t0
    facets = store.facets()
    reason = facets["verdicts"][0]["verdict"]
    lang = facets["languages"][0]["lang"]
    doc = store.documents(Filters(verdict="kept"), 0, 1)["rows"][0]
    d = store.document(doc["crawl_pos"])
    figures = {
        "output": out,
        "records": store.manifest["counts"]["read"],
        "open_s": round(opened, 4),
        "page_of_a_reason_s": median_s(lambda: store.documents(Filters(verdict=reason), 3, 50)),
        "page_of_a_language_s": median_s(lambda: store.documents(Filters(lang=lang), 3, 50)),
        "text_search_s": median_s(lambda: store.documents(Filters(text="privacy"), 0, 50)),
        "document_s": median_s(lambda: store.document(doc["crawl_pos"])),
        "visible_text_s": median_s(
            lambda: visible_text(d["warc_file"], d["warc_offset"], d["doc_id"], ReadConf())
        ),  # fmt: skip
        "clusters_page_s": median_s(lambda: store.clusters(0, 20)),
        "facets_s": median_s(store.facets),
    }
    print(json.dumps(figures, indent=2))
    dest = ROOT / "bench" / "results" / "explore.json"
    dest.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
