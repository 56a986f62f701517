"""The per-byte figures run/sizing.py sizes output files with, measured on real pages, and
a check that output files come out near the size asked for.

Input: a WARC of the 1,497 WCXB dev pages and the 181 scrapinghub pages (real HTML from
../shared/data/extraction), and the real archives of ../shared/data/warc (Common Crawl,
Heritrix, wget: requests, metadata, non-HTML, revisits). One run of `curate run` with
`output.file_bytes` set small enough that data/ and rejected/ need several files; then:

- data/ Parquet bytes per byte of kept text (DATA_BYTES_PER_TEXT_BYTE),
- rejected/ Parquet bytes per ledger row (LEDGER_ROW_BYTES),
- documents store bytes per record read (STORE_BYTES_PER_RECORD),
- each data/ and rejected/ file's size against output.file_bytes (a data/ file holds whole
  input files' kept documents: here one WARC holds nearly all of them, so one file, larger
  than the 1 MiB asked; a Common Crawl file's kept text, ~30 MB of Parquet, is far below the
  512 MiB default).

    python bench/sizing_bench.py

Writes bench/results/sizing.json.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.examples.corpus import Page, write_pages_warc  # noqa: E402
from curate_pipeline.outputs.publish.versions import published_path, read_rows  # noqa: E402
from curate_pipeline.run import sizing  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
WORK = ROOT / "bench" / "work" / "sizing"


def real_pages() -> list[Page]:
    pages = []
    for f in sorted((SHARED / "extraction" / "wcxb_dev" / "html").glob("*.html.gz")):
        pages.append(Page(f"https://wcxb.example/{f.stem}", gzip.decompress(f.read_bytes()),
                          "text/html"))  # fmt: skip
    aeb = SHARED / "extraction" / "scrapinghub_aeb"
    truth = json.loads((aeb / "ground-truth.json").read_text())
    for sha, item in sorted(truth.items()):
        pages.append(Page(item["url"], (aeb / "html" / f"{sha}.html").read_bytes(), "text/html"))
    return pages


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*.parquet"))


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    warc = WORK / "real-pages.warc.gz"
    if not warc.exists():
        write_pages_warc(warc, real_pages(), tag="sizing")
    inputs = [str(warc), *sorted(str(p) for p in (SHARED / "warc").glob("*.warc*"))]
    target = 1 << 20  # 1 MiB: several files for this input
    cfg = yaml.safe_load((ROOT / "conf" / "default.yaml").read_text())
    cfg["output"]["file_bytes"] = target
    config = WORK / "sizing.yaml"
    config.write_text(yaml.safe_dump(cfg))
    out = WORK / "out"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    subprocess.run([str(ROOT / ".venv" / "bin" / "curate"), "run", "--config", str(config),
                    "--input", *inputs, "--output", str(out)], check=True, cwd=ROOT)  # fmt: skip
    manifest = json.loads((published_path(out) / "manifest.json").read_text())
    data = [r["text"] for r in read_rows(out, "data", ["text"])]
    text_bytes = sum(len(t.encode()) for t in data)
    ledger_rows = sum(manifest["counts"]["rejected"].values())
    store = _bytes(out / "_stages" / "documents")
    files = {sub: [f["bytes"] for f in manifest["files"][sub]] for sub in ("data", "rejected")}
    result = {
        "input": {
            "files": len(inputs),
            "records": manifest["counts"]["read"],
            "kept": manifest["counts"]["kept"],
        },  # fmt: skip
        "data_bytes_per_text_byte": round(sum(files["data"]) / text_bytes, 3),
        "ledger_row_bytes": round(sum(files["rejected"]) / ledger_rows, 1),
        "store_bytes_per_record": round(store / manifest["counts"]["read"], 1),
        "file_bytes_target": target,
        "file_bytes": files,
        "in_use": {
            "data_bytes_per_text_byte": sizing.DATA_BYTES_PER_TEXT_BYTE,
            "ledger_row_bytes": sizing.LEDGER_ROW_BYTES,
            "store_bytes_per_record": sizing.STORE_BYTES_PER_RECORD,
        },  # fmt: skip
    }
    print(json.dumps(result, indent=2))
    dest = ROOT / "bench" / "results" / "sizing.json"
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
