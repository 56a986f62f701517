"""A per-document step's verdict on a document: `None` (it goes on) or `Drop(reason, detail)`.
Per-document logic returns these; the step mechanism (pipeline/stages/step.py) writes them
into the reject columns under the stage's ledger name."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Drop:
    """The ledger's reason and detail for a document a step drops."""

    reason: str
    detail: str | None = None


Verdict = Drop | None
