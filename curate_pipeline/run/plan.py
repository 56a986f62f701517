"""`curate plan`: what a run would do on N cores, before it spends a core-hour.

Chunks, tasks, shuffle partitions and output files come from the functions the run itself
uses (run/chunks.py, run/sizing.py, the config); volumes, hours and the driver's memory are
estimates from the rates in run/sizing.py, measured on this machine. Each exchange says what
it moves: the corpus stages move narrow rows (ids, positions, keys, signatures); the one
exchange of text is the shards' global shuffle of the kept documents, which is the product.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from curate_pipeline.config import Config
from curate_pipeline.document.warc.streams import OBJECT_BUFFER, is_url
from curate_pipeline.location import Location
from curate_pipeline.run import sizing
from curate_pipeline.run.chunks import chunk_bytes, cut_chunks

TASK_BYTES = 128 << 20  # Spark's spark.sql.files.maxPartitionBytes: a read task's share


def file_sizes(files: Sequence[str], cfg: Config, file_bytes: int | None) -> tuple[list[int], int]:
    """Each input's size (`file_bytes` for all when given; a URL's: chunks.file_bytes) and
    how many sizes were assumed rather than read."""
    sizes, assumed = [], 0
    for f in files:
        if file_bytes is not None:
            sizes.append(file_bytes)
            assumed += 1
        elif f.startswith(("http://", "https://")):
            sizes.append(cfg.chunks.file_bytes)
            assumed += 1
        elif is_url(f):
            sizes.append(Location.of(f).size())
        else:
            sizes.append(os.stat(f).st_size)
    return sizes, assumed


def _splits(cfg: Config, cores: int, n_files: int) -> int:
    """Tasks per input file in a chunk (orchestrate.splits_per_file, for `cores`)."""
    return cfg.read.splits_per_file or max(1, -(-2 * cores // n_files))


def read_requests(size: int, splits: int) -> int:
    """Requests to read one input of `size` bytes in `splits` tasks: each opens it (one HEAD)
    and reads its range in OBJECT_BUFFER ranges, then runs on into the next split's range to
    the first record starting there (one more range; none after the last)."""
    per = -(-size // splits)
    return splits * (1 + max(1, -(-per // OBJECT_BUFFER))) + (splits - 1)


def make_plan(cfg: Config, files: Sequence[str], cores: int, file_bytes: int | None = None,
              appended: dict | None = None) -> dict:  # fmt: skip
    """The plan of a run over `files`; `appended` ({"version", "inputs", "kept"}: the output's
    current version a run would append to, run/increment.py): the plan of its new inputs
    alone, and the scan of the index of the `kept` earlier documents."""
    if appended:
        files = list(files)[appended["inputs"] :]
    sizes, assumed = file_sizes(files, cfg, file_bytes)
    total = sum(sizes)
    per_chunk = chunk_bytes(cfg, cores)
    chunks = cut_chunks(list(files), cfg.chunks.files, per_chunk, sizes=sizes)
    tasks = [len(c.files) * _splits(cfg, cores, len(c.files)) for c in chunks]
    size_of = dict(zip(files, sizes, strict=True))
    requests = [read_requests(size_of[f], _splits(cfg, cores, len(c.files)))
                for c in chunks for f in c.files]  # fmt: skip
    r = sizing.estimate(total)
    shuffle = int(cfg.spark.conf.get("spark.sql.shuffle.partitions", 0)) or (
        cfg.spark.shuffle_partitions_per_core * cores
    )
    groups = max(1, min(len(files), 2 * cores))  # stages/kept_rows.lookup_groups
    store_files = sum(tasks)
    data_files = cfg.output.data_files or sizing.data_files(r.kept_text_bytes,
                                                            cfg.output.file_bytes)  # fmt: skip
    ledger_files = sizing.ledger_files(r.rejected, cfg.output.file_bytes, cores,
                                       cfg.output.ledger_min_file_bytes)  # fmt: skip
    per_shard = cfg.shards.rows_per_shard or r.kept
    shards = (math.ceil(r.kept_text_bytes / cfg.shards.target_bytes) if cfg.shards.target_bytes
              else math.ceil(r.kept / per_shard))  # fmt: skip

    def needed(volume: float) -> int:
        return max(cores, math.ceil(volume / TASK_BYTES))

    moved = sizing.exchange_bytes(cfg.near_dedup.bands, cfg.near_dedup.bands * cfg.near_dedup.rows,
                                  r.reach, r.reach, r.kept, r.kept_text_bytes)  # fmt: skip
    exchanges = [
        {"name": "unique_ids", "moves": "doc_id, crawl_pos of every record (aggregated)",
         "bytes": r.records * sizing.ID_ROW_BYTES, "partitions": shuffle, "text": False},
        {"name": "exact_dedup", "moves": "key, crawl_pos, doc_id, url, file of each document "
         "reaching it, with the signature and band keys it carries to near dedup",
         "bytes": moved["exact_dedup"], "partitions": shuffle, "text": False},
        {"name": "near_dedup", "moves": f"{cfg.near_dedup.bands} band keys, signatures and "
         "edges of each document reaching it, and its row meeting its cluster's verdict",
         "bytes": moved["near_dedup"], "partitions": shuffle, "text": False},
        {"name": "kept lookup", "moves": "crawl_pos and the dedup columns of kept documents",
         "bytes": moved["kept"], "partitions": groups, "text": False},
        {"name": "shards", "moves": "kept documents' text and tokens: the global shuffle the "
         "shards are", "bytes": moved["mixture"],
         "partitions": shards, "text": True, "product": True, "sized_by": "output files"},
    ]  # fmt: skip
    if appended:  # the new documents' keys, broadcast to the scan of the earlier ones' index
        keys = sizing.NARROW_ROW_BYTES + cfg.near_dedup.bands * 24  # per new document
        exchanges.insert(1, {"name": "prior_dedup", "bytes": r.reach * keys,
                             "moves": "the new documents' exact and band keys (broadcast to "
                             "the index scan) and the index rows they match",
                             "partitions": shuffle, "text": False})  # fmt: skip
    if cfg.langid.route_by_language:
        exchanges.append({"name": "data by language", "moves": "kept documents, by language",
                          "bytes": r.kept_text_bytes * 1.1, "partitions": data_files,
                          "text": True, "product": True, "sized_by": "output files"})  # fmt: skip
    for e in exchanges:
        e["bytes"] = int(e["bytes"])
        e["needed"] = needed(e["bytes"])
    store_bytes = r.records * sizing.STORE_BYTES_PER_RECORD
    stages = [
        {"name": "documents pass", "tasks_per_chunk_max": max(tasks), "tasks_per_chunk_min":
         min(tasks), "tasks": sum(tasks), "needed": cores},
        {"name": "kept rows (merge, tokenize)",
         "tasks": max(1, math.ceil(store_bytes / TASK_BYTES)),
         "needed": needed(store_bytes)},
        # the writes of the published files: one task a file, as many as their bytes make
        {"name": "data/ write", "tasks": data_files, "needed": data_files,
         "sized_by": "output files"},
        {"name": "rejected/ write", "tasks": ledger_files, "needed": ledger_files,
         "sized_by": "output files"},
    ]  # fmt: skip

    def core_seconds(per_record: float, per_document: float) -> float:
        return r.records * per_record + r.reach * per_document

    core_s = core_seconds(sizing.CORE_SECONDS_PER_RECORD, sizing.CORPUS_CORE_SECONDS)
    low = core_seconds(sizing.CORE_SECONDS_PER_RECORD_RANGE[0], sizing.CORPUS_CORE_SECONDS_RANGE[0])
    high = core_seconds(sizing.CORE_SECONDS_PER_RECORD_RANGE[1],
                        sizing.CORPUS_CORE_SECONDS_RANGE[1])  # fmt: skip
    kept_files = stages[1]["tasks"]  # the kept rows' store: a file per merge task
    driver = sizing.driver_bytes(len(files), store_files + kept_files, groups,
                                 cfg.near_dedup.local_max_edges)  # fmt: skip
    plan = {
        "cores": cores,
        "inputs": {"files": len(files), "bytes": total, "sizes_assumed": assumed},
        "chunks": {
            "count": len(chunks),
            "bytes_per_chunk": per_chunk,
            "files_max": max(len(c.files) for c in chunks),
            "files_min": min(len(c.files) for c in chunks),
            "bound": math.ceil(total / per_chunk) + 1,
            "in_flight": cfg.chunks.parallel,
        },  # fmt: skip
        "estimates": {
            "records": r.records,
            "reaching_dedup": r.reach,
            "kept": r.kept,
            "kept_text_bytes": r.kept_text_bytes,
            "rejected": r.rejected,
        },  # fmt: skip
        "stages": stages,
        "shuffle_partitions": shuffle,
        "exchanges": exchanges,
        "documents_store": {"files": store_files, "bytes": int(store_bytes)},
        "outputs": {
            "data": {
                "files": data_files,
                "bytes": int(r.kept_text_bytes * sizing.DATA_BYTES_PER_TEXT_BYTE),
            },
            "rejected": {"files": ledger_files, "bytes": int(r.rejected * sizing.LEDGER_ROW_BYTES)},
            "shards": {"files": shards},
            "file_bytes": cfg.output.file_bytes,
        },  # fmt: skip
        "driver_memory_bytes": driver,
        "read_requests": {
            "per_file_min": min(requests),
            "per_file_max": max(requests),
            "total": sum(requests),
            "range_bytes": OBJECT_BUFFER,
        },
        "core_hours": core_s / 3600,
        "core_hours_range": [low / 3600, high / 3600],
        "wall_hours": core_s / 3600 / cores,
        "rates": {
            "documents_pass_core_seconds_per_record": sizing.CORE_SECONDS_PER_RECORD,
            "documents_pass_range": list(sizing.CORE_SECONDS_PER_RECORD_RANGE),
            "corpus_half_core_seconds_per_document": sizing.CORPUS_CORE_SECONDS,
            "corpus_half_range": list(sizing.CORPUS_CORE_SECONDS_RANGE),
            "measured_on": sizing.RATES_MEASURED_ON,
        },
    }
    if appended:
        plan["append"] = {
            "version": appended["version"],
            "inputs_done": appended["inputs"],
            "inputs_added": len(files),
            "index_rows": appended["kept"],
            "index_scan_bytes": appended["kept"] * sizing.INDEX_SCAN_ROW_BYTES,
        }
    return plan


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return str(n)


def render(p: dict) -> str:
    i, c, e, o = p["inputs"], p["chunks"], p["estimates"], p["outputs"]
    rt = p["rates"]
    a = p.get("append")
    appending = [
        f"appending      to version {a['version']}: {a['inputs_done']:,} inputs done, "
        f"{a['inputs_added']:,} added (planned below); their documents checked against "
        f"{a['index_rows']:,} indexed ones (~{_size(a['index_scan_bytes'])} of keys, scanned "
        "where they lie, not shuffled)"
    ] if a else []  # fmt: skip
    lines = [
        *appending,
        f"inputs         {i['files']:,} files, {_size(i['bytes'])}"
        + (f" ({i['sizes_assumed']:,} sizes assumed)" if i["sizes_assumed"] else ""),
        f"cores          {p['cores']:,}",
        f"chunks         {c['count']:,} of {c['files_min']:,}-{c['files_max']:,} files "
        f"(<= {_size(c['bytes_per_chunk'])} each, {c['in_flight']} in flight; bound "
        f"{c['bound']:,})",
        f"records        ~{e['records']:,.0f} read, ~{e['reaching_dedup']:,.0f} reach dedup, "
        f"~{e['kept']:,.0f} kept ({_size(e['kept_text_bytes'])} of text)",
        "",
        "stage                          tasks                   (needed)",
    ]
    for s in p["stages"]:
        per = (f"{s['tasks_per_chunk_min']:,}-{s['tasks_per_chunk_max']:,} per chunk"
               if "tasks_per_chunk_max" in s else f"{s['tasks']:,}")  # fmt: skip
        lines.append(f"  {s['name']:<29}{per:<24}({s['needed']:,})")
    lines += ["", f"exchanges (shuffle partitions: {p['shuffle_partitions']:,})"]
    for x in p["exchanges"]:
        lines.append(f"  {x['name']:<14}{_size(x['bytes']):>10}  {x['partitions']:>7,} parts  "
                     f"{x['moves']}")  # fmt: skip
    lines += [
        "",
        f"documents store {p['documents_store']['files']:,} files, "
        f"~{_size(p['documents_store']['bytes'])}",
        f"data/          {o['data']['files']:,} files of ~{_size(o['file_bytes'])} "
        f"(~{_size(o['data']['bytes'])})",
        f"rejected/      {o['rejected']['files']:,} files (~{_size(o['rejected']['bytes'])})",
        f"shards/        {o['shards']['files']:,} shards",
        f"driver memory  ~{_size(p['driver_memory_bytes'])}",
        f"read requests  {p['read_requests']['per_file_min']:,}-"
        f"{p['read_requests']['per_file_max']:,} per input file "
        f"({_size(p['read_requests']['range_bytes'])} ranges; "
        f"{p['read_requests']['total']:,} in all)",
        f"core-hours     ~{p['core_hours']:,.0f} ({p['core_hours_range'][0]:,.0f}-"
        f"{p['core_hours_range'][1]:,.0f}; ~{p['wall_hours']:,.1f} h on {p['cores']:,} cores)",
        f"  at           {rt['documents_pass_core_seconds_per_record']:.4f} core-s a record read "
        f"({rt['documents_pass_range'][0]:.4f}-{rt['documents_pass_range'][1]:.4f}) and "
        f"{rt['corpus_half_core_seconds_per_document']:.4f} a document reaching dedup "
        f"({rt['corpus_half_range'][0]:.4f}-{rt['corpus_half_range'][1]:.4f}),",
        f"  measured on  {rt['measured_on']}",
    ]
    return "\n".join(lines)
