"""Main-text extraction, bounded in CPU time per document.

`extract.strategy` single runs one backend (trafilatura or resiliparse); fast, balanced and
best run a few extractors and keep one output by a rule chosen on four benchmarks
(curate_pipeline.document.extract_strategy), all under one bound per page.

The bound: a CPU-time timer (ITIMER_PROF: this process's user + system time, so a busy machine
or a noisy neighbour does not turn pages into timeouts) and a wall-clock backstop (ITIMER_REAL,
for a page stuck outside the CPU). Their signal handler raises ExtractTimeout, again every few
milliseconds until it escapes, and it also notes that it fired. trafilatura catches broad
exceptions inside its own code and can turn a swallowed timeout into a shorter text, so the
verdict is taken from the note, not from the exception: a page whose timer fired is
`extract:extract_timeout` whatever the extractor returned. A page's outcome is the text of an
unbounded extraction or a timeout, never a text cut by the bound.

The timers need the main thread, which is where Spark's Python worker and the CLI run user
code; outside it extraction runs unbounded and says so once in the log.

Untrusted HTML: trafilatura parses with lxml's HTMLParser, whose defaults load nothing from
the network (no_network) and do not expand DTD entities; tests/test_security.py holds that.
"""

from __future__ import annotations

import hashlib
import logging
import signal
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import contextmanager

import trafilatura

from curate_pipeline.config import ExtractConf, ReadConf
from curate_pipeline.document.extract_timeout import ExtractTimeout
from curate_pipeline.document.text_inputs import TEXT_TYPES
from curate_pipeline.document.verdict import ENVIRONMENT

log = logging.getLogger(__name__)
_warned = False
_REPEAT_S = 0.005  # after the first signal, again this often until the exception escapes


class _Bound:
    """The state the signal handlers read: installed once per process and never restored, so
    a signal that arrives after a bound ends finds a handler that ignores it."""

    armed = False
    fired: str | None = None
    installed = False


def _on_signal(signum, frame):  # noqa: ARG001
    if not _Bound.armed:
        return
    if _Bound.fired is None:
        _Bound.fired = "cpu" if signum == signal.SIGPROF else "wall"
    raise ExtractTimeout(_Bound.fired)


def _disarm() -> None:
    _Bound.armed = False
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.setitimer(signal.ITIMER_REAL, 0)


@contextmanager
def time_bound(cpu_s: float, wall_s: float):
    """Raise ExtractTimeout (`.clock` "cpu" or "wall") if the block outlives either bound, also
    when the code inside caught the exception the timer raised."""
    global _warned
    if threading.current_thread() is not threading.main_thread():
        if not _warned:
            log.warning("extraction outside the main thread: no per-document time bound")
            _warned = True
        yield
        return
    if not _Bound.installed:
        signal.signal(signal.SIGPROF, _on_signal)
        signal.signal(signal.SIGALRM, _on_signal)
        _Bound.installed = True
    _Bound.fired = None
    _Bound.armed = True
    signal.setitimer(signal.ITIMER_PROF, cpu_s, _REPEAT_S)
    signal.setitimer(signal.ITIMER_REAL, wall_s, _REPEAT_S)
    try:
        yield
    except ExtractTimeout:
        raise ExtractTimeout(_Bound.fired or "cpu") from None
    finally:
        _disarm()
    if _Bound.fired is not None:  # fired, and swallowed by the code inside
        raise ExtractTimeout(_Bound.fired)


def _trafilatura(html: str, url: str, s: ExtractConf) -> str | None:
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


def _resiliparse(html: str, url: str, s: ExtractConf) -> str | None:  # noqa: ARG001
    # DCLM's extractor: resiliparse's main-content heuristics, block formatting kept
    from curate_pipeline.document.extractors import resiliparse_text

    return resiliparse_text(html, main=True, comments=s.include_comments)


BACKENDS = {"trafilatura": _trafilatura, "resiliparse": _resiliparse}


def backend_version(name: str) -> str:
    from importlib import metadata

    return f"{name} {metadata.version(name)}"


def extractor_provenance(s: ExtractConf) -> str:
    """What extracts a run's pages, for its manifest: the backend and its version, or the
    strategy's rule and its libraries' versions."""
    if s.strategy == "single":
        return backend_version(s.backend)
    rule = s.strategies[s.strategy]
    packages = {"readability": "readability-lxml", "rs_trafilatura": "rs-trafilatura"}
    names = sorted({packages.get(n, n.split("_")[0]) for n in rule.runs})
    when = f", below {rule.below}" if rule.below else ""
    return (f"{s.strategy}: {' > '.join(rule.runs)} (longer {rule.longer:g}{when}); "
            + ", ".join(backend_version(n) for n in names))  # fmt: skip


class ExtractFailed(Exception):
    """Every extractor of a strategy failed on the page (none timed out): the reasons."""


class StrategyDefect(RuntimeError):
    """The strategy's own code (the rule) raised: a defect, not a verdict on the page, so
    the task fails (extractors' failures are caught per extractor)."""


