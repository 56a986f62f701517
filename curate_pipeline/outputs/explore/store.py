"""Queries over a run's output for the explorer: DuckDB over the output's Parquet files.

The files are opened as Arrow datasets on the output's own filesystem (a local folder or an
object store, through `Location.fs()`), so DuckDB needs no extension or credentials of its
own, and scans only the columns and row groups a query needs. Nothing is loaded whole: every
list is a page (LIMIT/OFFSET, in crawl order), and a document is looked up by its crawl
position, which names its chunk.

- documents: `_stages/documents/chunk-*/` (every record read, its text, the per-document
  verdicts), only the files each chunk's marker lists;
- kept: the current version's `data/` (source, metadata with the scores), the files its
  manifest lists;
- ledger: its `rejected/` (every drop with its stage, reason and detail);
- near: `_stages/near_dedup/` (each row's near-duplicate cluster), where the stage ran.
A record's verdict is `kept` where data/ holds it, else its ledger row's stage and reason.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds

from curate_pipeline.location import Location
from curate_pipeline.markers import listed_files, read_marker
from curate_pipeline.outputs.explore.checks import check_rows
from curate_pipeline.outputs.publish.versions import listed, published_dir

# signatures: numbers no reader can use
_NOT_SHOWN = ("minhash", "bands")
PAGE_MAX = 200  # rows a request may ask for
SNIPPET_CHARS = 240


@dataclass
class Filters:
    """What the document browser narrows to; every field optional."""

    verdict: str = ""  # "kept", a stage ("rules"), or "stage:reason"
    lang: str = ""
    source: str = ""
    url: str = ""  # a substring of the URL
    text: str = ""  # a substring of the text (case-insensitive)

    def where(self) -> tuple[str, list[Any]]:
        parts, args = [], []
        if self.verdict == "kept":
            parts.append("k.crawl_pos IS NOT NULL")
        elif self.verdict == "rejected":
            parts.append("k.crawl_pos IS NULL")
        elif ":" in self.verdict:
            stage, reason = self.verdict.split(":", 1)
            parts.append("l.stage = ? AND l.reason = ?")
            args += [stage, reason]
        elif self.verdict:
            parts.append("l.stage = ?")
            args.append(self.verdict)
        if self.lang:
            parts.append("coalesce(k.lang, d.lang) = ?")
            args.append(self.lang)
        if self.source:
            parts.append("k.source = ?")
            args.append(self.source)
        if self.url:
            parts.append("contains(lower(d.url), lower(?))")
            args.append(self.url)
        if self.text:
            parts.append("contains(lower(d.text), lower(?))")
            args.append(self.text)
        return (" AND ".join(parts) or "TRUE"), args


@dataclass
class OutputStore:
    """One output's tables, registered once on one DuckDB connection (queries serialized)."""

    out: Location
    manifest: dict = field(default_factory=dict)
    version: Location | None = None  # the version folder the tables are of
    con: Any = None
    has_near: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, out: str | Location) -> OutputStore:
        store = cls(Location.of(out))
        store.refresh()
        return store

    def refresh(self) -> None:
        """Read the manifest and register the files it and the markers list (again, after a
        new run into the output)."""
        version = published_dir(self.out)  # the current version, read at this moment
        manifest = json.loads((version / "manifest.json").read_text())
        con = duckdb.connect()
        docs = []
        for c in manifest.get("chunks", []):
            chunk = self.out / "_stages" / "documents" / c["name"]
            marker = read_marker(chunk)
            if marker is not None:
                docs += listed_files(chunk, marker)
        kept = listed(version, manifest, "data")
        ledger = listed(version, manifest, "rejected")
        con.register("documents", _dataset(docs, "documents"))
        con.register("kept_raw", _dataset(kept, "kept"))
        con.register("ledger", _dataset(ledger, "ledger"))
        con.execute("CREATE VIEW kept AS SELECT id, url, source, lang, "
                    "metadata.crawl_pos AS crawl_pos, metadata AS meta FROM kept_raw")  # fmt: skip
        near_dir = self.out / "_stages" / "near_dedup"
        near = read_marker(near_dir)
        has_near = near is not None and bool(near["files"])
        if has_near:
            con.register("near", _dataset(listed_files(near_dir, near), "near"))
        with self.lock:
            old, self.con = self.con, con
            self.manifest, self.has_near, self.version = manifest, has_near, version
        if old is not None:
            old.close()

    def _query(self, sql: str, args: list[Any] | None = None) -> list[dict]:
        # one connection (the Arrow datasets are registered on it), one query at a time: a
        # page of rows takes milliseconds, and a browser asks for one at a time
        with self.lock:
            res = self.con.execute(sql, args or [])
            names = [d[0] for d in res.description]
            return [dict(zip(names, row, strict=True)) for row in res.fetchall()]

    def documents(self, f: Filters, page: int = 0, size: int = 50) -> dict:
        """A page of records in crawl order: id, URL, verdict, language, source, a snippet."""
        size = max(1, min(int(size), PAGE_MAX))
        page = max(0, int(page))
        where, args = f.where()
        joined = (
            "FROM documents d LEFT JOIN kept k ON k.crawl_pos = d.crawl_pos "
            "LEFT JOIN ledger l ON l.crawl_pos = d.crawl_pos"
        )
        total = self._query(f"SELECT count(*) AS n {joined} WHERE {where}", args)[0]["n"]
        rows = self._query(
            "SELECT d.crawl_pos, coalesce(k.id, d.doc_id) AS id, d.url, "
            "coalesce(k.lang, d.lang) AS lang, k.source, "
            "CASE WHEN k.crawl_pos IS NOT NULL THEN 'kept' ELSE l.stage || ':' || l.reason END "
            "AS verdict, l.detail, length(d.text) AS chars, "
            f"left(d.text, {SNIPPET_CHARS}) AS snippet {joined} WHERE {where} "
            "ORDER BY d.crawl_pos LIMIT ? OFFSET ?",
            [*args, size, page * size],
        )
        return {"total": total, "page": page, "size": size, "rows": rows}

    def document(self, crawl_pos: int) -> dict | None:
        """One record whole: its text, verdict, scores, cluster and where it was read."""
        found = self._query("SELECT * EXCLUDE (text) , text FROM documents WHERE crawl_pos = ?",
                            [int(crawl_pos)])  # fmt: skip
        if not found:
            return None
        doc = _plain({k: v for k, v in found[0].items() if k not in _NOT_SHOWN})
        kept = self._query("SELECT id, source, lang, meta FROM kept WHERE crawl_pos = ?",
                           [int(crawl_pos)])  # fmt: skip
        ledger = self._query("SELECT stage, reason, detail FROM ledger WHERE crawl_pos = ?",
                             [int(crawl_pos)])  # fmt: skip
        doc["verdict"] = "kept" if kept else (
            f"{ledger[0]['stage']}:{ledger[0]['reason']}" if ledger else "unknown")  # fmt: skip
        doc["ledger"] = ledger[0] if ledger else None
        doc["kept"] = _plain(kept[0]) if kept else None
        doc["cluster"] = self.cluster_of(int(crawl_pos))
        try:  # each rule's value, limit and verdict, and the scores against their thresholds
            doc["checks"] = check_rows(doc, self.manifest.get("config", {}))
        except ValueError:  # a manifest of another version's config: the raw values only
            doc["checks"] = []
        return doc

    def cluster_of(self, crawl_pos: int) -> dict | None:
        if not self.has_near:
            return None
        row = self._query("SELECT dup_cluster, dup_cluster_size FROM near WHERE crawl_pos = ?",
                          [crawl_pos])  # fmt: skip
        if not row or not row[0]["dup_cluster"] or (row[0]["dup_cluster_size"] or 1) < 2:
            return None
        return self.cluster(row[0]["dup_cluster"])

    def clusters(self, page: int = 0, size: int = 20) -> dict:
        """Near-duplicate clusters of two or more, largest first."""
        if not self.has_near:
            return {"total": 0, "page": 0, "size": size, "rows": []}
        size = max(1, min(int(size), PAGE_MAX))
        page = max(0, int(page))
        base = "FROM near WHERE dup_cluster IS NOT NULL GROUP BY dup_cluster HAVING count(*) > 1"
        total = self._query(f"SELECT count(*) AS n FROM (SELECT dup_cluster {base})")[0]["n"]
        rows = self._query(
            f"SELECT dup_cluster AS cluster, count(*) AS members, min(url) AS example {base} "
            "ORDER BY members DESC, cluster LIMIT ? OFFSET ?",
            [size, page * size],
        )
        return {"total": total, "page": page, "size": size, "rows": rows}

    def cluster(self, cluster: str) -> dict:
        members = self._query(
            "SELECT n.crawl_pos, n.doc_id AS id, n.url, "
            "CASE WHEN n.reject_reason IS NULL THEN 'kept' "
            "ELSE n.reject_stage || ':' || n.reject_reason END AS verdict "
            "FROM near n WHERE n.dup_cluster = ? ORDER BY n.crawl_pos LIMIT ?",
            [cluster, PAGE_MAX],
        )
        return {"cluster": cluster, "members": members}

    def facets(self) -> dict:
        """The values the filters offer: verdicts with counts, languages, sources."""
        verdicts = self._query(
            "SELECT stage || ':' || reason AS verdict, count(*) AS n FROM ledger "
            "GROUP BY 1 ORDER BY n DESC, verdict"
        )
        langs = self._query(
            "SELECT d.lang AS lang, count(*) AS n, count(k.crawl_pos) AS kept FROM documents d "
            "LEFT JOIN kept k USING (crawl_pos) WHERE d.lang IS NOT NULL "
            "GROUP BY d.lang ORDER BY n DESC, d.lang"
        )
        sources = self._query(
            "SELECT source, count(*) AS kept FROM kept GROUP BY 1 ORDER BY kept DESC, source"
        )
        return {"verdicts": verdicts, "languages": langs, "sources": sources}


