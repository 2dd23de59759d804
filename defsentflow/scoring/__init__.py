"""Contextual scoring: contexts, scorers ``S(s, c)``, context sets, pair similarity and harvesting.

The library side of the contextual pair harvest (Sun et al.-style "sentence similarity from
contexts"): a sentence is described by how well it fits a set of corpus contexts, and two
sentences are similar when they fit the same contexts equally well.
"""

from __future__ import annotations

from defsentflow.scoring.config import HarvestConfig, load_harvest_config, resolve_input_path
from defsentflow.scoring.context_sets import (
    SELECTIONS,
    Selection,
    random_context_set,
    select_context_set,
    top_context_set,
)
from defsentflow.scoring.contexts import Context, CorpusLayout, jaccard, word_set
from defsentflow.scoring.discriminative import (
    ContextDiscriminator,
    DiscriminativeScorer,
    sample_negatives,
    train_discriminator,
)
from defsentflow.scoring.generative import GenerativeScorer
from defsentflow.scoring.harvest import (
    PAIRS_SCHEMA,
    BatchSpec,
    HarvestResources,
    choose_context_sets,
    collect_parts,
    eligible_sentences,
    harvest_batch,
    label_stats,
    plan_batches,
)
from defsentflow.scoring.origin import OriginPoint, PairLabeller
from defsentflow.scoring.pair_file import PairFile, label_file_batch, read_pair_file, sample_pairs
from defsentflow.scoring.pair_similarity import SCORES_SCHEMA, ScoreCache, pair_similarities
from defsentflow.scoring.scorer import ContextScorer, ContextualScorer, ScorerWeights
from defsentflow.scoring.vectors import cached_sentence_vectors, context_vectors, encode_sentences

__all__ = [
    "PAIRS_SCHEMA",
    "SCORES_SCHEMA",
    "SELECTIONS",
    "BatchSpec",
    "Context",
    "ContextDiscriminator",
    "ContextScorer",
    "ContextualScorer",
    "CorpusLayout",
    "DiscriminativeScorer",
    "GenerativeScorer",
    "HarvestConfig",
    "HarvestResources",
    "OriginPoint",
    "PairFile",
    "PairLabeller",
    "ScoreCache",
    "ScorerWeights",
    "Selection",
    "cached_sentence_vectors",
    "choose_context_sets",
    "collect_parts",
    "context_vectors",
    "eligible_sentences",
    "encode_sentences",
    "harvest_batch",
    "jaccard",
    "label_file_batch",
    "label_stats",
    "load_harvest_config",
    "pair_similarities",
    "plan_batches",
    "random_context_set",
    "read_pair_file",
    "resolve_input_path",
    "sample_negatives",
    "sample_pairs",
    "select_context_set",
    "top_context_set",
    "train_discriminator",
    "word_set",
]
