"""The exception the extraction bound raises (document/extract.py) and the strategies catch
(document/extract_strategy.py): its own module, so neither imports the other for it."""

from __future__ import annotations


class ExtractTimeout(Exception):
    """A page outlived its extraction bound; `clock` is "cpu" or "wall"."""

    def __init__(self, clock: str = "cpu"):
        super().__init__(clock)
        self.clock = clock
