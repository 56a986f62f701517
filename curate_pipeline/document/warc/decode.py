"""HTTP payload decoding: transfer encoding, content encoding, then charset to Unicode.

Pure functions over bytes. Every decompression is bounded (`max_out`), so a gzip or brotli
bomb costs at most that many bytes of memory and ends as a `DecodeError`, never an OOM.
"""

from __future__ import annotations

import codecs
import re
import zlib

import brotli
from charset_normalizer import from_bytes


class DecodeError(ValueError):
    """A payload that cannot be decoded; `reason` is the ledger reason."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def dechunk(data: bytes) -> bytes:
    """Undo HTTP/1.1 chunked transfer encoding; raises ValueError when it is not chunked."""
    out = bytearray()
    pos = 0
    n = len(data)
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            eol = data.find(b"\n", pos)
            if eol < 0:
                raise ValueError("no chunk-size line")
            nl = 1
        else:
            nl = 2
        size_field = data[pos:eol].split(b";", 1)[0].strip()
        size = int(size_field, 16)  # ValueError when not hex
        pos = eol + nl
        if size == 0:
            return bytes(out)
        if pos + size > n:
            # Truncated last chunk: keep what is there (a crawler cut the record short).
            out += data[pos:]
            return bytes(out)
        out += data[pos : pos + size]
        pos += size
        if data[pos : pos + 2] == b"\r\n":
            pos += 2
        elif data[pos : pos + 1] == b"\n":
            pos += 1


def _zlib_bounded(data: bytes, wbits: int, max_out: int) -> bytes:
    out = bytearray()
    d = zlib.decompressobj(wbits)
    buf = data
    while buf:
        chunk = d.decompress(buf, max_out + 1 - len(out))
        out += chunk
        if len(out) > max_out:
            raise DecodeError("decompression_bomb", f"decoded payload exceeds {max_out} bytes")
        if d.eof:
            rest = d.unused_data
            # Concatenated gzip members are legal.
            if wbits & 16 and rest[:2] == b"\x1f\x8b":
                d = zlib.decompressobj(wbits)
                buf = rest
                continue
            break
        buf = d.unconsumed_tail
        if not chunk and not buf:
            break
    return bytes(out)


def _brotli_bounded(data: bytes, max_out: int) -> bytes:
    d = brotli.Decompressor()
    out = bytearray(d.process(data, output_buffer_limit=max_out + 1))
    while len(out) <= max_out and not d.is_finished() and not d.can_accept_more_data():
        out += d.process(b"", output_buffer_limit=max_out + 1 - len(out))
    if len(out) > max_out:
        raise DecodeError("decompression_bomb", f"decoded payload exceeds {max_out} bytes")
    return bytes(out)


# RFC 9659: a zstd Content-Encoding uses a window of at most 8 MiB; a larger one is refused
# rather than allocated (a frame can ask for gigabytes).
ZSTD_MAX_WINDOW = 8 << 20


def _zstd_bounded(data: bytes, max_out: int) -> bytes:
    import io

    import zstandard

    dctx = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
    out = bytearray()
    with dctx.stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
        while len(out) <= max_out:
            chunk = reader.read(min(1 << 20, max_out + 1 - len(out)))
            if not chunk:
                break
            out += chunk
    if len(out) > max_out:
        raise DecodeError("decompression_bomb", f"decoded payload exceeds {max_out} bytes")
    return bytes(out)


def decompress(data: bytes, encoding: str, max_out: int) -> bytes:
    """Undo one `Content-Encoding`. Stored-already-decoded payloads come back unchanged."""
    enc = encoding.strip().lower()
    if enc in ("", "identity", "none"):
        return data
    try:
        if enc in ("gzip", "x-gzip"):
            if data[:2] != b"\x1f\x8b":
                return data  # the crawler stored it decoded but kept the header
            return _zlib_bounded(data, 16 + zlib.MAX_WBITS, max_out)
        if enc == "deflate":
            try:
                return _zlib_bounded(data, zlib.MAX_WBITS, max_out)  # zlib-wrapped (RFC 9110)
            except zlib.error:
                return _zlib_bounded(data, -zlib.MAX_WBITS, max_out)  # raw deflate, as IIS sends
        if enc == "br":
            return _brotli_bounded(data, max_out)
        if enc == "zstd":
            return _zstd_bounded(data, max_out)
    except (zlib.error, brotli.error, _zstd_error()) as e:
        if _looks_like_markup(data):
            return data  # header says encoded, bytes say otherwise
        raise DecodeError("content_encoding", f"{enc}: {e}") from e
    raise DecodeError("content_encoding", f"unsupported Content-Encoding {encoding!r}")


def _zstd_error() -> type[Exception]:
    import zstandard

    return zstandard.ZstdError


def _looks_like_markup(data: bytes) -> bool:
    head = data[:512].lstrip().lower()
    return head.startswith((b"<", b"\xef\xbb\xbf<"))


def decode_body(
    raw: bytes, transfer_encoding: str | None, content_encoding: str | None, max_out: int
) -> bytes:
    """Bytes on the wire (as stored in the WARC) to the entity body."""
    data = raw
    if transfer_encoding and "chunked" in transfer_encoding.lower():
        try:
            data = dechunk(data)
        except ValueError:
            pass  # stored de-chunked with the header left in: use as is (warcio does the same)
    if content_encoding:
        # Several encodings apply in the order listed; undo them in reverse.
        for enc in reversed([e for e in content_encoding.split(",") if e.strip()]):
            data = decompress(data, enc, max_out)
    if len(data) > max_out:
        raise DecodeError("too_large", f"decoded payload {len(data)} > {max_out} bytes")
    return data


# ---------------------------------------------------------------- charsets

# Labels resolve by the WHATWG Encoding Standard's table (webencodings: every label browsers
# and resiliparse know, `l1` and `cp819` to windows-1252, `windows-874`, `x-euc-jp`,
# `ks_c_5601-1989`...). Where the standard's decoder is a superset of Python's codec of that
# name, the superset codec: GBK decodes as gb18030 (its decoder is gb18030's), Shift_JIS as
# cp932 (windows-31j), EUC-KR as cp949 (windows-949), Big5 as big5hkscs (the standard's Big5
# holds HKSCS).
_SUPERSET = {"gbk": "gb18030", "gb18030": "gb18030", "shift_jis": "cp932", "euc-kr": "cp949",
             "big5": "big5hkscs"}  # fmt: skip
# Labels the standard maps to the replacement encoding (hz-gb-2312, iso-2022-kr, ...): a
# browser shows the whole page as one U+FFFD (decoding them invites script injection).
REPLACEMENT = "replacement"
# Python codec names a detector gives, to the same superset codecs.
_DETECTED_SUPERSET = {"gb2312": "gb18030", "gbk": "gb18030", "euc_kr": "cp949",
                      "shift_jis": "cp932", "big5": "big5hkscs", "latin_1": "cp1252",
                      "iso8859-1": "cp1252", "ascii": "cp1252"}  # fmt: skip


def _x_user_defined(name: str):
    """The standard's x-user-defined (bytes 0x80-0xFF to U+F780-U+F7FF), which Python lacks."""
    if name.replace("_", "-") == "x-user-defined":
        import webencodings

        return webencodings.lookup("x-user-defined").codec_info
    return None


