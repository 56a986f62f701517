"""Main-text extraction with trafilatura, bounded in time per document.

The bound uses SIGALRM (`setitimer`), which interrupts pure-Python work and the lxml calls
that return to the interpreter between elements; it needs the main thread, which is where
Spark's Python worker and the CLI run user code. Outside the main thread extraction runs
unbounded and says so once in the log.

Untrusted HTML: trafilatura parses with lxml's HTMLParser, whose defaults load nothing from
the network (no_network) and do not expand DTD entities; tests/test_security.py holds that.
"""

from __future__ import annotations

import hashlib
import logging
import signal
import threading
from collections import OrderedDict
from contextlib import contextmanager

import trafilatura

from pipeline.config import ExtractConf, ReadConf

log = logging.getLogger(__name__)
_warned = False


class ExtractTimeout(Exception):
    pass


def _on_alarm(signum, frame):  # noqa: ARG001
    raise ExtractTimeout()


@contextmanager
def time_bound(seconds: float):
    global _warned
    if threading.current_thread() is not threading.main_thread():
        if not _warned:
            log.warning("extraction outside the main thread: no per-document time bound")
            _warned = True
        yield
        return
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def extract_text(html: str, url: str, s: ExtractConf) -> str | None:
    """Main text of a page, or None when trafilatura finds none. Raises ExtractTimeout."""
    with time_bound(s.timeout_s):
        return trafilatura.extract(
            html,
            url=url or None,
            output_format="txt",
            favor_precision=s.favor_precision,
            favor_recall=s.favor_recall,
            include_comments=s.include_comments,
            include_tables=s.include_tables,
            include_images=False,
            include_links=False,
            deduplicate=s.deduplicate,
            fast=s.fast,
            with_metadata=False,
        )


def process_record(row: dict, s: ExtractConf, read: ReadConf, scope: str = "") -> dict:
    """Decode a candidate's payload and extract its text; reject it with a reason otherwise.

    Takes a read-stage row (with `payload`), returns a document row (with `text`, `charset`).
    Rows already rejected upstream pass through unchanged. A payload byte-identical to one
    this worker process has already seen in the same `scope` (one run: a mirror, a re-crawl)
    is not decoded and extracted again: its outcome is taken from the cache (see _outcome).
    """
    out = {k: v for k, v in row.items() if k not in _DROPPED}
    out.setdefault("charset", None)
    out.setdefault("text", None)
    if row.get("reject_reason") is not None:
        return out
    charset, text, rejected = _outcome(row, s, read, scope)
    out["charset"] = charset
    if rejected:
        return _reject(out, *rejected)
    out["text"] = text
    return out


# Outcome of (settings, payload fingerprint), most recent last. The text depends on the
# payload bytes, its HTTP headers and the settings only: trafilatura uses the URL for links
# and metadata, both off here. So reuse cannot change any output, whatever the partitioning.
# The cache lives for one run (`scope`): a later run in the same worker extracts afresh.
_CACHE: OrderedDict[tuple[str, bytes], tuple] = OrderedDict()
_CACHE_SIZE = 1024  # entries; texts are ~5 KB median, so a few MB per worker
_scope = [""]


def _outcome(row: dict, s: ExtractConf, read: ReadConf, scope: str) -> tuple:
    if scope != _scope[0]:
        _CACHE.clear()
        _scope[0] = scope
    h = hashlib.blake2b(row["payload"] or b"", digest_size=16)
    for header in ("transfer_encoding", "content_encoding", "content_type"):
        h.update(b"\x00" + (row.get(header) or "").encode("utf-8", "replace"))
    key = (s.model_dump_json() + read.model_dump_json(), h.digest())
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    result = _decode_and_extract(row, s, read)
    _CACHE[key] = result
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return result


def _decode_and_extract(row: dict, s: ExtractConf, read: ReadConf) -> tuple:
    """(charset, text, None) or (charset, None, (stage, reason, detail))."""
    from pipeline.warc.decode import DecodeError, decode_body, to_unicode

    try:
        body = decode_body(
            row["payload"] or b"",
            row.get("transfer_encoding"),
            row.get("content_encoding"),
            read.max_decoded_bytes,
        )
        html, codec, how = to_unicode(body, row.get("content_type"), read.max_control_share)
    except DecodeError as e:
        return None, None, ("decode", e.reason, e.detail)
    charset = f"{codec} ({how})"
    if not html.strip():
        return charset, None, ("decode", "empty_payload", "nothing left after decoding")
    try:
        text = extract_text(html, row.get("url") or "", s)
    except ExtractTimeout:
        return charset, None, ("extract", "extract_timeout", f"> {s.timeout_s:g} s")
    except RecursionError:
        return charset, None, ("extract", "extract_error", "document nested too deeply")
    except Exception as e:  # trafilatura/lxml on hostile input: ledger, never a crash
        return charset, None, ("extract", "extract_error", f"{type(e).__name__}: {e}"[:500])
    if not text or not text.strip():
        return charset, None, ("extract", "extract_empty", "")
    return charset, text, None


_DROPPED = ("payload", "transfer_encoding", "content_encoding")


def _reject(row: dict, stage: str, reason: str, detail: str) -> dict:
    row["reject_stage"] = stage
    row["reject_reason"] = reason
    row["reject_detail"] = detail
    return row
