import gzip
import zlib
from pathlib import Path

import brotli
import pytest

from curate_pipeline.document.warc.decode import (
    DecodeError,
    dechunk,
    decode_body,
    normalize_charset,
    to_unicode,
)

HTML = "<html><head><title>t</title></head><body><p>Grüße, naïve café</p></body></html>"


def test_dechunk_with_extensions_and_trailer():
    body = b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: x\r\n\r\n"
    assert dechunk(body) == b"hello, world"


def test_dechunk_rejects_non_chunked():
    with pytest.raises(ValueError):
        dechunk(b"<html>not chunked</html>")


def test_chunked_header_on_dechunked_payload_is_tolerated():
    raw = b"<html><body>stored already de-chunked</body></html>"
    assert decode_body(raw, "chunked", None, 10_000) == raw


@pytest.mark.parametrize(
    "encoding,encode",
    [
        ("gzip", lambda b: gzip.compress(b)),
        ("x-gzip", lambda b: gzip.compress(b)),
        ("deflate", lambda b: zlib.compress(b)),
        ("deflate", lambda b: zlib.compress(b)[2:-4]),  # raw deflate, as IIS sends it
        ("br", lambda b: brotli.compress(b)),
    ],
)
def test_content_encodings(encoding, encode):
    raw = HTML.encode()
    assert decode_body(encode(raw), None, encoding, 10_000) == raw


def test_chunked_then_gzip():
    raw = HTML.encode()
    z = gzip.compress(raw)
    chunked = b"%x\r\n" % len(z) + z + b"\r\n0\r\n\r\n"
    assert decode_body(chunked, "chunked", "gzip", 10_000) == raw


def test_gzip_header_on_plain_payload():
    # Common Crawl 2020+ stores payloads decoded; some crawlers keep the header.
    raw = HTML.encode()
    assert decode_body(raw, None, "gzip", 10_000) == raw


@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_bombs_are_bounded(encoding):
    big = b"\0" * 50_000_000
    bomb = gzip.compress(big) if encoding == "gzip" else brotli.compress(big)
    assert len(bomb) < 100_000
    with pytest.raises(DecodeError) as e:
        decode_body(bomb, None, encoding, 1_000_000)
    assert e.value.reason == "decompression_bomb"


def test_corrupt_encoding_is_a_decode_error():
    with pytest.raises(DecodeError) as e:
        decode_body(b"\x1f\x8b\x08\x00garbage-not-gzip" * 10, None, "gzip", 10_000)
    assert e.value.reason == "content_encoding"


def test_unknown_encoding():
    with pytest.raises(DecodeError, match="unsupported"):
        decode_body(b"\x00\x01", None, "compress", 10_000)


def test_charset_aliases():
    assert normalize_charset("GB2312") == "gb18030"
    assert normalize_charset("ISO-8859-1") == "cp1252"
    assert normalize_charset("Shift_JIS") == "cp932"
    assert normalize_charset("EUC-JP") == "euc_jp"
    assert normalize_charset("no-such-charset") is None


def test_header_charset_wins():
    body = "<p>河流如何塑造山谷</p>".encode("gb2312")
    text, codec, how = to_unicode(body, "text/html; charset=gb2312")
    assert "河流如何塑造山谷" in text and codec == "gb18030" and how == "header"


def test_meta_charset_when_header_silent():
    body = '<meta charset="windows-1251"><p>Как река формирует долину</p>'.encode("cp1251")
    text, codec, how = to_unicode(body, "text/html")
    assert "Как река формирует долину" in text and how == "meta"


def test_http_equiv_meta():
    body = (
        '<meta http-equiv="Content-Type" content="text/html; charset=EUC-JP">'
        "<p>川が谷を形作る方法について説明します。</p>"
    ).encode("euc_jp")
    text, codec, how = to_unicode(body, None)
    assert "川が谷を形作る" in text and codec == "euc_jp"


def test_lying_header_falls_through_to_detection():
    russian = "Река никогда не заканчивает работу над своей долиной. " * 20
    body = f"<html><body><p>{russian}</p></body></html>".encode("cp1251")
    text, codec, how = to_unicode(body, "text/html; charset=utf-8")
    assert "Река никогда" in text and how == "detected"


def test_latin1_header_on_utf8_bytes_is_overridden():
    text, codec, how = to_unicode(HTML.encode("utf-8"), "text/html; charset=iso-8859-1")
    assert "Grüße" in text and codec == "utf-8"


def test_utf8_bom():
    text, codec, how = to_unicode(b"\xef\xbb\xbf" + HTML.encode(), "text/html; charset=cp1252")
    assert text.startswith("<html>") and how == "bom"


# A browser keeps a declared UTF-8 and shows U+FFFD for a bad byte; it does not re-guess the
# whole page (which turned real pages into cp1250 / mac-latin2 mojibake).
_UTF8_PAGE = "<html><body><p>Grüße aus Köln — «Флюс» 川が谷を形作る, déjà vu.</p>" * 20


