"""Which per-language recipe a document takes: a LID label (and its text) to a FineWeb-2 key.

FineWeb-2 keys its settings by ISO 639-3 code and ISO 15924 script (`deu_Latn`, `srp_Cyrl`),
as GlotLID labels its languages. lid.176 labels are ISO 639-1 codes where one exists, else
639-3 (`de`, `sr`, `arz`), without a script. A label becomes a key:

1. a GlotLID-style label (`deu_Latn`) is a key already;
2. else its ISO 639-3 code (langcodes: `de` -> `deu`) if FineWeb-2 has it; else the individual
   language CLDR names as the macrolanguage's own (langcodes' macrolanguage aliases: `zh` ->
   `cmn`, `ar` -> `arb`, `ms` -> `zsm`, `sw` -> `swh`); else the most spoken individual
   language of the macrolanguage that FineWeb-2 has (ISO 639-3's member lists from
   iso639-lang, speakers from CLDR via language_data: `no` -> `nob`, `ps` -> `pbt`);
3. the script: the language's only one in FineWeb-2, else the one most of the document's
   letters are written in (`sr` -> `srp_Cyrl` or `srp_Latn`), else the language's likely
   script (CLDR), else the first;
4. a label with no recipe gives None: the caller's documented default applies (English has
   none: FineWeb-2 covers every language but English).
"""

from __future__ import annotations

import re
from functools import lru_cache

import regex

_GLOT = re.compile(r"^[a-z]{2,3}_[A-Z][a-z]{3}$")
# scripts that are several Unicode scripts (ISO 15924 composites)
_COMPOSITE = {"Jpan": ("Hira", "Kana", "Hani"), "Kore": ("Hang", "Hani"), "Hans": ("Hani",),
              "Hant": ("Hani",)}  # fmt: skip
SAMPLE_CHARS = 5000  # letters of a document's start enough to tell its script
# retired ISO 639-1 codes lid.176 still uses: `bh` (Bihari, retired 2021) is Bhojpuri's
# Wikipedia, which lid.176 was trained on
RETIRED = {"bh": "bho"}


@lru_cache(maxsize=64)
def _letters(script: str) -> regex.Pattern:
    parts = "".join(rf"\p{{sc={s}}}" for s in _COMPOSITE.get(script, (script,)))
    return regex.compile(f"[{parts}]")


class RecipeKeys:
    """The keys of a set of per-language recipes (FineWeb-2's: conf/fineweb2/configs)."""

    def __init__(self, keys: set[str] | frozenset[str]):
        self.keys = frozenset(keys)
        self.scripts: dict[str, list[str]] = {}
        for key in sorted(self.keys):
            code, script = key.split("_", 1)
            self.scripts.setdefault(code, []).append(script)
        self._language = lru_cache(maxsize=4096)(self._language_of)

    def __getstate__(self) -> dict:  # shipped to executors: the cache stays behind
        return {"keys": self.keys}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["keys"])

    def key_for(self, label: str, text: str = "") -> str | None:
        """The recipe key of a document labelled `label` (with or without `__label__`)."""
        label = label.removeprefix("__label__")
        if _GLOT.match(label):
            return label if label in self.keys else None
        found = self._language(label)
        if found is None:
            return None
        code, scripts, likely = found
        if len(scripts) == 1:
            return f"{code}_{scripts[0]}"
        sample = text[:SAMPLE_CHARS]
        counts = {s: len(_letters(s).findall(sample)) for s in scripts}
        best = max(scripts, key=lambda s: counts[s])  # the first on a tie
        if counts[best] == 0 or list(counts.values()).count(counts[best]) > 1:
            best = likely if likely in scripts else scripts[0]
        return f"{code}_{best}"

    def _language_of(self, label: str) -> tuple[str, list[str], str | None] | None:
        import langcodes

        label = RETIRED.get(label, label)
        try:
            lang = langcodes.Language.get(label)
            code = lang.to_alpha3()
        except (ValueError, LookupError):
            return None
        likely = lang.maximize().script
        if code not in self.scripts:
            code = self._member(label, code)
            if code is None:
                return None
        return code, self.scripts[code], likely

    def _member(self, label: str, macro: str) -> str | None:
        """The macrolanguage's individual language FineWeb-2 has: CLDR's own first."""
        import langcodes

        for code in sorted(self.scripts):
            if code != label and langcodes.standardize_tag(code, macro=True) == label:
                return code
        try:
            from iso639 import Lang

            members = [m.pt3 for m in Lang(macro).individuals() if m.pt3 in self.scripts]
        except Exception:  # noqa: BLE001  not a macrolanguage, or a retired code
            return None
        speakers = {m: langcodes.Language.get(m).speaking_population() for m in members}
        return min(members, key=lambda m: (-speakers[m], m), default=None)
