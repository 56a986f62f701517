"""Extraction ground truth from four public benchmarks, by different authors on different pages.

- wcxb: WCXB's dev split (M. Foley): 1,495 English pages of 7 page types; the main text;
  bag-of-words F1.
- aeb: ScrapingHub's article-extraction-benchmark: 181 news pages, mostly English; the article
  body; bag-of-words F1.
- trafilatura: trafilatura's evaluation (A. Barbaresi): 990 pages, mostly German; snippets that
  must and must not be extracted; snippet F1.
- readability: Mozilla readability's test pages: 92 real pages (readerable, source >= 5 kB) in
  10+ languages; readability's expected output; bag-of-words F1.

Each benchmark favours its author's tool (WCXB's author wrote rs-trafilatura, trafilatura's
evaluation is trafilatura's, readability's expected output is readability's): a default is
judged left out of training on each in turn (bench/extract_chooser_train.py).

WCXB dev and AEB are in ../shared/data/extraction. The other two are read from the
repositories at a fixed commit (`git archive`), cloned into bench/work/repos/ by
`make extract-benchmarks` (or pointed at with EXTRACT_REPOS=DIR holding owner+name/ clones).

Bag-of-words tokens are words (`\\w+`), and single characters in Chinese and Japanese
scripts, which separate no words by spaces. Snippet F1 (trafilatura's measure): a `with`
snippet found in the output (whitespace-normalised) is a true positive, one missing a false
negative; a `without` snippet found is a false positive.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "extraction"
WORK = ROOT / "bench" / "work" / "extraction"
REPOS = {  # name -> (GitHub repository, commit, folder the pages and truth are in)
    "trafilatura": ("adbar/trafilatura", "e90b0ef5", "tests"),
    "readability": ("mozilla/readability", "ab4027a", "test/test-pages"),
}
BENCHMARKS = ("wcxb", "aeb", "trafilatura", "readability")

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")


def tokens(text: str) -> Counter:
    return Counter(TOKEN.findall(text.lower()))


def bow_f1(pred: str, gold: str) -> float:
    p, g = tokens(pred), tokens(gold)
    if not g and not p:
        return 1.0
    common = sum((p & g).values())
    if not common:
        return 0.0
    prec, rec = common / sum(p.values()), common / sum(g.values())
    return 2 * prec * rec / (prec + rec)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def snippet_counts(pred: str, with_: list[str], without: list[str]) -> tuple[int, int, int]:
    """(true positives, false negatives, false positives) of one page's snippets."""
    out = _norm(pred)
    tp = sum(1 for s in with_ if _norm(s) in out)
    fp = sum(1 for s in without if _norm(s) in out)
    return tp, len(with_) - tp, fp


def snippet_f1(pred: str, with_: list[str], without: list[str]) -> float:
    tp, fn, fp = snippet_counts(pred, with_, without)
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fn + fp)


def score(page: dict, text: str | None) -> float:
    """The page's benchmark's own measure of an extractor's output (None: nothing)."""
    if page["bench"] == "trafilatura":
        return snippet_f1(text or "", page["with"], page["without"])
    return bow_f1(text or "", page["truth"])


def repo_dir(name: str) -> Path:
    """The benchmark's files at its commit, unpacked once under bench/work/extraction/."""
    repo, commit, folder = REPOS[name]
    out = WORK / name
    if (out / ".done").exists():
        return out / folder
    base = Path(os.environ.get("EXTRACT_REPOS", ROOT / "bench" / "work" / "repos"))
    here = base / repo.replace("/", "+")
    tried = (here / "repo", here, base / repo.split("/")[1])  # a mirror, a clone, a clone
    src = next((p for p in tried if (p / "HEAD").exists() or (p / ".git").exists()), None)
    if src is None:
        raise SystemExit(
            f"{name}: no clone of {repo} under {base}; run `make extract-benchmarks` "
            f"(git clone https://github.com/{repo}) or set EXTRACT_REPOS"
        )
    out.mkdir(parents=True, exist_ok=True)
    tar = subprocess.run(["git", "-C", str(src), "archive", commit, folder],
                         check=True, capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(out)], input=tar, check=True)
    (out / ".done").write_text(commit)
    return out / folder


def _site(url: str) -> str:
    host = urlparse(url).netloc.lower()
    return host[4:] if host.startswith("www.") else host