def extract_text(html: str, url: str, s: ExtractConf) -> tuple[str | None, str]:
    """(main text of a page or None when no extractor finds any, the extractor it came from).

    Raises ExtractTimeout when the bound ran out before any text was found, ExtractFailed
    when every extractor of a strategy raised."""
    if s.strategy == "single":
        with time_bound(s.timeout_s, s.wall_timeout_s):
            return BACKENDS[s.backend](html, url, s), s.backend
    from curate_pipeline.document.extract_strategy import run_strategy

    try:
        rule = s.strategies[s.strategy]
        out = run_strategy(
            html, url, rule.runs, rule.longer, time_bound, s.timeout_s, s.wall_timeout_s,
            rule.below,
        )  # fmt: skip
    except (ExtractTimeout, *ENVIRONMENT, OSError):
        raise
    except Exception as e:
        raise StrategyDefect(f"extract.strategy {s.strategy}: {type(e).__name__}: {e}") from e
    failed = "; ".join(f"{n}: {why}" for n, why in out.failures.items())
    if out.text is None:
        if out.timed_out:
            raise ExtractTimeout(out.clock)
        if out.failures and not out.ran:
            raise ExtractFailed(failed)
        return None, s.strategy
    label = f"{s.strategy}/{out.chosen}"
    return out.text, label + (f" ({failed})" if failed else "")


# A check of the decoded page before extraction: (stage, reason, detail, fields to set on the
# row) to drop it, or None.
Screen = Callable[[str], tuple[str, str, str, dict] | None]


def process_record(
    row: dict, s: ExtractConf, read: ReadConf, scope: str = "", screen: Screen | None = None
) -> dict:
    """Decode a candidate's payload and extract its text; reject it with a reason otherwise.

    Takes a read-stage row (with `payload`), returns a document row (with `text`, `charset`).
    Rows already rejected upstream pass through unchanged. A payload byte-identical to one
    this worker process has already seen in the same `scope` (one run: a mirror, a re-crawl)
    is not decoded and extracted again: its outcome is taken from the cache (see _outcome).
    """
    out = {k: v for k, v in row.items() if k not in _DROPPED}
    out.setdefault("charset", None)
    out.setdefault("extractor", None)
    out.setdefault("text", None)
    if row.get("reject_reason") is not None:
        return out
    if row.get("warc_type") in TEXT_TYPES:  # text already (WET, JSONL, Parquet): no extraction
        return _text_input(row, out)
    charset, text, rejected = _outcome(row, s, read, scope, screen)
    out["charset"] = charset
    if rejected:
        return _reject(out, *rejected)
    out["text"], out["extractor"] = text
    return out


# Outcome of (settings, payload fingerprint), most recent last. The text depends on the
# payload bytes, its HTTP headers and the settings only: trafilatura uses the URL for links
# and metadata, both off here. So reuse cannot change any output, whatever the partitioning.
# The cache lives for one run (`scope`): a later run in the same worker extracts afresh.
_CACHE: OrderedDict[tuple[str, bytes], tuple] = OrderedDict()
_CACHE_SIZE = 1024  # entries; texts are ~5 KB median, so a few MB per worker
_scope = [""]


def _outcome(row: dict, s: ExtractConf, read: ReadConf, scope: str, screen: Screen | None) -> tuple:
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
    result = _decode_and_extract(row, s, read, screen)
    _CACHE[key] = result
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return result


def _decode_and_extract(row: dict, s: ExtractConf, read: ReadConf, screen: Screen | None) -> tuple:
    """(charset, (text, extractor), None) or (charset, None, (stage, reason, detail))."""
    from curate_pipeline.document.warc.decode import DecodeError, decode_body, to_unicode

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
    if screen is not None:
        try:
            dropped = screen(html)
        except ENVIRONMENT:
            raise  # the model is missing where this runs: the task fails, not the page
        except Exception:  # a view that fails decides nothing: the page is extracted
            dropped = None
        if dropped:
            return charset, None, dropped
    try:
        text, extractor = extract_text(html, row.get("url") or "", s)
    except ExtractFailed as e:
        return charset, None, ("extract", "extract_error", f"every extractor failed: {e}"[:500])
    except ExtractTimeout as e:
        bound = f"> {s.timeout_s:g} s CPU" if e.clock == "cpu" else f"> {s.wall_timeout_s:g} s"
        return charset, None, ("extract", "extract_timeout", bound)
    except RecursionError:
        return charset, None, ("extract", "extract_error", "document nested too deeply")
    except StrategyDefect:
        raise
    except ENVIRONMENT:
        raise
    except Exception as e:  # trafilatura/lxml on hostile input: ledger, never a crash
        return charset, None, ("extract", "extract_error", f"{type(e).__name__}: {e}"[:500])
    if not text or not text.strip():
        return charset, None, ("extract", "extract_empty", "")
    return charset, (text, extractor), None


_DROPPED = ("payload", "transfer_encoding", "content_encoding")


def _text_input(row: dict, out: dict) -> dict:
    """A text input's row: its payload is UTF-8 text (WET conversion records are UTF-8 by
    Common Crawl's spec; JSONL/Parquet texts were encoded so by the reader)."""
    out["charset"] = "utf-8 (text input)"
    out["extractor"] = f"none ({row['warc_type']} record)"
    text = (row["payload"] or b"").decode("utf-8", "replace")
    if not text.strip():
        return _reject(out, "extract", "extract_empty", "")
    out["text"] = text
    return out


def _reject(row: dict, stage: str, reason: str, detail: str, fields: dict | None = None) -> dict:
    row.update(fields or {})
    row["reject_stage"] = stage
    row["reject_reason"] = reason
    row["reject_detail"] = detail
    return row
