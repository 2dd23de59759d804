"""What every config section of the project shares (pipeline, dictionary, harvest, pretrain, PST,
evaluation, sweep): the base class, the type aliases of the choices sections and the library
share, YAML reading, error formatting and path resolution.

A leaf module (it imports nothing from the project but ``storage.paths`` and the task registry's
choices, ``eval_tasks``) so that each config module can use it.
"""

from __future__ import annotations

import copy
import difflib
import math
import os
import re
from collections.abc import Hashable, Sequence
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from defsentflow.eval_tasks import Protocol, TieRule
from defsentflow.limits import LIMITS
from defsentflow.storage.paths import repo_root, sample_dir

__all__ = ["LIMITS", "MAX_NESTING", "MAX_YAML_ALIASES", "MAX_YAML_NODES", "AliasBound", "Seed", "YamlAliasError", "expanded_size",
           "Autocast", "CandidateSet", "CorpusFormat", "DictionarySplit", "EvalPooling", "Pooling", "RetrievalKind",
           "RevdictMode", "RevdictProtocol", "SickSplit", "TieRule", "Similarity", "Method", "TrainPooling", "EntryEncoding", "ConfigSection", "format_errors", "load_yaml_text",
           "bundled_configs", "read_yaml_mapping", "require_distinct", "resolve_config", "resolve_data_dir", "resolve_path", "check_dotted_key", "dotted_overrides",
           "set_dotted"]

# -- choices shared by config sections and the library (one definition each) ---------------------
Autocast = Literal["none", "bf16", "fp16"]  # mixed precision on CUDA; ignored on CPU
Pooling = Literal["cls", "mean", "max", "prompt", "sbert_wk", "sbert_wk_mean"]  # how a sentence vector is read from an encoder
EvalPooling = Literal["cls", "mean", "max", "prompt"]  # a trained model's poolings (sbert_wk is a baseline)
DictionarySplit = Literal["train", "dev", "test"]
RevdictMode = Literal["head", "cosine", "hybrid"]  # reverse-dictionary scoring (see evaluation.revdict)
# which definitions are queries, one meaning for every dictionary task: the registry's PROTOCOLS
# (defsentflow/eval_tasks.py, evaluation/protocols.py); the rank of a tied gold entry: its TieRule
RevdictProtocol = Protocol
CandidateSet = Literal["all", "split"]  # reverse-dictionary candidates: every entry, or the split's
SickSplit = Literal["auto", "test", "trial", "train"]
CorpusFormat = Literal["auto", "text", "jsonl", "parquet"]
RetrievalKind = Literal["bm25", "tfidf", "dense"]
Similarity = Literal["cosine", "centered_cosine"]
Method = Literal["defsent", "defsent_plus"]  # DefSent: predict the word; DefSent+: predict the entry
TrainPooling = Literal["cls", "mean", "max"]  # how a definition is pooled in training
EntryEncoding = Literal["ac", "amp"]  # entry vectors: average of CLS (AC) or of mean pooling (AMP)

# -- maxima of every count a config gives: defsentflow.limits (one table for configs, flags, inputs,
# records and the server; docs/security.md lists it). A value past its maximum is a config error
# naming the file and the key.
Seed = Annotated[int, Field(ge=0, le=LIMITS["seed"])]