def wcxb() -> list[dict]:
    out = []
    for gt in sorted((DATA / "wcxb_dev" / "ground-truth").glob("*.json")):
        d = json.loads(gt.read_text())
        html = DATA / "wcxb_dev" / "html" / f"{gt.stem}.html.gz"
        if html.exists() and "main_content" in d["ground_truth"]:  # 2 pages have none
            kind = d.get("_internal", {}).get("page_type", {}).get("primary", "?")
            truth = d["ground_truth"]["main_content"] or ""
            out.append({"id": f"wcxb/{gt.stem}", "html": str(html), "url": d.get("url", ""),
                        "type": kind, "truth": truth})  # fmt: skip
    return out


def aeb() -> list[dict]:
    truth = json.loads((DATA / "scrapinghub_aeb" / "ground-truth.json").read_text())
    return [{"id": f"aeb/{sha[:12]}", "html": str(DATA / "scrapinghub_aeb" / "html" /
             f"{sha}.html"), "url": item["url"], "type": "news", "truth": item["articleBody"]}
            for sha, item in sorted(truth.items())]  # fmt: skip


def trafilatura_eval() -> list[dict]:
    base = repo_dir("trafilatura")
    data = json.loads((base / "evaldata.json").read_text())
    out = []
    for url, item in sorted(data.items()):
        path = next((base / d / item["file"] for d in ("cache", "eval")
                     if (base / d / item["file"]).is_file()), None)  # fmt: skip
        if path is None:
            continue
        out.append({"id": f"trafilatura/{item['file']}", "html": str(path), "url": url,
                    "type": "mixed", "with": item["with"], "without": item["without"]})  # fmt: skip
    return out


def readability_pages() -> list[dict]:
    """The test pages whose expected output is a real article: readerable, and the source
    at least 5 kB (the others are unit tests of one HTML quirk)."""
    from lxml import html as lhtml

    base = repo_dir("readability")
    out = []
    for d in sorted(p for p in base.iterdir() if p.is_dir()):
        meta_path, src = d / "expected-metadata.json", d / "source.html"
        if not (meta_path.exists() and src.exists() and (d / "expected.html").exists()):
            continue
        meta = json.loads(meta_path.read_text())
        if not meta.get("readerable") or src.stat().st_size < 5000:
            continue
        expected = (d / "expected.html").read_text(encoding="utf-8")
        truth = lhtml.fromstring(expected).text_content() if expected.strip() else ""
        out.append({"id": f"readability/{d.name}", "html": str(src), "url": "",
                    "site": d.name.rsplit("-", 1)[0], "type": "article",
                    "lang": (meta.get("lang") or "").split("-")[0].lower(),
                    "truth": truth})  # fmt: skip
    return out


LOADERS = {"wcxb": wcxb, "aeb": aeb, "trafilatura": trafilatura_eval,
           "readability": readability_pages}  # fmt: skip


def pages(names: tuple[str, ...] = BENCHMARKS) -> list[dict]:
    out = []
    for name in names:
        for p in LOADERS[name]():
            p["bench"] = name
            p.setdefault("site", _site(p["url"]) or p["id"])
            out.append(p)
    return out


def truth_text(page: dict) -> str:
    return page.get("truth") or " ".join(page.get("with", []))


def language_groups(rows: list[dict]) -> None:
    """Each page's language group: fastText's language of its ground truth (the project's
    lid.176 model), 'en', 'de', 'other latin', 'cjk' or 'other'."""
    import fasttext

    model = fasttext.load_model(str(ROOT / "models" / "lid.176.ftz"))
    for r in rows:
        text = _norm(truth_text(r))[:2000]
        label = model.predict(text)[0][0].replace("__label__", "") if text else "?"
        r["lang"] = label
        r["lang_group"] = group_of(label)


LATIN = {"fr", "es", "it", "pt", "nl", "pl", "sv", "da", "no", "fi", "cs", "ro", "hu", "tr",
         "id", "ca", "hr", "sk", "sl", "et", "lv", "lt", "vi"}  # fmt: skip


def group_of(lang: str) -> str:
    if lang in ("en", "de"):
        return lang
    if lang in ("zh", "ja", "ko"):
        return "cjk"
    return "other latin" if lang in LATIN else "other"


def read_html(page: dict) -> bytes:
    raw = Path(page["html"]).read_bytes()
    return gzip.decompress(raw) if page["html"].endswith(".gz") else raw


def html_of(page: dict) -> str:
    """The page decoded as the pipeline decodes a payload (charset from the bytes)."""
    from curate_pipeline.document.warc.decode import decode_body, to_unicode

    body = decode_body(read_html(page), None, None, 64 << 20)
    return to_unicode(body, "text/html", 0.3)[0]
