"""A per-document step's verdict on a document: `None` (it goes on) or `Drop(reason, detail)`.
Per-document logic returns these; the step mechanism (curate_pipeline/stages/step.py) writes them
into the reject columns under the stage's ledger name."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Drop:
    """The ledger's reason and detail for a document a step drops."""

    reason: str
    detail: str | None = None


Verdict = Drop | None


class EnvironmentFailure(Exception):
    """The machine failed, not the document: a model, tokenizer, file or dependency missing or
    unusable where the step runs. The step mechanism never turns it into a verdict: the task
    fails, Spark retries it, and the run stops with this message (which names the file and
    the fix) instead of dropping every document as an error."""


# What a step or an extractor re-raises instead of judging the document.
ENVIRONMENT = (EnvironmentFailure, ImportError, MemoryError)
