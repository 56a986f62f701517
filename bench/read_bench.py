"""Reader throughput: records/s and MB/s of the read stage's record loop (pipeline.warc.records
.iter_warc_rows, no Spark, one core) over WARCs built from the real pages in ../shared/data,
as Common Crawl writes them (a gzip member per record), as one gzip stream (ClueWeb style), and
plain; and the same pages as a gzip-per-record ARC file.

    python bench/read_bench.py [--records N] [--rounds R] [--out bench/results/read.json]

Medians of R rounds; the same files every round. warcio's own ArchiveIterator over the same
bytes is measured alongside as a reference (it reads neither the single-stream gzip nor ARC
past the first record, so it is given the per-record and plain files only).
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

from pipeline.config import load_config  # noqa: E402
from pipeline.warc.records import RecordPolicy, iter_warc_rows  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "extraction"


def real_pages(limit: int) -> list[bytes]:
    pages = [gzip.decompress(p.read_bytes()) for p in sorted((SHARED / "wcxb_dev" / "html").glob("*.html.gz"))]
    pages += [p.read_bytes() for p in sorted((SHARED / "scrapinghub_aeb" / "html").glob("*.html"))]
    if not pages:
        raise SystemExit(f"no pages under {SHARED}")
    out = []
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
        req = w.create_warc_record(url, "request", payload=io.BytesIO(b""),
                                   http_headers=StatusAndHeaders("GET / HTTP/1.1", [("Host", "x")], is_http_request=True),
                                   warc_headers_dict={"WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(rid, 'q')}>"})
        w.write_record(req)
        resp = w.create_warc_record(url, "response", payload=io.BytesIO(html),
                                    http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"),
                                    warc_headers_dict={"WARC-Record-ID": f"<urn:uuid:{rid}>"})
        w.write_record(resp)
    return buf.getvalue()


def arc_bytes(pages: list[bytes]) -> bytes:
    """ARC v1, a gzip member per record, as Common Crawl's 2008-2012 crawls."""
    desc = b"1 0 Bench\nURL IP-address Archive-date Content-type Archive-length\n"
    parts = [gzip.compress(b"filedesc://bench.arc.gz 0.0.0.0 20090101000000 text/plain %d\n%s\n" % (len(desc), desc), mtime=0)]
    for i, html in enumerate(pages):
        block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + html
        head = b"https://bench%d.example.org/page/%d 10.0.0.1 20090101000000 text/html %d\n" % (i % 97, i, len(block))
        parts.append(gzip.compress(head + block + b"\n", mtime=0))
    return b"".join(parts)


def time_ours(data: bytes, policy: RecordPolicy) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = sum(1 for _ in iter_warc_rows(io.BytesIO(data), 0, "bench", policy))
    return time.perf_counter() - t0, n


def time_warcio(data: bytes) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = 0
    for rec in ArchiveIterator(io.BytesIO(data)):
        rec.content_stream().read() if rec.rec_type == "response" else None
        n += 1
    return time.perf_counter() - t0, n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=3000, help="pages (x2 records)")
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
        ours, ref = [], []
        for _ in range(args.rounds):
            s, n = time_ours(data, policy)
            ours.append(s)
            if name in ("warc.gz, a member per record", "warc, plain"):
                ref.append(time_warcio(data)[0])
        med = statistics.median(ours)
        results[name] = {
            "bytes": len(data), "rows": n, "seconds": round(med, 4),
            "records_per_s": round(n / med), "MB_per_s": round(len(data) / med / 1e6, 1),
        }
        if ref:
            results[name]["warcio_seconds"] = round(statistics.median(ref), 4)
        print(f"{name:32s} {n:6d} rows {len(data) / 1e6:7.1f} MB  {med:6.2f} s  "
              f"{n / med:8.0f} rec/s {len(data) / med / 1e6:6.1f} MB/s"
              + (f"  (warcio alone {statistics.median(ref):.2f} s)" if ref else ""))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"pages": len(pages), "rounds": args.rounds, "files": results}, indent=2))
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
