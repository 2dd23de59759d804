"""The harvest/surrogate YAML config: pydantic models with ``extra="forbid"`` (the boundary).

The library reads :class:`HarvestConfig` itself (batches, context sets and labels take it whole).

Example:
    >>> cfg = load_harvest_config("configs/harvest-bbc.yaml")
    >>> cfg.pairs.n_pairs
    20000
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from defsentflow.compute import ComputeSection
from defsentflow.config_tools import (
    LIMITS,
    ConfigSection,
    CorpusFormat,
    RetrievalKind,
    Seed,
    Similarity,
    format_errors,
    read_yaml_mapping,
    resolve_path,
)
from defsentflow.scoring.context_sets import Selection
from defsentflow.storage.identifiers import IDENTIFIER_PATTERN

__all__ = ["HarvestConfig", "RetrievalKind", "load_harvest_config", "resolve_input_path"]


class CorpusSection(ConfigSection):
    name: str = Field(..., pattern=IDENTIFIER_PATTERN, description="corpus name in the catalog (a plain name like 'bbc')")
    paths: list[str] = Field(default_factory=list, description="sources to ingest; empty: use the ingested corpus")
    fmt: CorpusFormat = "auto"
    chunk_sentences: int = Field(8, ge=1, le=LIMITS["count"])


class RetrievalSection(ConfigSection):
    kind: RetrievalKind = "bm25"
    top_n: int = Field(500, ge=1, le=LIMITS["count"],
                       description="chunks retrieved per sentence (>= contexts.set_size)")


class ContextSection(ConfigSection):
    k: int = Field(1, ge=1, le=8, description="sentences on each side of a slot")
    set_size: int = Field(500, ge=1, le=LIMITS["count"], description="|C_s| (Sun et al. use 500, Table 6)")
    max_jaccard: float = Field(0.5, gt=0.0, le=1.0)
    selection: Selection = Field("diverse", description="diverse (two-step with the diversity rules) | top (without "
                                 "them) | random (uniform corpus slots)")


class DiscriminativeSection(ConfigSection):
    encoder: str = "bundled:all-MiniLM-L6-v2"
    hidden: int = Field(256, ge=4, le=LIMITS["width"])
    dropout: float = Field(0.1, ge=0.0, lt=1.0)
    epochs: int = Field(8, ge=1, le=LIMITS["epochs"])
    batch_size: int = Field(256, ge=8, le=LIMITS["batch"])
    lr: float = Field(1e-3, gt=0)
    heldout_share: float = Field(0.1, gt=0.0, lt=0.5)
    weight_decay: float = Field(1e-4, ge=0.0)
    same_doc_share: float = Field(0.5, ge=0.0, le=1.0, description="negatives drawn from the slot's own document")
    seed: Seed = 0
    min_accuracy: float | None = Field(None, ge=0.0, le=1.0, description="fail when held-out accuracy is lower")


class WeightsSection(ConfigSection):
    l1: float = 1.0
    l2: float = 0.0
    l3: float = 0.0
    l4: float = 0.0


class ScorerSection(ConfigSection):
    weights: WeightsSection = WeightsSection()
    lm: str | None = Field(None, description="causal LM (path or Hugging Face name) for the l2..l4 terms")
    lm_batch_size: int = Field(16, ge=1, le=LIMITS["batch"])
    lm_device: str = "cpu"
    discriminative: DiscriminativeSection = DiscriminativeSection()

    @model_validator(mode="after")
    def _lm_needed(self) -> ScorerSection:
        w = self.weights
        if (w.l2 or w.l3 or w.l4) and not self.lm:
            raise ValueError("scorer.weights l2..l4 are non-zero but scorer.lm is not set")
        if not (w.l1 or w.l2 or w.l3 or w.l4):
            raise ValueError("scorer.weights are all zero")
        return self


class PairsSection(ConfigSection):
    n_pairs: int = Field(20000, ge=1, le=LIMITS["count"])
    neighbour_share: float = Field(0.5, ge=0.0, le=1.0, description="share of retrieval-neighbour pairs; rest random")
    pairs_per_sentence: float = Field(4.0, gt=0, description="pairs per seed sentence (sets the number of seeds)")
    neighbour_chunks: int = Field(5, ge=1, le=LIMITS["count"],
                                  description="neighbours come from this many top other-document chunks")
    min_words: int = Field(4, ge=1, le=LIMITS["count"])
    max_words: int = Field(60, ge=1, le=LIMITS["count"])
    extra_sentences: str | None = Field(None, description="text file (one per line) or Parquet with a 'text' column")
    similarity: Similarity = "cosine"
    source: Literal["corpus", "file"] = Field("corpus", description="corpus: neighbour and random pairs of corpus "
                                              "sentences | file: the sentence pairs of pairs.file (labelled the same way)")
    file: str | None = Field(None, description="unlabelled sentence pairs (pairs.source: file): a tab-separated text "
                             "file (the two pairs.file_columns are read, nothing else) or Parquet with s1, s2 columns")
    file_columns: list[int] = Field([0, 1], description="0-based sentence columns of a tab-separated "
                                    "pairs.file (STS-B csv: [5, 6]; SICK: [1, 2] with file_header)")
    file_header: bool = Field(False, description="the tab-separated pairs.file starts with a header line")

    @model_validator(mode="after")
    def _file_source(self) -> PairsSection:
        if self.source == "file" and not self.file:
            raise ValueError("pairs.source is 'file' but pairs.file is not set")
        c = self.file_columns
        if len(c) != 2 or min(c) < 0 or c[0] == c[1]:
            raise ValueError("pairs.file_columns must be two distinct column numbers >= 0")
        return self


class SupervisedSection(ConfigSection):
    """Sun et al.'s supervised row (their Table 2): the trained surrogate fine-tuned on gold-scored pairs, a
    cosine-similarity regression (``CosineSimilarityLoss`` on score / ``score_max``), as sentence-transformers'
    STS-B example (``training_stsbenchmark.py``: batch 16, 4 epochs, 10% warm-up, lr 2e-5)."""

    file: str = Field("../shared/data/sts/STSBenchmark/sts-train.csv",
                      description="tab-separated gold-scored pairs (STS-B train; never a dev or test split)")
    file_columns: list[int] = Field([5, 6], description="0-based sentence columns (STS-B csv: 5, 6)")
    score_column: int = Field(4, ge=0, le=LIMITS["list_items"], description="0-based gold-score column (STS-B csv: 4)")
    score_max: float = Field(5.0, gt=0, description="gold scores are divided by this: onto [0, 1], the cosine scale")
    epochs: int = Field(4, ge=1, le=LIMITS["epochs"])
    batch_size: int = Field(16, ge=2, le=LIMITS["batch"])
    lr: float = Field(2e-5, gt=0)
    warmup_ratio: float = Field(0.1, ge=0.0, lt=1.0)

    @model_validator(mode="after")
    def _columns(self) -> SupervisedSection:
        if len(set([*self.file_columns, self.score_column])) != 3 or len(self.file_columns) != 2 or min(self.file_columns) < 0:
            raise ValueError("supervised: file_columns must be two distinct columns >= 0, apart from score_column")
        return self


class SurrogateSection(ConfigSection):
    base_encoder: str = "bundled:all-MiniLM-L6-v2"
    name: str = Field("surrogate", pattern=IDENTIFIER_PATTERN, description="model id prefix in the catalog")
    epochs: int = Field(1, ge=1, le=LIMITS["epochs"])
    batch_size: int = Field(32, ge=2, le=LIMITS["batch"])
    lr: float = Field(2e-5, gt=0)
    warmup_ratio: float = Field(0.1, ge=0.0, lt=1.0)
    max_pairs: int | None = Field(None, ge=1, le=LIMITS["count"])
    max_seq_length: int = Field(128, ge=8, le=LIMITS["tokens"])
    save_steps: int = Field(200, ge=1, le=LIMITS["opt_steps"],
                            description="checkpoint every this many steps (for resume)")
    seed: Seed = 0
    device: str = "auto"
    threads: int | None = Field(None, ge=1, le=LIMITS["workers"],
                                description="torch CPU threads while training (None: as the process)")
    loss: Literal["cosine", "cosent", "angle"] = Field("cosine", description="sentence-transformers loss: "
                                                       "CosineSimilarityLoss | CoSENTLoss | AnglELoss")
    labels: Literal["none", "minmax", "rank"] = Field("none", description="rescale the scores before training: "
                                                      "as they are | onto [0, 1] | rank quantiles in [0, 1]")
    shuffle_labels: bool = Field(False, description="permute the labels among the pairs: the broken-on-purpose "
                                 "variant of the positive control (tests/integration/test_surrogate_control.py)")
    supervised: SupervisedSection | None = Field(
        None, description="then fine-tune the surrogate on gold-scored pairs (Sun et al., Table 2's supervised row): "
                          "a second model, <name>-supervised; the surrogate itself is unchanged")


class HarvestConfig(ConfigSection):
    """The whole ``harvest-*.yaml`` file."""

    corpus: CorpusSection
    retrieval: RetrievalSection = RetrievalSection()
    contexts: ContextSection = ContextSection()
    scorer: ScorerSection = ScorerSection()
    pairs: PairsSection = PairsSection()
    batch_size: int = Field(500, ge=1, le=LIMITS["batch"],
                            description="seed sentences per batch (one Parquet part each)")
    seed: Seed = 0
    threads: int | None = Field(None, ge=1, le=LIMITS["workers"],
                                description="torch CPU threads for scorer training and scoring "
                                "(None: torch's default; 1 is faster for this small MLP on a busy machine)")
    compute: ComputeSection = Field(ComputeSection(), description="where the batches run (the ``compute:`` "
                                    "section every stage shares; it replaced ``dask:``)")
    surrogate: SurrogateSection = SurrogateSection()
    root: str | None = Field(None, description="data root (default $DEFSENTFLOW_HOME or ./storage)")

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "dask" in data:
            raise ValueError("dask: was renamed compute: (keys address, local_workers; worker processes, one thread each)")
        return data

    @model_validator(mode="after")
    def _sizes(self) -> HarvestConfig:
        if self.retrieval.top_n < self.contexts.set_size:
            raise ValueError(f"retrieval.top_n ({self.retrieval.top_n}) must be >= contexts.set_size "
                             f"({self.contexts.set_size}): C_s takes at most one context per chunk")
        if self.pairs.min_words > self.pairs.max_words:
            raise ValueError("pairs.min_words must be <= pairs.max_words")
        return self


def resolve_input_path(path: str | os.PathLike, what: str) -> Path:
    """An existing input path named by config key ``what`` (:func:`defsentflow.config_tools.resolve_path`)."""
    return resolve_path(path, what=what)


def load_harvest_config(path: str | os.PathLike) -> HarvestConfig:
    """Read and validate a YAML config; errors name the file and the offending key."""
    path = Path(path)
    data = read_yaml_mapping(path, what="config")
    try:
        return HarvestConfig.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{path}: invalid config: {format_errors(exc, model=HarvestConfig)}") from exc