# the columns the queries name, for a table with no file (a run that kept nothing)
_EMPTY = {
    "documents": pa.schema([("crawl_pos", pa.int64()), ("doc_id", pa.string()),
                            ("url", pa.string()), ("lang", pa.string()), ("text", pa.string())]),
    "kept": pa.schema([("id", pa.string()), ("url", pa.string()), ("source", pa.string()),
                       ("lang", pa.string()),
                       ("metadata", pa.struct([("crawl_pos", pa.int64())]))]),
    "ledger": pa.schema([("doc_id", pa.string()), ("url", pa.string()), ("stage", pa.string()),
                         ("reason", pa.string()), ("detail", pa.string()),
                         ("crawl_pos", pa.int64()), ("warc_file", pa.string())]),
}  # fmt: skip


def _dataset(files: list[Location], table: str) -> ds.Dataset:
    """The Parquet files as one Arrow dataset on their filesystem (none: an empty table)."""
    if not files:
        return ds.dataset(_EMPTY[table].empty_table())
    filesystem, _ = files[0].fs()
    paths = [f.fs()[1] for f in files]
    return ds.dataset(paths, filesystem=filesystem, format="parquet")


def _plain(row: dict) -> dict:
    """JSON-safe values (DuckDB gives structs as dicts, lists as lists)."""
    return json.loads(json.dumps(row, default=str))