class ConfigSection(BaseModel):
    """The base of every config section: frozen, unknown keys refused, strict types.

    Strict means a value must already have the field's type: ``steps: true`` is not 1, and
    ``seed: "3"`` or ``lr: "2e-5"`` are not numbers (an int is still accepted for a float).

    Example:
        >>> class TrainSection(ConfigSection):
        ...     steps: int = 1
        >>> TrainSection.model_validate({"steps": 3}).steps
        3
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def format_errors(exc: ValidationError, prefix: str | None = None, model: type[BaseModel] | None = None) -> str:
    """``key.path: message; ...`` for a pydantic error (what config errors print).

    ``prefix`` is put in front of every key path (the section a sub-model was validated for).
    With ``model`` (the class validated), a key it does not know gets the nearest known key of its
    section (``pst.stepz: unknown key; did you mean 'steps'?``), or, with none near, the section's keys.
    """
    def loc(e: dict) -> str:
        parts = ((prefix,) if prefix else ()) + tuple(str(x) for x in e["loc"])
        return ".".join(parts) or "<top>"

    def message(e: dict) -> str:
        if e["type"] != "extra_forbidden" or model is None or not e["loc"]:
            return e["msg"]
        keys = _section_keys(model, e["loc"][:-1])
        if not keys:
            return e["msg"]
        near = difflib.get_close_matches(str(e["loc"][-1]), keys, n=1, cutoff=0.6)
        if near:
            return f"unknown key; did you mean {near[0]!r}?"
        return f"unknown key (keys here: {', '.join(keys)})"

    return "; ".join(f"{loc(e)}: {message(e)}" for e in exc.errors())


def _section_keys(model: type[BaseModel], path: Sequence[Any]) -> list[str]:
    """The keys a config accepts at ``path`` (a pydantic error's location without its last part):
    the fields of the model found there, following sub-models through optional, list and union types."""
    def models(annotation: Any) -> list[type[BaseModel]]:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [annotation]
        return [m for arg in getattr(annotation, "__args__", ()) for m in models(arg)]

    current = [model]
    for part in path:
        if isinstance(part, int) or not current:  # a list index: the item's model is already current
            continue
        fields = [m.model_fields[part] for m in current if part in m.model_fields]
        current = [m for f in fields for m in models(f.annotation)]
    return sorted({k for m in current for k in m.model_fields})


# YAML 1.2 floats: PyYAML follows YAML 1.1, where a float needs a '.' ("2e-5" is a string there).
_FLOAT_12 = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$")


MAX_YAML_ALIASES = LIMITS["yaml_aliases"]  # alias references (*name) in one YAML document
MAX_YAML_NODES = LIMITS["yaml_nodes"]  # nodes of a document once every alias is counted as a copy
MAX_NESTING = LIMITS["nesting"]  # lists and mappings inside one another


class YamlAliasError(yaml.YAMLError):
    """A YAML document whose aliases would expand beyond the bound (a "billion laughs"), or nested
    deeper than :data:`MAX_NESTING` levels."""


class AliasBound:
    """A loader mixin: at most :data:`MAX_YAML_ALIASES` aliases per document, at most
    :data:`MAX_NESTING` levels of nesting, and at most :data:`MAX_YAML_NODES` nodes once aliases
    are counted as copies, checked on the node graph after composing, before anything is
    constructed (so nothing is ever expanded)."""

    max_aliases = MAX_YAML_ALIASES
    max_nodes = MAX_YAML_NODES
    max_depth = MAX_NESTING

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):  # type: ignore[attr-defined]
            self._n_aliases = getattr(self, "_n_aliases", 0) + 1
            if self._n_aliases > self.max_aliases:
                mark = self.peek_event().start_mark  # type: ignore[attr-defined]
                raise YamlAliasError(f"more than {self.max_aliases} YAML aliases (line {mark.line + 1}); "
                                     "refused before expansion")
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > self.max_depth:  # the composer recurses once per level: stop before the stack does
                mark = self.peek_event().start_mark  # type: ignore[attr-defined]
                raise YamlAliasError(f"nested deeper than {self.max_depth} levels (line {mark.line + 1})")
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1

    def compose_document(self) -> Any:
        node = super().compose_document()  # type: ignore[misc]
        expanded_size(node, self.max_nodes)
        return node


def expanded_size(node: Any, limit: int = MAX_YAML_NODES) -> int:
    """Nodes under ``node`` with every alias counted as a copy (memoised: linear in the graph);
    :class:`YamlAliasError` as soon as the count passes ``limit``."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool, int]] = [(node, False, 1)]
    while stack:
        n, done, depth = stack.pop()
        if id(n) in sizes:
            continue
        children = [c for pair in n.value for c in pair] if isinstance(n, yaml.MappingNode) else \
            list(n.value) if isinstance(n, yaml.SequenceNode) else []
        if not done:
            if id(n) in open_:
                raise YamlAliasError(f"a YAML alias refers to a value that holds it (line {n.start_mark.line + 1})")
            if children and depth > MAX_NESTING:
                raise YamlAliasError(f"nested deeper than {MAX_NESTING} levels (line {n.start_mark.line + 1})")
            open_.add(id(n))
            stack.append((n, True, depth))
            stack.extend((c, False, depth + 1) for c in children if id(c) not in sizes)
            continue
        open_.discard(id(n))
        sizes[id(n)] = 1 + sum(sizes.get(id(c), 1) for c in children)
        if sizes[id(n)] > limit:
            raise YamlAliasError(f"the YAML expands to more than {limit} values through its aliases; "
                                 "refused before expansion")
    return sizes.get(id(node), 0)


class _ConfigLoader(AliasBound, yaml.SafeLoader):
    """Safe loading, with YAML 1.2 floats, duplicate keys refused and aliases bounded."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark)
            if isinstance(key, Hashable):
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


_ConfigLoader.yaml_implicit_resolvers = {k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
for _first in "-+.0123456789":
    _ConfigLoader.yaml_implicit_resolvers[_first] = [
        (tag, rx) for tag, rx in _ConfigLoader.yaml_implicit_resolvers.get(_first, []) if tag != "tag:yaml.org,2002:float"
    ]
_ConfigLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+.0123456789"))


def load_yaml_text(text: str) -> Any:
    """Parse config YAML: safe types only, YAML 1.2 floats (``2e-5`` is a float), duplicate keys refused,
    aliases bounded (:class:`AliasBound`).

    Raises:
        yaml.YAMLError: invalid YAML or a duplicate key (with its line).
    """
    return yaml.load(text, Loader=_ConfigLoader)  # a SafeLoader subclass


def all_finite(value: Any) -> bool:
    """Whether every float in ``value`` (a parsed YAML value: nested lists and mappings) is finite."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return False
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return True


def read_yaml_mapping(path: str | os.PathLike, *, what: str = "file") -> dict[str, Any]:
    """A YAML file whose top level is a mapping; errors name the file.

    Raises:
        FileNotFoundError: no such file (the message says which ``what``).
        ValueError: not UTF-8, not valid YAML, a duplicate key, or not a mapping at the top level.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{what} not found: {p}")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: not UTF-8 text (byte {exc.start}: {exc.object[exc.start:exc.start + 1]!r})") from None
    try:
        data: Any = load_yaml_text(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{p}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping at the top level")
    return data


def require_distinct(values: Sequence[Hashable], what: str) -> None:
    """A validator's check: ``values`` (names, seeds, labels) must not repeat."""
    if len(set(values)) != len(values):
        raise ValueError(f"{what} must be distinct, got {list(values)}")


def resolve_path(path: str | os.PathLike, *, must_exist: bool = True, what: str | None = None) -> Path:
    """A relative path from the current directory, else from the folder holding the package: the
    checkout, or ``site-packages`` for an installed wheel (so ``defsentflow/sample/...`` in a config
    names the sample data shipped in the package).

    Raises:
        FileNotFoundError: ``must_exist`` and neither exists (the message starts with ``what``, the
            config key the path came from, when given).
    """
    p = Path(path).expanduser()
    if p.is_absolute():
        candidates = [p]
    elif p.parts[:2] == ("defsentflow", "sample"):  # the packaged sample, never a copy in the current directory
        candidates = [sample_dir().joinpath(*p.parts[2:])]
    else:
        candidates = [Path.cwd() / p, repo_root() / p]
    for c in candidates:
        if c.exists():
            return c.resolve()
    if must_exist:
        if what:
            raise FileNotFoundError(f"{what}: not found: {path}")
        if len(candidates) == 1:  # an absolute path: naming its folder again says nothing new
            raise FileNotFoundError(f"not found: {path}")
        bases = list(dict.fromkeys(str(b) for b in (Path.cwd(), repo_root())))
        raise FileNotFoundError(f"not found: {path} (relative to {' or '.join(bases)})")
    return candidates[0]


def bundled_configs() -> list[str]:
    """Names of the configs shipped inside the package (``defsentflow/configs/*.yaml``): ``demo``."""
    folder = resources.files("defsentflow") / "configs"
    return sorted(f.name.removesuffix(".yaml") for f in folder.iterdir() if f.name.endswith(".yaml"))


def resolve_config(value: str | os.PathLike) -> Path:
    """A pipeline config: a file (as :func:`resolve_path` finds it), else a config shipped with the
    package, by name (``defsentflow run demo``: works from an installed wheel, anywhere).

    Raises:
        FileNotFoundError: neither (the message lists the bundled names).
    """
    path = resolve_path(value, must_exist=False)
    if path.is_file():
        return path
    name = str(value).removesuffix(".yaml")
    if name in bundled_configs():
        return Path(str(resources.files("defsentflow") / "configs" / f"{name}.yaml")).resolve()
    raise FileNotFoundError(f"config not found: {value} (a YAML file, or a bundled config: {', '.join(bundled_configs())})")


def resolve_data_dir(data_dir: str | os.PathLike | None) -> Path | None:
    """An existing data directory for ``data_dir`` (as :func:`resolve_path` finds it), or None when
    it is unset or missing (configs say ``../shared/data``, meaning beside the checkout)."""
    if not data_dir:
        return None
    p = resolve_path(data_dir, must_exist=False)
    return p if p.is_dir() else None


# -- dotted-key overrides (a sweep's and a claims file's `set:`) -----------------------------------
def check_dotted_key(key: str, owner: str = "the sweep (<sweep>-<point id>)") -> None:
    """A dotted key into a pipeline config (``pst.lr``), never its ``name`` (``owner`` sets that)."""
    if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
        raise ValueError(f"{key!r} is not a dotted key such as pst.lr")
    if key.split(".")[0] == "name":
        raise ValueError(f"the config's name is set by {owner}; it cannot be changed by a key")


def set_dotted(config: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``config`` with ``key`` (``a.b.c``; list positions as numbers) set to ``value``.

    Missing mappings on the way are created (a ``null`` section becomes a mapping); the pipeline
    config's validation then says whether the key exists.

    Example:
        >>> set_dotted({"pst": {"lr": 1e-5}}, "pst.lr", 2e-6)
        {'pst': {'lr': 2e-06}}
    """
    out = copy.deepcopy(config)
    node: Any = out
    parts = key.split(".")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ValueError(f"{key}: {'.'.join(parts[:i]) or '<top>'} is a list of {len(node)}; "
                                 f"{part!r} is not a position in it")
            if last:
                node[int(part)] = copy.deepcopy(value)
            else:
                node = node[int(part)]
            continue
        if not isinstance(node, dict):
            raise ValueError(f"{key}: {'.'.join(parts[:i])} is a value ({node!r}), not a mapping")
        if last:
            node[part] = copy.deepcopy(value)
        else:
            if node.get(part) is None:
                node[part] = {}
            node = node[part]
    return out


def dotted_overrides(owner: str = "the sweep (<sweep>-<point id>)") -> Any:
    """The type of a ``set:`` mapping (sweep, claims file): dotted key -> value, each key checked
    by :func:`check_dotted_key` (``owner`` names who sets the config's name)."""
    def check(v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            check_dotted_key(key, owner)
        return v

    return Annotated[dict[str, Any], AfterValidator(check)]

