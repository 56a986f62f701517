"""Run configuration: YAML on disk, validated by pydantic before Spark starts.

The sections live in modules by what they govern (run, read, filters, quality, dedup,
mixture: a new stage's section goes in its kind's module); this module assembles `Config`
from them and reads YAML. Every name is importable from `curate_pipeline.config` as before.

Every threshold of every stage lives here with its default; `conf/default.yaml` repeats them
with the source of each default beside it. Unknown keys and wrong types are errors that name
the key and the file, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from curate_pipeline.config.base import ConfigError, _Section  # noqa: F401 (re-exported)
from curate_pipeline.config.dedup import (  # noqa: F401 (re-exported)
    DedupConf,
    ExactDedupConf,
    NearDedupConf,
)
from curate_pipeline.config.filters import (  # noqa: F401 (re-exported)
    GOPHER_STOP_WORDS,
    C4Conf,
    CustomStepConf,
    DecontaminationConf,
    EvalSet,
    FineWebConf,
    GopherQualityConf,
    GopherRepetitionConf,
    LangIdConf,
    PiiConf,
    RecipesConf,
    RegexFilterConf,
    RulesConf,
    RuleSetName,
    StepsConf,
)
from curate_pipeline.config.mixture import (  # noqa: F401 (re-exported)
    NO_GROUP,
    BudgetConf,
    GroupWeights,
    MixtureConf,
    QualityGroup,
    ShardsConf,
    SourceRule,
    SourcesConf,
    TokenizerConf,
    TokensConf,
)
from curate_pipeline.config.quality import (  # noqa: F401 (re-exported)
    ClassifierConf,
    EnsembleConf,
    QualityConf,
    QualityTrainConf,
)
from curate_pipeline.config.read import (  # noqa: F401 (re-exported)
    ExtractConf,
    ReadConf,
    UrlFilterConf,
)
from curate_pipeline.config.run import (  # noqa: F401 (re-exported)
    ChunksConf,
    InputConf,
    OutputConf,
    SparkConf,
)


class Config(_Section):
    spark: SparkConf = Field(default_factory=SparkConf)
    input: InputConf = Field(default_factory=InputConf)
    chunks: ChunksConf = Field(default_factory=ChunksConf)
    read: ReadConf = Field(default_factory=ReadConf)
    url_filter: UrlFilterConf = Field(default_factory=UrlFilterConf)
    extract: ExtractConf = Field(default_factory=ExtractConf)
    langid: LangIdConf = Field(default_factory=LangIdConf)
    rules: RulesConf = Field(default_factory=RulesConf)
    recipes: RecipesConf = Field(default_factory=RecipesConf)
    regex_filter: RegexFilterConf = Field(default_factory=RegexFilterConf)
    steps: StepsConf = Field(default_factory=StepsConf)
    quality: QualityConf = Field(default_factory=QualityConf)
    decontamination: DecontaminationConf = Field(default_factory=DecontaminationConf)
    pii: PiiConf = Field(default_factory=PiiConf)
    dedup: DedupConf = Field(default_factory=DedupConf)
    exact_dedup: ExactDedupConf = Field(default_factory=ExactDedupConf)
    near_dedup: NearDedupConf = Field(default_factory=NearDedupConf)
    sources: SourcesConf = Field(default_factory=SourcesConf)
    tokenizer: TokenizerConf = Field(default_factory=TokenizerConf)
    tokens: TokensConf = Field(default_factory=TokensConf)
    mixture: MixtureConf = Field(default_factory=MixtureConf)
    shards: ShardsConf = Field(default_factory=ShardsConf)
    budget: BudgetConf = Field(default_factory=BudgetConf)
    output: OutputConf = Field(default_factory=OutputConf)

    @model_validator(mode="after")
    def _quality_groups(self) -> Config:
        groups = self.mixture.quality_groups
        if groups and not (self.quality.enabled and self.quality.ensemble.enabled):
            raise ValueError("mixture.quality_groups weigh documents by quality.ensemble's "
                             "buckets: set quality.enabled and quality.ensemble.enabled, or "
                             "mixture.quality_groups: {}")  # fmt: skip
        if groups:  # buckets within range, each in one group at most
            GroupWeights(groups, self.quality.ensemble.buckets)
        return self

    def section_hash(self, *names: str) -> str:
        """Stable hash of the named sections (all when none): a stage reruns when its changes."""
        data = self.model_dump(mode="json")
        picked = {n: data[n] for n in (names or tuple(data))}
        return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:16]


def _nearest_key(loc: tuple) -> str | None:
    """The valid key nearest to a misspelled one at `loc` (section path, then the key)."""
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        field = model.model_fields.get(str(part)) if isinstance(part, str) else None
        ann = field.annotation if field else None
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        elif field and getattr(ann, "__args__", None):  # list[EvalSet], SourceRule lists
            inner = [a for a in ann.__args__ if isinstance(a, type) and issubclass(a, BaseModel)]
            if not inner:
                return None
            model = inner[0]
        elif isinstance(part, int):
            continue
        else:
            return None
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.6)
    if not close:
        return None
    return ".".join(str(p) for p in (*loc[:-1], close[0]))


def _format_errors(path: str, err: ValidationError) -> str:
    lines = [f"config {path}: {err.error_count()} problem(s)"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            near = _nearest_key(tuple(e["loc"]))
            hint = f"did you mean `{near}`?" if near else "see conf/default.yaml for every key"
            lines.append(f"  {key}: unknown key ({hint})")
        else:
            lines.append(f"  {key}: {e['msg']} (got {e.get('input')!r})")
    return "\n".join(lines)


def default_config_path() -> Path | None:
    """`conf/default.yaml` of the working directory, else of the project this package is in;
    None: the built-in defaults (the same values: tests/test_config.py keeps them equal)."""
    for root in (Path.cwd(), Path(__file__).resolve().parents[1]):
        p = root / "conf" / "default.yaml"
        if p.is_file():
            return p
    return None


PRESETS = Path(__file__).resolve().parents[1] / "conf"  # shipped in the package


def presets() -> dict[str, Path]:
    """The presets the package ships, by name (`--config fineweb`)."""
    return {p.stem: p for p in sorted(PRESETS.glob("*.yaml"))}


def find_config(path: str | Path) -> Path:
    """The file `--config` names: a path that exists; else a preset by name (`fineweb2`) or by
    its path in a checkout (`conf/fineweb2.yaml`, from anywhere). Else ConfigError."""
    p = Path(path).expanduser()
    if p.is_file():
        return p
    name, found = str(path), presets()
    if name in found:
        return found[name]
    if not p.is_absolute() and p.parts[:1] == ("conf",):
        inside = PRESETS.joinpath(*p.parts[1:])
        if inside.is_file():
            return inside
    raise ConfigError(f"config {path}: no such file, and no preset of that name (presets: "
                      f"{', '.join(found)}; `curate config list` says what each is)")  # fmt: skip


def describe_presets() -> list[tuple[str, str]]:
    """(name, the first sentence of its header comment) for each preset."""
    import re

    out = []
    for name, p in presets().items():
        head = []
        for line in p.read_text(encoding="utf-8").splitlines():
            if not line.startswith("#"):
                break
            head.append(line.lstrip("#").strip())
        text = " ".join(head)
        first = re.split(r"(?<=[.:])\s|\s\(", text, maxsplit=1)[0].rstrip(".:")
        out.append((name, first if len(first) <= 96 else first[:93] + "..."))
    return out


def read_yaml(path: str | Path) -> dict:
    """A config file's mapping of sections, as written (no defaults)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config {p}: file not found (pass --config conf/default.yaml)")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"config {p}: not valid YAML: {e}") from e
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config {p}: the top level must be a mapping of sections")
    return raw


