"""Reader throughput: records/s and MB/s of the read stage's record loop
(curate_pipeline.document.warc.records.iter_warc_rows, no Spark, one core) over archives built from
the
real pages in ../shared/data: a WARC as Common Crawl writes it (a gzip member per record), the
same WARC as one gzip stream (ClueWeb style) and plain, and the same pages as a gzip-per-record
ARC.

    python bench/read_bench.py [--records N] [--rounds R] [--out bench/results/read.json]

Medians of R rounds over the same bytes, in memory. Alongside, on the same bytes: warcio's
ArchiveIterator and FastWARC's (each reading every response's content), as references for
what a record loop costs; neither reads past damage, warcio stops a one-stream gzip after its
first record, and neither reads the ARC file (their row counts say so).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import load_config  # noqa: E402
from curate_pipeline.document.warc.arc import arc_filedesc, arc_record  # noqa: E402
from curate_pipeline.document.warc.records import RecordPolicy, iter_warc_rows  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "extraction"
HTML = [("Content-Type", "text/html; charset=utf-8")]


def real_pages(limit: int) -> list[bytes]:
    pages = [gzip.decompress(p.read_bytes()) for p in sorted(SHARED.glob("wcxb_dev/html/*.gz"))]
    pages += [p.read_bytes() for p in sorted(SHARED.glob("scrapinghub_aeb/html/*.html"))]
    if not pages:
        raise SystemExit(f"no pages under {SHARED}")
    out: list[bytes] = []
    while len(out) < limit:
        out.extend(pages[: limit - len(out)])
    return out


def warc_bytes(pages: list[bytes], gz: bool) -> bytes:
    """A request and a response record per page (Common Crawl's shape)."""
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=gz)
    for i, html in enumerate(pages):
        url = f"https://bench{i % 97}.example.org/page/{i}"
        rid = uuid.uuid5(uuid.NAMESPACE_URL, url)
        get = StatusAndHeaders("GET / HTTP/1.1", [("Host", "x")], is_http_request=True)
        ok = StatusAndHeaders("200 OK", HTML, protocol="HTTP/1.1")
        for kind, headers, body, rec_id in (
            ("request", get, b"", uuid.uuid5(rid, "request")),
            ("response", ok, html, rid),
        ):
            rec = w.create_warc_record(
                url, kind, payload=io.BytesIO(body), http_headers=headers,
                warc_headers_dict={"WARC-Record-ID": f"<urn:uuid:{rec_id}>"},
            )  # fmt: skip
            w.write_record(rec)
    return buf.getvalue()


def arc_bytes(pages: list[bytes]) -> bytes:
    """ARC v1, a gzip member per record, as Common Crawl's 2008-2012 crawls."""
    parts = [arc_filedesc("bench.arc.gz")]
    for i, html in enumerate(pages):
        block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + html
        parts.append(arc_record(f"https://bench{i % 97}.example.org/page/{i}", block))
    return b"".join(gzip.compress(p, mtime=0) for p in parts)


def time_ours(data: bytes, policy: RecordPolicy) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = sum(1 for _ in iter_warc_rows(io.BytesIO(data), 0, "bench", policy))
    return time.perf_counter() - t0, n


def time_warcio(data: bytes) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = 0
    try:
        for rec in ArchiveIterator(io.BytesIO(data)):
            if rec.rec_type == "response":
                rec.content_stream().read()
            n += 1
    except Exception:  # noqa: BLE001 - a reference reader that gives up: its count says so
        pass
    return time.perf_counter() - t0, n


def time_fastwarc(data: bytes) -> tuple[float, int] | None:
    try:
        from fastwarc.warc import ArchiveIterator as FastIterator
        from fastwarc.warc import WarcRecordType
    except ImportError:
        return None
    t0 = time.perf_counter()
    n = 0
    try:
        for rec in FastIterator(io.BytesIO(data), parse_http=True, fsspec_args=False):
            if rec.record_type == WarcRecordType.response:
                rec.reader.read()
            n += 1
    except Exception:  # noqa: BLE001
        pass
    return time.perf_counter() - t0, n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=3000, help="pages (2 records each)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "read.json"))
    args = ap.parse_args()
    policy = RecordPolicy.from_conf(load_config(ROOT / "conf" / "default.yaml").read)
    pages = real_pages(args.records)
    plain = warc_bytes(pages, gz=False)
    files = {
        "warc.gz, a member per record": warc_bytes(pages, gz=True),
        "warc.gz, one gzip stream": gzip.compress(plain, mtime=0),
        "warc, plain": plain,
        "arc.gz, a member per record": arc_bytes(pages),
    }
    results = {}
    for name, data in files.items():
        runs: dict[str, list[tuple[float, int]]] = {"ours": [], "warcio": [], "fastwarc": []}
        for _ in range(args.rounds):  # the readers alternate within a round
            runs["ours"].append(time_ours(data, policy))
            runs["warcio"].append(time_warcio(data))
            fast = time_fastwarc(data)
            if fast:
                runs["fastwarc"].append(fast)
        entry: dict = {"bytes": len(data)}
        line = f"{name:30s} {len(data) / 1e6:6.1f} MB"
        for reader, rs in runs.items():
            if not rs:
                continue
            med = statistics.median(s for s, _ in rs)
            n = rs[0][1]
            entry[reader] = {
                "rows": n, "seconds": round(med, 4),
                "records_per_s": round(n / med), "MB_per_s": round(len(data) / med / 1e6, 1),
            }  # fmt: skip
            line += f" | {reader} {n:5d} rows {med:5.2f} s {len(data) / med / 1e6:6.1f} MB/s"
        results[name] = entry
        print(line)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = {"pages": len(pages), "rounds": args.rounds, "files": results}
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