codecs.register(_x_user_defined)

# Text codecs Python has that are no web charset: they raise or mangle on page bytes.
_NOT_CHARSETS = {"undefined", "idna", "punycode", "unicode-escape", "raw-unicode-escape",
                 "escape_codec", "unicode_escape", "raw_unicode_escape", "mbcs", "oem"}  # fmt: skip

_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.I)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.I)


def normalize_charset(label: str | None) -> str | None:
    """A declared charset label to the Python codec the WHATWG Encoding Standard decodes it
    with (a superset codec where that is the standard's decoder); REPLACEMENT for the labels
    the standard maps to the replacement encoding; None for a label it does not know (the
    standard then ignores the declaration: detection decides)."""
    import webencodings

    if not label:
        return None
    enc = webencodings.lookup(label.strip().strip("\"'"))  # strips ASCII whitespace, any case
    if enc is None:
        return None
    if enc.name == REPLACEMENT:
        return REPLACEMENT
    return codecs.lookup(_SUPERSET.get(enc.name) or enc.codec_info.name).name


def detected_codec(name: str) -> str | None:
    """A detector's codec name (Python's) to the codec used: a WHATWG label's, else Python's
    own text codec of that name, made the superset codec where there is one."""
    found = normalize_charset(name)
    if found and found != REPLACEMENT:
        return found
    try:
        info = codecs.lookup(name)
    except LookupError:
        return None
    # Only text encodings: Python also has base64, hex, zip, rot13... (bytes to bytes) and
    # `undefined`, which raises on any use; none of them is a page's charset.
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_CHARSETS:
        return None
    return codecs.lookup(_DETECTED_SUPERSET.get(info.name, info.name)).name


