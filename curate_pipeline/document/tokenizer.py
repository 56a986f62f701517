"""The tokenizer: a tiktoken encoding by name, or a Hugging Face `tokenizer.json`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


class Tokenizer:
    def __init__(self, name: str, eot: int | None = None):
        self.name = name
        if Path(name).suffix == ".json":
            from tokenizers import Tokenizer as HFTokenizer

            self._hf = HFTokenizer.from_file(name)
            self._tt = None
            self.n_vocab = self._hf.get_vocab_size()
            found = [self._hf.token_to_id(t) for t in ("<|endoftext|>", "</s>", "<eos>")]
            default_eot = next((i for i in found if i is not None), None)
        else:
            import tiktoken

            self._tt = tiktoken.get_encoding(name)
            self._hf = None
            self.n_vocab = self._tt.n_vocab
            default_eot = self._tt.eot_token
        self.eot = default_eot if eot is None else eot
        if self.eot is None:
            raise ValueError(f"tokenizer {name}: no end-of-text token; set tokenizer.eot_token")

    @property
    def dtype(self) -> np.dtype:
        """The narrowest unsigned integer holding every token id."""
        return np.dtype("<u2") if self.n_vocab <= 1 << 16 else np.dtype("<u4")

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, special tokens treated as plain text."""
        if self._tt is not None:
            return self._tt.encode_ordinary_batch(list(texts), num_threads=1)
        return [e.ids for e in self._hf.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Sequence[int]) -> str:
        if self._tt is not None:
            return self._tt.decode(list(ids))
        return self._hf.decode(list(ids), skip_special_tokens=False)
