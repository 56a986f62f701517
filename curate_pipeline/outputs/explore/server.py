"""The explorer's web server: one page, and a JSON API of paginated queries over an output.

Read-only and closed by construction: the only routes are the fixed names below, every query
is a parameterised DuckDB query over the output's own Parquet files (OutputStore), and no
part of a request becomes a path. Pages never put data into HTML: the script writes every
value as text (crawl pages carry scripts), under a Content-Security-Policy that allows only
the server's own script and style. It listens on 127.0.0.1 unless told otherwise; another
address needs a token, which every API call must carry (`Authorization: Bearer`, or
`?token=` on the page's address, which the page passes on).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from curate_pipeline.config import ReadConf
from curate_pipeline.location import Location
from curate_pipeline.outputs.explore.page_text import visible_text
from curate_pipeline.outputs.explore.store import Filters, OutputStore
from curate_pipeline.outputs.publish.versions import NoVersion, published_dir

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
STATIC = {"/": ("page.html", "text/html"), "/page.js": ("page.js", "text/javascript"),
          "/page.css": ("page.css", "text/css")}  # fmt: skip
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


FILTERS = ("verdict", "lang", "source", "url", "text")


class BadRequest(ValueError):
    pass


class NotReady(RuntimeError):
    pass


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Explorer:
    """What the API answers, from one output (`status` adds a serving process's state). The
    output is opened once it holds a finished run, and again on `refresh()` (after each run
    of `curate serve`)."""

    def __init__(self, out: str | Location, status: Callable[[], dict] | None = None):
        self.out = Location.of(out)
        self.status_of = status
        self.store: OutputStore | None = None
        self.read = ReadConf()
        self.refresh()

    def refresh(self) -> None:
        try:
            published_dir(self.out)
        except NoVersion:
            return
        store = OutputStore.open(self.out)
        try:  # the run's own read settings (sizes, charsets) to read a page again
            self.read = ReadConf(**store.manifest.get("config", {}).get("read", {}))
        except ValueError:  # a run of another version: the defaults
            self.read = ReadConf()
        self.store = store

    def answer(self, route: str, q: dict[str, str]) -> Any:
        s = self.store
        if route == "/api/status":
            m = s.manifest if s is not None else {}
            return {"output": m.get("output", str(self.out)), "finished": m.get("finished"),
                    "counts": m.get("counts"), "inputs": len(m.get("inputs", [])),
                    "serve": self.status_of() if self.status_of else None}  # fmt: skip
        if s is None:
            raise NotReady("no finished run in this output yet")
        if route == "/api/summary":
            from curate_pipeline.outputs.report import report_data

            d = report_data(s.version)  # the version the store opened
            budget = d.get("budget") or {}
            return {"funnel": d["funnel"], "rejections": d["rejections"],
                    "languages": d["languages"], "stages": d["stages"],
                    "sources": budget.get("sources", {})}  # fmt: skip
        if route == "/api/facets":
            return s.facets()
        if route == "/api/documents":
            f = Filters(**{k: q.get(k, "")[:500] for k in FILTERS})
            return s.documents(f, _int(q, "page", 0), _int(q, "size", 50))
        if route == "/api/document":
            doc = s.document(_int(q, "pos", -1))
            if doc is None:
                raise LookupError("no such document")
            if q.get("page_text") == "1":
                where = (doc.get("warc_file") or "", doc.get("warc_offset"), doc["doc_id"])
                doc["page_text"] = visible_text(*where, self.read)
            return doc
        if route == "/api/clusters":
            return s.clusters(_int(q, "page", 0), _int(q, "size", 20))
        if route == "/api/cluster":
            return s.cluster(q.get("id", "")[:200])
        raise LookupError("no such route")


def _int(q: dict[str, str], key: str, default: int) -> int:
    try:
        return int(q.get(key, default))
    except ValueError:
        raise BadRequest(f"{key} must be a whole number") from None


def make_handler(explorer: Explorer, token: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "curate-explore"
        sys_version = ""

        def log_message(self, fmt: str, *args: object) -> None:  # quiet: a line per request
            log.debug(fmt, *args)

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", f"{ctype}; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            for k, v in HEADERS.items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, status: int, value: Any) -> None:
            self._send(status, json.dumps(value, default=str).encode(), "application/json")

        def _authorized(self, q: dict[str, str]) -> bool:
            if token is None:
                return True
            given = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            given = given or q.get("token", "")
            return hmac.compare_digest(given.encode(), token.encode())

        def do_HEAD(self) -> None:  # noqa: N802
            self.do_GET()

        def do_GET(self) -> None:  # noqa: N802
            parts = urlsplit(self.path)
            q = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path in STATIC:
                name, ctype = STATIC[parts.path]
                body = (
                    resources.files("curate_pipeline.outputs.explore").joinpath(name).read_bytes()
                )
                return self._send(HTTPStatus.OK, body, ctype)
            if parts.path == "/favicon.ico":
                return self._send(HTTPStatus.NO_CONTENT, b"", "text/plain")
            if not parts.path.startswith("/api/"):
                return self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
            if not self._authorized(q):
                return self._json(HTTPStatus.UNAUTHORIZED, {"error": "a token is required"})
            try:
                return self._json(HTTPStatus.OK, explorer.answer(parts.path, q))
            except BadRequest as e:
                return self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})
            except NotReady as e:
                return self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(e)})
            except LookupError as e:
                return self._json(HTTPStatus.NOT_FOUND, {"error": str(e)})
            except Exception as e:  # a query that failed: said, the server goes on
                log.warning("%s: %s", parts.path, e)
                return self._json(HTTPStatus.INTERNAL_SERVER_ERROR,
                                  {"error": f"{type(e).__name__}: {e}"[:300]})  # fmt: skip

        def _refuse(self) -> None:
            self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "read-only"})

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # noqa: N815

    return Handler


def start(explorer: Explorer, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
          token: str | None = None) -> ThreadingHTTPServer:  # fmt: skip
    """Serve in a daemon thread; the server (its `server_address`, `shutdown()`) is returned."""
    if not is_loopback(host) and not token:
        raise ValueError(f"--host {host} is reachable from other machines: give --token "
                         "(every request must then carry it), or keep 127.0.0.1")  # fmt: skip
    server = ThreadingHTTPServer((host, port), make_handler(explorer, token))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True, name="explore").start()
    return server
