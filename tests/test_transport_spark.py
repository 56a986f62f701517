"""A flaky network never changes the data: inputs served over HTTP by a server that fails,
stalls and cuts connections on a schedule give the same documents and ledger as the same
files read from disk; a file that is not there is a ledger row; a host that refuses every
connection fails the run, naming the URL, instead of becoming a verdict on the data."""

from __future__ import annotations

import http.server
import shutil
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from run_outputs import run_outputs

from curate_pipeline.examples.broken_archives import refused_url

pytestmark = pytest.mark.spark

STALL_S = 1.5  # longer than the run's http_timeout_s below


class FaultyHandler(http.server.BaseHTTPRequestHandler):
    """Serves `root`, honouring Range. Per path, the first GET answers 503, the second is cut
    half-way through its body, the third stalls past the client's timeout; the first HEAD
    answers 503. `faults` counts what was injected."""

    root: Path
    lock = threading.Lock()
    gets: Counter
    heads: Counter
    faults: Counter
    protocol_version = "HTTP/1.0"

    def log_message(self, *a):
        pass

    def _file(self) -> Path | None:
        p = self.root / self.path.lstrip("/")
        return p if p.is_file() else None

    def do_HEAD(self):
        with self.lock:
            self.heads[self.path] += 1
            n = self.heads[self.path]
        f = self._file()
        if f is None:
            self.send_error(404)
            return
        if n == 1:
            self.faults["head_503"] += 1
            self.send_error(503)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(f.stat().st_size))
        self.end_headers()

    def do_GET(self):
        with self.lock:
            self.gets[self.path] += 1
            n = self.gets[self.path]
        f = self._file()
        if f is None:
            self.send_error(404)
            return
        if n == 1:
            self.faults["get_503"] += 1
            self.send_error(503)
            return
        data = f.read_bytes()
        start = 0
        rng = self.headers.get("Range")
        if rng:
            start = int(rng.split("=")[1].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if n == 2 and len(body) > 1:
            self.faults["cut"] += 1
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        if n == 3:
            self.faults["stall"] += 1
            time.sleep(STALL_S)
        try:
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up on the stall


@pytest.fixture
def faulty_server(tmp_path):
    root = tmp_path / "served"
    (root / "crawl").mkdir(parents=True)
    handler = type("H", (FaultyHandler,), {"root": root, "gets": Counter(),
                                           "heads": Counter(), "faults": Counter()})  # fmt: skip
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", root / "crawl", handler
    srv.shutdown()


def test_flaky_http_gives_the_same_rows_as_local_files(faulty_server, spark, cfg, sample_warc,
                                                       tmp_path):  # fmt: skip
    from curate_pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc
    from curate_pipeline.run.orchestrate import run

    base, served, handler = faulty_server
    shutil.copy(sample_warc, served / "sample.warc.gz")
    write_pages_warc(served / "pages.warc.gz", with_duplicates(synthetic_pages(60, seed=5)))
    c = cfg.model_copy(deep=True)
    c.input.http_retries = 4
    c.input.http_backoff_s = 0.05
    c.input.http_timeout_s = 0.5
    c.read.splits_per_file = 3  # byte-range splits: HEAD, ranged opens, resumes
    local = tmp_path / "local"
    run(c, [str(served / "sample.warc.gz"), str(served / "pages.warc.gz")], local, spark)
    urls = [f"{base}/crawl/sample.warc.gz", f"{base}/crawl/pages.warc.gz"]
    remote = tmp_path / "remote"
    m = run(c, [*urls, f"{base}/crawl/gone.warc.gz"], remote, spark)

    assert handler.faults["get_503"] >= 2 and handler.faults["cut"] >= 2
    assert handler.faults["stall"] >= 2 and handler.faults["head_503"] >= 2
    data, ledger = run_outputs(remote)
    gone = [r for r in ledger if r[1] == "read" and r[2] == "unreadable_file"]
    assert len(gone) == 1 and "404" in gone[0][3]
    assert (data, [r for r in ledger if r not in gone]) == run_outputs(local)
    assert not [r for r in ledger if r[2] in ("corrupt_file", "corrupt_record")]
    assert m["counts"]["read"] == m["counts"]["kept"] + sum(m["counts"]["rejected"].values())
    # more unreadable files than allowed: the run fails at its end, its ledger written
    from curate_pipeline.run.orchestrate import TooManyUnreadable

    c.input.max_unreadable_files = 0
    with pytest.raises(TooManyUnreadable, match="1 of 3 input files are unreadable"):
        run(c, [*urls, f"{base}/crawl/gone.warc.gz"], remote, spark)
    assert run_outputs(remote)[1] == ledger


def test_a_host_refusing_connections_fails_the_run_naming_the_url(spark, cfg, tmp_path):
    from curate_pipeline.run.orchestrate import run

    c = cfg.model_copy(deep=True)
    c.input.http_retries = 1
    c.input.http_backoff_s = 0.01
    url = refused_url()
    with pytest.raises(Exception, match="TransportError") as e:
        run(c, [url], tmp_path / "out", spark)
    assert url in str(e.value)
    assert not (tmp_path / "out" / "_versions").exists()  # no verdict was published