def merged(base: dict, over: dict) -> dict:
    """`over` on `base`: sections and settings merge key by key; anything else replaces: a
    list, a value, and a table keyed by numbers (n-gram fractions: the file's table whole)."""
    out = dict(base)
    for k, v in over.items():
        table = isinstance(v, dict) and any(isinstance(x, int) for x in v)
        out[k] = merged(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) \
            and not table else v  # fmt: skip
    return out


def layers(path: str | Path | None) -> tuple[Path | None, dict, dict]:
    """(the base file, its sections, the given file's sections): every config is read over
    conf/default.yaml (`default_config_path`), so a partial file keeps its settings (Spark's
    among them); the base itself, or no base found, is read alone."""
    base = default_config_path()
    path = find_config(path) if path is not None else None
    own = read_yaml(path) if path is not None else {}
    if base is None or (path is not None and Path(path).resolve() == base.resolve()):
        return None, {}, own
    return base, read_yaml(base), own


def parse_overrides(items: list[str] | None) -> dict:
    """`--set section.key=value` settings as sections (values read as YAML: 0.5, true, [en, de],
    null); a malformed one is a ConfigError naming it."""
    out: dict = {}
    for item in items or []:
        key, sep, text = item.partition("=")
        parts = key.strip().split(".")
        if not sep or len(parts) < 2 or not all(parts):
            raise ConfigError(f"--set {item}: give section.key=value (e.g. langid.threshold=0.5)")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as e:
            raise ConfigError(f"--set {item}: the value is not valid YAML ({e})") from None
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {item}: {key} is inside a setting, not a section")
        node[parts[-1]] = value
    return out


def load_config(path: str | Path | None, overrides: list[str] | None = None) -> Config:
    """Load and validate a YAML config over conf/default.yaml; `None`: conf/default.yaml
    itself (the built-in defaults where there is none); `overrides` (`--set a.b=v`) last."""
    _, base, own = layers(path)
    try:
        return Config.model_validate(merged(merged(base, own), parse_overrides(overrides)))
    except ValidationError as e:
        raise ConfigError(_format_errors(str(path or default_config_path()), e)) from None


def _leaves(d: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_leaves(v, key + "."))
        else:
            out[key] = v
    return out


def explain(path: str | Path | None, overrides: list[str] | None = None
            ) -> list[tuple[str, object, str]]:  # fmt: skip
    """Every effective setting, its value, and where it came from: the given file, the base
    (conf/default.yaml), or the built-in default (a key neither file sets)."""
    path = find_config(path) if path is not None else None
    base_path, base, own = layers(path)
    cfg = load_config(path, overrides)
    mine, theirs, given = _leaves(own), _leaves(base), _leaves(parse_overrides(overrides))

    def origin(key: str) -> str:
        for src, keys in (("--set", given), (str(path), mine), (str(base_path), theirs)):
            if any(key == k or key.startswith(k + ".") for k in keys):
                return src
        return "built-in"

    return [(k, v, origin(k)) for k, v in _leaves(cfg.model_dump(mode="json")).items()]
