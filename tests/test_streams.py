"""HTTP streaming against a real local server: retries, resume, errors that name the URL."""

import http.server
import threading
from functools import partial

import pytest

from curate_pipeline.document.warc.streams import MissingInput, TransportError, open_stream

DATA = bytes(range(256)) * 4096  # 1 MiB


class FlakyHandler(http.server.BaseHTTPRequestHandler):
    """Serves DATA; the first GET dies half-way; honours Range unless told not to."""

    calls: list = []
    honour_range = True

    def log_message(self, *a):
        pass

    def do_GET(self):
        type(self).calls.append(self.headers.get("Range"))
        if self.path == "/missing.warc.gz":
            self.send_error(404)
            return
        start = 0
        rng = self.headers.get("Range")
        if rng and self.honour_range:
            start = int(rng.split("=")[1].rstrip("-"))
            self.send_response(206)
        else:
            self.send_response(200)
        body = DATA[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if len(type(self).calls) == 1:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(2)  # drop the connection mid-body
            return
        self.wfile.write(body)


@pytest.fixture(params=[True, False], ids=["range", "no-range"])
def server(request):
    handler = type("H", (FlakyHandler,), {"calls": [], "honour_range": request.param})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", handler
    srv.shutdown()


def test_resumes_after_dropped_connection(server):
    base, handler = server
    with open_stream(f"{base}/data.bin", retries=3, backoff_s=0.01) as fh:
        got = fh.read()
    assert got == DATA
    assert len(handler.calls) == 2
    if handler.honour_range:
        assert handler.calls[1] == f"bytes={len(DATA) // 2}-"


def test_404_fails_fast_naming_url(server):
    base, handler = server
    with pytest.raises(MissingInput, match="missing.warc.gz.*404"):
        open_stream(f"{base}/missing.warc.gz", retries=3, backoff_s=0.01)
    assert len(handler.calls) == 1  # no pointless retries on a 404


def test_refused_connection_names_url():
    url = "http://127.0.0.1:9/x.warc.gz"  # discard port: nothing listens
    with pytest.raises(TransportError, match="127.0.0.1:9/x.warc.gz: unreachable .* after 2"):
        partial(open_stream, retries=1, backoff_s=0.01)(url)
