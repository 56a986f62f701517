"""The step mechanism (curate_pipeline/stages/step.py): a step returns verdicts, the mechanism
writes
the reject columns; a step that raises on one row drops that row with the error, not the
task; a step returning the wrong number of verdicts is an error, not a silent shift."""

from __future__ import annotations

import pytest

from curate_pipeline.stages.step import Drop, each, run_steps


class _Seconds:
    def __init__(self) -> None:
        self.total = 0.0

    def add(self, s: float) -> None:
        self.total += s


def _rows(*texts: str) -> list[dict]:
    return [{"doc_id": f"d{i}", "text": t, "reject_reason": None, "reject_stage": None,
             "reject_detail": None} for i, t in enumerate(texts)]  # fmt: skip


def test_a_failing_row_is_dropped_with_its_error_and_the_rest_go_on():
    def step(doc: dict) -> None:
        if "boom" in doc["text"]:
            raise UnicodeError(f"cannot handle {doc['doc_id']}")
        doc["n"] = len(doc["text"])

    def after(docs: list[dict]) -> list[None]:
        for d in docs:
            d["after"] = True
        return [None] * len(docs)

    rows = _rows("ok", "boom here", "fine")
    run_steps(rows, [("rules", each(step), _Seconds()), ("quality", after, _Seconds())])
    assert [r["reject_reason"] for r in rows] == [None, "error", None]
    bad = rows[1]
    assert bad["reject_stage"] == "rules"
    assert bad["reject_detail"] == "UnicodeError: cannot handle d1"
    assert [r.get("n") for r in rows] == [2, None, 4]
    assert [r.get("after") for r in rows] == [True, None, True]  # later steps skip it


def test_verdicts_become_the_reject_columns_under_the_stage_ledger_name():
    seconds = _Seconds()

    def short(doc: dict) -> Drop | None:
        return Drop("too_short", f"{len(doc['text'])} chars " + "x" * 2000) if len(
            doc["text"]) < 5 else None  # fmt: skip

    seen: list[str] = []

    def later(docs: list[dict]) -> list[None]:
        seen.extend(d["doc_id"] for d in docs)
        return [None] * len(docs)

    rows = _rows("tiny", "long enough", "no")
    run_steps(rows, [("length", each(short), seconds), ("later", later, _Seconds())])
    assert [(r["reject_stage"], r["reject_reason"]) for r in rows] == [
        ("length", "too_short"), (None, None), ("length", "too_short")]  # fmt: skip
    assert rows[0]["reject_detail"].startswith("4 chars x")
    assert len(rows[0]["reject_detail"]) == 1000  # the ledger's cut
    assert seen == ["d1"]  # a dropped row reaches no later step
    assert seconds.total > 0


def test_a_step_returning_too_few_verdicts_drops_nothing_silently():
    def lossy(docs: list[dict]) -> list[None]:
        return [None] * (len(docs) - 1)  # a bug: one verdict missing

    rows = _rows("a", "b", "c")
    run_steps(rows, [("buggy", lossy, _Seconds())])
    # the batch call is refused; alone, each row gets zero verdicts: every row an error
    assert [r["reject_reason"] for r in rows] == ["error"] * 3
    assert all("ValueError" in r["reject_detail"] for r in rows)


def test_a_failing_environment_fails_the_task_never_a_verdict():
    """A model or tokenizer missing where the step runs, or a module that does not import, is
    the machine's failure: it propagates (the task fails) instead of dropping every document
    as `<stage>:error`."""
    from curate_pipeline.document.verdict import EnvironmentFailure

    for failure in (EnvironmentFailure("tokenizer tok.json is not on this executor"),
                    ImportError("No module named 'tokenizers'")):  # fmt: skip

        def step(docs: list[dict], failure=failure) -> list[None]:
            raise failure

        rows = _rows("a", "b")
        with pytest.raises(type(failure)):
            run_steps(rows, [("tokenize", step, _Seconds())])
        assert [r["reject_reason"] for r in rows] == [None, None]


@pytest.mark.spark
def test_a_model_not_shipped_to_the_executor_fails_the_run_and_commits_nothing(
    spark, cfg, sample_warc, tmp_path, monkeypatch
):
    """A Hugging Face tokenizer.json the executors do not get (the driver's ship is made to
    register another name): the run fails with a message naming the file where the tokenizer
    runs (the kept rows, after dedup), that step is not committed and no manifest is written;
    the chunks and dedup stages before it, which never used it, stand."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    import curate_pipeline.stages.tokenize as tokenize_stage
    from curate_pipeline.run.orchestrate import run

    words = ["<|endoftext|>", "[UNK]", "the", "river", "valley", "bread"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tok.json"
    tok.save(str(path))
    c = cfg.model_copy(deep=True)
    c.tokenizer.name = str(path)
    monkeypatch.setattr(tokenize_stage, "ship", lambda spark, p: "never-shipped-tok.json")
    out = tmp_path / "out"
    with pytest.raises(Exception, match="never-shipped-tok.json is not on this executor"):
        run(c, [str(sample_warc)], out, spark)
    assert not (out / "_versions").exists()  # no version published
    assert not (out / "_stages" / "kept" / "_STAGE.json").exists()