def charset_from_content_type(content_type: str | None) -> str | None:
    if not content_type:
        return None
    m = _HEADER_CHARSET.search(content_type)
    return m.group(1) if m else None


def charset_from_meta(body: bytes, scan_bytes: int = 4096) -> str | None:
    """`<meta charset>` or `<meta http-equiv content="...charset=">` in the document head."""
    m = _META_CHARSET.search(body[:scan_bytes])
    return m.group(1).decode("ascii", "replace") if m else None


_SINGLE_BYTE = {"cp1252", "iso8859-1", "iso8859-15", "cp1250", "cp1254", "latin-1"}


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


# C0 control bytes no text page holds (tab, newlines, form feed and ESC, which ISO-2022
# uses, are allowed). Random binary data has ~10% of them; HTML has none.
_CONTROL = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
MAX_CONTROL_SHARE = 0.02


def control_share(body: bytes, sample: int = 1 << 16) -> float:
    head = body[:sample]
    return (len(head) - len(head.translate(None, _CONTROL))) / len(head) if head else 0.0


_UTF8_SEQUENCE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
    rb"|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)
_HIGH = bytes(range(0x80, 0x100))


def decode_declared(body: bytes, codec: str) -> str | None:
    """The body in its declared encoding, a browser's way: invalid bytes become U+FFFD (a
    multi-byte character cut at a buffer boundary is common) unless the bytes clearly are not
    that encoding: for UTF-8, no valid multi-byte sequence or more invalid bytes than valid
    sequences (a Latin-1 page declared UTF-8); for other codecs, invalid bytes in more than
    one in twenty non-ASCII bytes. None then."""
    try:
        return body.decode(codec)
    except UnicodeDecodeError:
        pass
    except (LookupError, UnicodeError, ValueError):  # a codec that is no charset
        return None
    high = len(body) - len(body.translate(None, _HIGH))
    if codec in ("utf-8", "utf_8"):
        valid = _UTF8_SEQUENCE.findall(body)
        invalid = high - sum(len(v) for v in valid)
        return body.decode("utf-8", errors="replace") if len(valid) >= max(1, invalid) else None
    text = body.decode(codec, errors="replace")
    return text if text.count("\ufffd") * 20 <= high else None


def to_unicode(
    body: bytes, content_type: str | None, max_control_share: float = MAX_CONTROL_SHARE
) -> tuple[str, str, str]:
    """Decode an HTML body. Returns (text, codec, how) with how in header/bom/meta/detected/utf-8.

    The order is a browser's: byte-order mark, HTTP header, `<meta>`, then detection. A declared
    charset that fails to decode strictly is not trusted; detection decides instead.
    """
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return body.decode(codec, errors="replace"), codec, "bom"
    share = control_share(body)
    if share > max_control_share:
        raise DecodeError(
            "binary_payload", f"{share:.0%} control bytes in the first 64 KB: not a text page"
        )
    for how, label in (
        ("header", charset_from_content_type(content_type)),
        ("meta", charset_from_meta(body)),
    ):
        codec = normalize_charset(label)
        if codec is None:
            continue
        if codec == REPLACEMENT:
            raise DecodeError("replacement_charset", f"the {how} declares {label}, which the "
                              "WHATWG Encoding Standard maps to the replacement encoding: "
                              "browsers show no text of it")  # fmt: skip
        text = decode_declared(body, codec)
        if text is None:
            continue  # the bytes clearly are not this encoding: the declaration lies
        if codec in _SINGLE_BYTE and not body.isascii() and _is_utf8(body):
            # A Latin code page decodes anything; valid multi-byte UTF-8 is no accident.
            return body.decode("utf-8"), "utf-8", f"{how}-overridden"
        return text, codec, how
    try:
        return body.decode("utf-8"), "utf-8", "utf-8"
    except UnicodeDecodeError:
        pass
    best = from_bytes(body[:200_000]).best()
    if best is not None and best.encoding:
        codec = detected_codec(best.encoding) or best.encoding
        return body.decode(codec, errors="replace"), codec, "detected"
    return body.decode("utf-8", errors="replace"), "utf-8", "replace"
