"""What each claim says, and what the papers report for it.

The papers: DefSent+ (Liu 2024, arXiv 2405.16153) and DefSent (Tsukagoshi, Sasano & Takeda,
ACL 2021). Where this project has no exact figure of the paper to quote, the paper column states
the claim's direction and where it is made, never a number from memory.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CLAIMS", "ClaimText"]


@dataclass(frozen=True)
class ClaimText:
    statement: str      # the claim, as the table prints it
    paper: str          # the paper's figure or direction, with its source
    metric: str         # what is measured here


_STS = "STS-B dev Spearman x100, mean pooling"

CLAIMS: dict[str, ClaimText] = {
    "defsent_plus_beats_defsent": ClaimText(
        "DefSent+ beats DefSent on STS",
        "DefSent+ > DefSent on STS (DefSent+ Table 2)",
        f"{_STS}; DefSent+ = PST step 1 (Mean, AMP); DefSent = word prediction through the MLM head"),
    "later_steps_beat_step_1": ClaimText(
        "PST's later steps beat step 1",
        "best step > step 1; step 2 may be a transition below step 1 (DefSent+ Sec. PST, Eq. 11)",
        f"{_STS}; best candidate of step 1 vs of the last step N (one step each side)"),
    "separate_beats_continuing": ClaimText(
        "separate training beats continuing the previous step's model",
        "the S of PST: each step trains a fresh copy of the original model (DefSent+ Sec. PST)",
        f"{_STS}; best of steps 2..N, continuing (separate: false) vs separate"),
    "more_entries_help": ClaimText(
        "more dictionary entries help",
        "dataset c < b < a, the smaller dictionary below the larger (DefSent+)",
        f"{_STS}; PST step 1 on max_train_entries per arm"),
    "ica_candidate_helps": ClaimText(
        "the ICA candidate at step 3 beats the plain one",
        "step 3 with ICA(AMP) as an extra candidate > without; BERT's best results use it (DefSent+ Eq. 11)",
        f"{_STS}; best candidate at the ICA step, plain entry matrix vs ICA-transformed"),
    "entry_space_more_isotropic": ClaimText(
        "the entry space grows more isotropic over the steps",
        "entries move to a quasi-isotropic, then (ICA) isotropic space (DefSent+ title, Sec. PST)",
        "entry matrix statistic at step 1 (built by the raw encoder) vs the last step"),
    "sbert_wk_beats_mean": ClaimText(
        "SBERT-WK beats mean pooling on the raw encoder",
        "SBERT-WK > mean pooling of the raw encoder (SBERT-WK, Wang & Kuo 2020)",
        f"{_STS}; the raw (masked-LM) encoder, per pretraining seed"),
    "defsent_raises_wordpred": ClaimText(
        "DefSent training raises word prediction",
        "trained > pre-trained on word prediction MRR / top-k (DefSent Table 2)",
        "word prediction MRR@10 as DefSent's get_mrr over every test definition whose word is one vocabulary "
        "token (all-definitions, DefSent's Table 2 protocol; the MLM head)"),
}
