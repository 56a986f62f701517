"""The per-document step contract, and the mechanism that runs steps.

A stage's per-document half is a `DocumentStep`: the Arrow fields it sets and a function over
a batch of documents (row dicts) returning one verdict per document, in order: `None` (the
document goes on) or `Drop(reason, detail)`. The function sets its fields on the documents it
is given (and may rewrite `text`); it never writes the reject columns. `each(fn)` turns a
function of one document into one of a batch; steps that predict on lists (language ID, the
classifier, the tokenizer) take the batch.

The mechanism (`run_steps`) gives each step only the documents no earlier step dropped, writes
the reject columns from its verdicts (the stage's ledger name, the reason, the detail cut to
MAX_DETAIL characters), drops as `<stage>:error` the documents it raises on (and only those),
and adds its task-seconds to the stage's timer. The run counts drops by stage and reason from
the ledger, so a step has nothing to count. `transform` is the same step as a DataFrame
transform of its own (Spark ML's `Transformer`): a function of a DataFrame.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from curate_pipeline.document.verdict import ENVIRONMENT, Drop, Verdict

__all__ = ["Check", "DocumentStep", "Drop", "Running", "Stage", "Verdict", "each",
           "per_document", "run_steps", "transform"]  # fmt: skip

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark import Accumulator
    from pyspark.sql import DataFrame, SparkSession

    from curate_pipeline.config import Config

MAX_DETAIL = 1000  # characters of a drop's detail kept in the ledger
MAX_ERROR = 500  # characters of an exception's message kept in the ledger


Check = Callable[[list[dict]], Sequence[Verdict]]


@dataclass(frozen=True)
class DocumentStep:
    """What a stage's step factory returns: the fields it sets, and its check."""

    fields: list[pa.Field]
    check: Check


def each(fn: Callable[[dict], Verdict]) -> Check:
    """A check over a batch from a function of one document."""

    def check(docs: list[dict]) -> list[Verdict]:
        return [fn(d) for d in docs]

    return check


def per_document(
    make: Callable[[Config], Callable[[dict], Verdict]], fields: Sequence[pa.Field] = ()
) -> Callable[[SparkSession, Config], DocumentStep]:
    """The step factory of a filter that needs nothing loaded or shipped by the driver:
    `make(cfg)` returns its check of one document (per-document logic, no Spark)."""

    def factory(spark: SparkSession, cfg: Config) -> DocumentStep:  # noqa: ARG001
        return DocumentStep(list(fields), each(make(cfg)))

    return factory


# A step as the documents pass runs it: (the ledger `stage` of its drops, its check, its
# task-seconds counter).
Running = tuple[str, Check, "Accumulator"]


def _judge(stage: str, check: Check, docs: list[dict]) -> None:
    verdicts = check(docs)
    if len(verdicts) != len(docs):
        raise ValueError(
            f"step {stage!r} returned {len(verdicts)} verdicts for {len(docs)} documents: "
            "one verdict (None or Drop) per document, in order"
        )
    for doc, v in zip(docs, verdicts, strict=True):
        if v is not None:
            doc["reject_stage"], doc["reject_reason"] = stage, v.reason
            doc["reject_detail"] = v.detail[:MAX_DETAIL] if v.detail is not None else None


def _guarded(stage: str, check: Check, live: list[dict]) -> None:
    """The check on the batch; if it raises, on each document alone, so that only the
    documents it fails on are dropped (`<stage>:error`, with the exception) and the task goes
    on: one hostile page must not abort a pass over thousands of files. A failure of the
    environment (ENVIRONMENT: a missing model, tokenizer or module) is no verdict: it fails
    the task."""
    try:
        _judge(stage, check, live)
        return
    except ENVIRONMENT:
        raise
    except Exception:  # noqa: BLE001 (any other failure of a step is a verdict on a document)
        pass
    for doc in live:
        try:
            _judge(stage, check, [doc])
        except ENVIRONMENT:
            raise
        except Exception as e:  # noqa: BLE001
            doc["reject_stage"], doc["reject_reason"] = stage, "error"
            doc["reject_detail"] = f"{type(e).__name__}: {' '.join(str(e).split())}"[:MAX_ERROR]


def run_steps(rows: list[dict], steps: Sequence[Running]) -> list[dict]:
    """Each step in order on the rows no earlier step (or extraction) rejected."""
    for stage, check, seconds in steps:
        live = [r for r in rows if r.get("reject_reason") is None]
        if not live:
            break
        t0 = time.perf_counter()
        _guarded(stage, check, live)
        seconds.add(time.perf_counter() - t0)
    return rows


class _NoTimer:
    def add(self, _: float) -> None:
        pass


def transform(docs: DataFrame, stage: str, step: DocumentStep) -> DataFrame:
    """`docs` with `step` run on every row not dropped yet, its fields added: the step as a
    DataFrame transform of its own (the pipeline runs it inside the documents pass instead)."""
    from curate_pipeline.stages.arrow_batches import extended_schema, map_batches
    from curate_pipeline.stages.schema import spark_schema

    schema = extended_schema(docs.schema, step.fields)
    running = [(stage, step.check, _NoTimer())]
    return docs.mapInArrow(
        map_batches(lambda rows: run_steps(rows, running), schema), spark_schema(schema)
    )


@dataclass(frozen=True)
class Stage:
    """A stage after extraction, as the registry lists it: a per-document step, a corpus half
    (dedup: all documents at once), or both.

    `step(spark, cfg)` runs once on the driver (load or ship what the check needs) and returns
    the `DocumentStep`; every step runs inside the extract tasks (the documents pass: one job,
    one write), but a `final` one, which runs where the kept rows are written, after the
    corpus stages' last drop. `corpus(spark, kept_so_far, cfg)` is its own materialised stage
    over narrow rows (stages/kept_rows.py), returning every row it was given with its columns
    added and its drops marked.
    """

    name: str
    ledger: str = ""  # the `stage` its drops carry in the ledger (default: its name)
    step: Callable[[SparkSession, Config], DocumentStep] | None = None
    corpus: Callable[[SparkSession, DataFrame, Config], DataFrame] | None = None
    sections: tuple[str, ...] = ()  # config sections it reads (default: its name)
    enabled: Callable[[Config], bool] = lambda cfg: True
    settings: Callable[[Config], object] | None = None  # what the step reads (default: sections)
    model: Callable[[Config], Path] | None = None  # its model file is in the fingerprints too
    # what a document that passed it is, in the report's funnel (default "<name> passed");
    # None: it drops nothing (but errors), and the funnel leaves it out
    passed: str | None = ""
    final: bool = False  # its step runs on the documents every other stage kept
    # columns its corpus half reads that another stage's step wrote (they stay in data/)
    reads: Callable[[Config], list[str]] | None = None
    # its corpus half keeps state in the output: it is called with the output's Location
    stored: bool = False
    # what its corpus half reads besides its rows and config (other outputs' versions): in
    # its fingerprint, so a change reruns it
    corpus_inputs: Callable[[Config], object] | None = None
    # ledger stages whose near-duplicate drops (reason starting "near") its corpus half takes
    # as chain links (`links=`): an append's prior_dup, so clusters form as in one run
    links: tuple[str, ...] = ()
    # its corpus half is told (`rows=`) how many documents it is given at most (the
    # documents pass's rows), to choose a path by measured size without a count job
    sized: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "ledger", self.ledger or self.name)
        object.__setattr__(self, "sections", self.sections or (self.name,))
        if self.passed == "":
            object.__setattr__(self, "passed", f"{self.name.replace('_', ' ')} passed")
