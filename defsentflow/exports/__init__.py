"""Exports a user takes away: encoders as sentence-transformers folders with a model card, datasets as
Hugging Face ``DatasetDict`` folders with a dataset card."""

from __future__ import annotations

from defsentflow.exports.datasets import export_dictionary, export_pairs
from defsentflow.exports.model import export_model, model_facts

__all__ = ["export_dictionary", "export_model", "export_pairs", "model_facts"]