@pytest.mark.parametrize("where", ["start", "middle", "end", "cut_sequence"])
@pytest.mark.parametrize("declared", ["header", "meta"])
def test_declared_utf8_with_a_bad_byte_stays_utf8(where, declared):
    raw = _UTF8_PAGE.encode("utf-8")
    if where == "start":
        raw = b"\xff" + raw
    elif where == "middle":
        raw = raw[: len(raw) // 2] + b"\xfe" + raw[len(raw) // 2 :]
    elif where == "end":
        raw = raw + b"\xff</body></html>"
    else:  # a three-byte character cut after its first two bytes, at the end of the buffer
        raw = raw + "川".encode()[:2]
    if declared == "meta":
        raw = b'<meta charset="utf-8">' + raw
    ctype = "text/html; charset=utf-8" if declared == "header" else "text/html"
    text, codec, how = to_unicode(raw, ctype)
    assert codec == "utf-8" and how == declared
    assert "Grüße aus Köln — «Флюс» 川が谷を形作る, déjà vu." in text
    assert text.count("\ufffd") == 1


def test_latin1_page_declared_utf8_falls_back_to_detection():
    latin = "<html><body><p>Les élèves ont été reçus à l'école, où ils ont déjeuné.</p>" * 20
    text, codec, how = to_unicode(latin.encode("cp1252"), "text/html; charset=utf-8")
    assert how == "detected" and "ont été reçus" in text and "\ufffd" not in text


def test_only_text_encodings_are_charsets():
    """Python codecs that are no page charset (bytes-to-bytes, or raising on use) are
    ignored, and the page decodes as if it declared nothing."""
    from curate_pipeline.document.warc.decode import normalize_charset, to_unicode

    for label in ["undefined", "base64", "hex", "zip", "rot13", "bz2", "uu", "punycode", "idna"]:
        assert normalize_charset(label) is None, label
        text, codec, how = to_unicode(b"<p>caf\xc3\xa9</p>", f"text/html; charset={label}")
        assert (text, codec, how) == ("<p>café</p>", "utf-8", "utf-8"), label
    assert normalize_charset("windows-1251") == "cp1251"


# The Encoding Standard's names to the codec each is decoded with, written from the standard's
# text (its decoders): where its decoder is a superset of Python's codec of the same name,
# Python's superset codec (GBK decodes as gb18030, Shift_JIS as windows-31j, EUC-KR as
# windows-949, Big5 with HKSCS).
STANDARD_CODECS = {
    "utf-8": "utf-8", "ibm866": "cp866", "iso-8859-8-i": "iso8859-8", "koi8-r": "koi8-r",
    "koi8-u": "koi8-u", "macintosh": "mac-roman", "windows-874": "cp874",
    "x-mac-cyrillic": "mac-cyrillic", "gbk": "gb18030", "gb18030": "gb18030",
    "big5": "big5hkscs", "euc-jp": "euc_jp", "iso-2022-jp": "iso2022_jp", "shift_jis": "cp932",
    "euc-kr": "cp949", "utf-16be": "utf-16-be", "utf-16le": "utf-16-le",
    "x-user-defined": "x-user-defined",
    **{f"iso-8859-{n}": f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)},
    **{f"windows-125{n}": f"cp125{n}" for n in range(9)},
}  # fmt: skip


def test_every_label_of_the_encoding_standard_resolves_as_it_says():
    """Issue 64: every label of the WHATWG Encoding Standard (its encodings.json, whatwg/encoding
    @4a66751, tests/data/whatwg_encodings.json), in any case and padded with ASCII
    whitespace, resolves to its encoding's decoder; the replacement labels are refused."""
    import codecs
    import json

    from curate_pipeline.document.warc.decode import REPLACEMENT

    table = json.loads((Path(__file__).parent / "data" / "whatwg_encodings.json").read_text())
    seen = 0
    for group in table:
        for enc in group["encodings"]:
            want = REPLACEMENT if enc["name"] == "replacement" else codecs.lookup(
                STANDARD_CODECS[enc["name"]]).name  # fmt: skip
            for label in enc["labels"]:
                for given in (label, label.upper(), f" {label}\t"):
                    assert normalize_charset(given) == want, (given, enc["name"])
                seen += 1
    assert seen == 217
    # where the hand-written table went wrong before
    assert (
        to_unicode(b"<p>\x93quoted\x94</p>", "text/html; charset=l1")[0]
        == "<p>\u201cquoted\u201d</p>"
    )
    assert to_unicode(b"<p>\xa4\xa2</p>", "text/html; charset=x-euc-jp")[0] == "<p>\u3042</p>"
    assert to_unicode(b"<p>\x80</p>", "text/html; charset=x-user-defined")[0] == "<p>\uf780</p>"
    with pytest.raises(DecodeError) as e:
        to_unicode(b"<p>~{<:Ky2;S{#,~}</p>", "text/html; charset=hz-gb-2312")
    assert e.value.reason == "replacement_charset"


def test_zstd_content_encoding_under_the_bomb_bound():
    """Issue 64: `Content-Encoding: zstd` (RFC 9659) decodes; a bomb stops at max_out; a frame
    asking for a window past the RFC's 8 MiB is refused, not allocated."""
    import zstandard

    page = b"<html><body>" + b"<p>zstd-encoded text</p>" * 200 + b"</body></html>"
    assert decode_body(zstandard.ZstdCompressor().compress(page), None, "zstd", 1 << 20) == page
    bomb = zstandard.ZstdCompressor(level=3).compress(b"\0" * (8 << 20))
    with pytest.raises(DecodeError) as e:
        decode_body(bomb, None, "zstd", 1 << 20)
    assert e.value.reason == "decompression_bomb"
    wide = zstandard.ZstdCompressor(
        compression_params=zstandard.ZstdCompressionParameters.from_level(19, window_log=25)
    ).compress(bytes(range(256)) * 200_000)
    with pytest.raises(DecodeError) as e:
        decode_body(wide, None, "zstd", 1 << 30)
    assert e.value.reason == "content_encoding"
