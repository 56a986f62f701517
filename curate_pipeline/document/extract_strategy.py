"""Extraction strategies: a few extractors per page and a rule that keeps one output.

A strategy (conf: extract.strategies) names the extractors it runs and `longer`: the first
extractor's output is kept unless a later one's has at least `longer` times as many words, or
the kept one is empty; later extractors are compared in order with the output kept so far.
With `below`, a later extractor runs only while the kept output has fewer words than that
(a cheap first extractor, a dear one only where the first found little).
The first is a trafilatura setting in `balanced` and `best`: where the rule does not fire,
the text is trafilatura's own. The extractors, their order, `longer` and `below` were chosen on four
public benchmarks and validated leaving each benchmark out (bench/extract_chooser_train.py,
docs/extraction.md). The rule is a pure function of the outputs: the same page gets the same
text in any run, partitioning or worker.

One time bound covers all of a page's extractors (resiliparse's views first, from one parse):
each runs under what is left of it, and one that fails or runs out leaves the others' outputs
to choose from.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from curate_pipeline.document.extractors import EXTRACTORS, check_nesting
from curate_pipeline.document.verdict import ENVIRONMENT

RESILIPARSE_VIEWS = ("resiliparse", "resiliparse_nocomments", "resiliparse_all")


def words(text: str | None) -> int:
    return len(text.split()) if text else 0


def keep(runs: Sequence[str], texts: dict[str, str | None], longer: float) -> str | None:
    """The extractor whose output the rule keeps; None when every output is empty."""
    kept, kept_words = None, 0
    for name in runs:
        w = words(texts.get(name))
        if w and (not kept_words or w >= longer * kept_words):
            kept, kept_words = name, w
    return kept


def execution_order(runs: Sequence[str]) -> list[str]:
    """resiliparse's views first (one parse, ~0.1x trafilatura's CPU): a page that exhausts
    the bound on a dearer extractor still has their text."""
    return [n for n in runs if n in RESILIPARSE_VIEWS] + [
        n for n in runs if n not in RESILIPARSE_VIEWS
    ]


def needed(runs: Sequence[str], texts: dict[str, str | None], longer: float, below: int) -> bool:
    """Whether the next extractor runs: the output kept so far has fewer than `below` words."""
    kept = keep(runs, texts, longer)
    return words(texts[kept]) < below if kept else True


class Outcome:
    __slots__ = ("text", "chosen", "ran", "failures", "timed_out", "clock", "tree")

    def __init__(self) -> None:
        self.text: str | None = None
        self.chosen: str | None = None
        self.ran: list[str] = []
        self.failures: dict[str, str] = {}
        self.timed_out = False
        self.clock = "cpu"
        self.tree: Any = None  # resiliparse's parse, shared by its views


def _run_extractors(
    html: str, url: str, names: list[str], texts: dict, out: Outcome, bound: Any, clock: tuple
) -> None:
    """Each of `names` on the page under what is left of the shared bound; a failure is noted
    in `out` and leaves the others."""
    from curate_pipeline.document.extract_timeout import ExtractTimeout

    c0, w0, cpu_s, wall_s = clock
    for name in names:
        cpu_left = cpu_s - (time.process_time() - c0)
        wall_left = wall_s - (time.perf_counter() - w0)
        if cpu_left <= 0 or wall_left <= 0:
            out.failures[name] = "no time left"
            out.timed_out = True
            out.clock = "cpu" if cpu_left <= 0 else "wall"
            texts[name] = None
            continue
        try:
            with bound(cpu_left, wall_left):
                if name in RESILIPARSE_VIEWS:
                    if out.tree is None:  # one parse for resiliparse's views
                        from resiliparse.parse.html import HTMLTree

                        check_nesting(html)
                        out.tree = HTMLTree.parse(html)
                    texts[name] = EXTRACTORS[name](out.tree, url)
                else:
                    texts[name] = EXTRACTORS[name](html, url)
            out.ran.append(name)
        except ExtractTimeout as e:
            out.failures[name] = f"timeout ({e.clock})"
            out.timed_out = True
            out.clock = e.clock
            texts[name] = None
        except RecursionError as e:
            out.failures[name] = f"document nested too deeply{f' ({e})' if str(e) else ''}"[:200]
            texts[name] = None
        except (*ENVIRONMENT, OSError):
            raise  # the machine or the installation (a missing library), not the page
        except Exception as e:  # noqa: BLE001  one extractor's failure leaves the others
            out.failures[name] = f"{type(e).__name__}: {e}"[:200]
            texts[name] = None


def run_strategy(
    html: str, url: str, runs: Sequence[str], longer: float, bound: Any, cpu_s: float,
    wall_s: float, below: int | None = None,
) -> Outcome:  # fmt: skip
    """Run a strategy's extractors under one shared bound and keep one output by its rule.

    `bound(cpu, wall)` is the time-bound context manager (curate_pipeline.document.extract); each
    extractor gets what is left of `cpu_s` / `wall_s`. With `below`, in the listed order, each
    later one only while the kept output is shorter than `below` words.
    """
    out = Outcome()
    texts: dict[str, str | None] = {}
    clock = (time.process_time(), time.perf_counter(), cpu_s, wall_s)
    if below is None:
        _run_extractors(html, url, execution_order(runs), texts, out, bound, clock)
    else:
        for i, name in enumerate(runs):
            if i and not needed(runs[:i], texts, longer, below):
                break  # the kept output is long enough: the rest never run
            _run_extractors(html, url, [name], texts, out, bound, clock)
    out.tree = None
    chosen = keep(runs, texts, longer)
    if chosen is not None:
        out.text, out.chosen = texts[chosen], chosen
    return out
