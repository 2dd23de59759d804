"""What each claim says, and what the papers report for it.

The papers: DefSent+ (Liu 2024, arXiv 2405.16153) and DefSent (Tsukagoshi, Sasano & Takeda,
ACL 2021). Where this project has no exact figure of the paper to quote, the paper column states
the claim's direction and where it is made, never a number from memory.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CLAIMS", "PAPER_DEFSENT", "PAPER_PST", "ClaimText", "departures"]


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
        "PST's last step beats step 1",
        "best step > step 1; step 2 may be a transition below step 1 (DefSent+ Sec. PST, Eq. 11)",
        f"{_STS}; best candidate of step 1 vs of the last step N (one step each side)"),
    "separate_beats_continuing": ClaimText(
        "separate training beats continuing the previous step's model",
        "the S of PST: each step trains a fresh copy of the original model (DefSent+ Sec. PST)",
        f"{_STS}; best of steps 2..N, continuing (separate: false) vs separate"),
    "more_entries_help": ClaimText(
        "more entries of one dictionary help (random entry subsets, not the paper's datasets)",
        "dataset c < b < a, the smaller dictionary below the larger (DefSent+; three datasets, batch 16 / 16 / 32); "
        "here three random entry subsets of one dictionary at one batch size, which tests only the size",
        f"{_STS}; PST step 1 on max_train_entries per arm"),
    "ica_candidate_helps": ClaimText(
        "the ICA candidate at step 3 beats the plain one",
        "step 3 with ICA(AMP) as an extra candidate > without; BERT's best results use it (DefSent+ Eq. 11)",
        f"{_STS}; best candidate at the ICA step, plain entry matrix vs ICA-transformed"),
    "entry_space_more_isotropic": ClaimText(
        "the entry space grows more isotropic over the steps",
        "entries move to a quasi-isotropic, then (ICA) isotropic space (DefSent+ title, Sec. PST)",
        "entry matrix statistic at every step (step 1's built by the raw encoder), each step against the one before"),
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


# The DefSent+ paper's BERT-base setting (configs/bert-base-defsent-plus.yaml, checked against the
# paper by tests/training/test_paper_configs.py) and DefSent's: what a control's departures are measured from.
PAPER_PST = {"lr_per_step": (5e-5, 4e-5, 3e-5), "combinations": 4, "seeds": 10, "max_length": 150,
             "selection": "the STS average (Table 8)", "use_pooler": True, "layers": 12, "hidden": 768}
PAPER_DEFSENT = {"lr": "2^x * 1e-6 chosen on dev (BERT-base CLS: 5.66e-6, Table 5)", "max_length": 512}


def departures(base: dict, spec: object) -> list[str]:
    """Every way the claims' control departs from the papers' setting, read from its base config and
    claims file (``spec``: :class:`~defsentflow.claims.config.ClaimsFile`): one phrase each, for the
    table's scope line, the run report and the catalog (``claim_results.departures``)."""
    pst = base.get("pst") or {}
    out = []
    lrs = pst.get("lr_per_step")
    if not lrs or tuple(lrs)[:3] != PAPER_PST["lr_per_step"]:
        ours = " / ".join(f"{x:g}" for x in lrs) if lrs else f"{pst.get('lr', 2e-5):g} at every step"
        out.append(f"learning rate {ours} (the paper: 5e-5 / 4e-5 / 3e-5 per step for BERT-base, Table 5; a raw "
                   "model's step-1 rate from {5e-5, 4e-5, 3e-5} on dev, Appendix A)")
    grid = pst.get("grid") or []
    if len(grid) != PAPER_PST["combinations"]:
        combos = ", ".join(f"{g.get('pooling')}/{g.get('entry_encoding')}" for g in grid) or "the default"
        count = "one combination" if len(grid) <= 1 else f"{len(grid)} combinations"
        out.append(f"{count} ({combos}) instead of Table 8's four (CLS/Mean x AC/AMP) chosen by the mean over seeds")
    seeds = list(getattr(spec, "seeds", []) or [])
    out.append(f"one seed per PST chain, {len(seeds)} chains paired by seed (the paper: the mean of "
               f"{PAPER_PST['seeds']} runs)")
    if pst.get("max_length", 64) != PAPER_PST["max_length"]:
        out.append(f"{pst.get('max_length', 64)} tokens (the reference: 150)")
    if pst.get("selection", "stsb-dev") == "stsb-dev":
        out.append(f"selection and every PST figure on STS-B dev (the paper: {PAPER_PST['selection']})")
    arch = (base.get("pretrain") or {}).get("architecture") or {}
    if arch:
        steps = (base.get("pretrain") or {}).get("max_steps")
        out.append(f"a {arch.get('layers')}-layer, {arch.get('hidden')}-wide BERT pretrained here"
                   + (f" ({steps} masked-LM steps)" if steps else "")
                   + f" (the paper: BERT-base, {PAPER_PST['layers']} x {PAPER_PST['hidden']}, and larger)")
    elif pst.get("base_model"):
        out.append(f"base model {pst.get('base_model')} (the paper: BERT and RoBERTa base and large)")
    if not pst.get("use_pooler", True):
        out.append("DefSent+ arms without the pooler (the paper trains through it)")
    entries = pst.get("max_train_entries")
    out.append("WordNet (OEWN) instead of the Oxford dictionary" + (f", {entries:,} training entries" if entries else "")
               + ("" if pst.get("train_entries") == "all" else " of its train split (the paper trains on every entry)"))
    if pst.get("batching", "length") == "length":
        out.append("batches grouped by length (shuffled, then length-sorted within chunks of 50 batches; the "
                   "reference samples batches at random: batching: random)")
    pooling = (base.get("eval") or {}).get("pooling", "mean")
    out.append(f"STS measured with {pooling} pooling only (the papers report each model's best pooling)")
    ds = getattr(spec, "defsent", None) or {}
    claims = list(getattr(spec, "claims", []) or [])
    if "more_entries_help" in claims:
        sizes = " / ".join(f"{n:,}" for n in getattr(spec, "entries", []))
        out.append(f"'more entries' on random entry subsets of one dictionary ({sizes}) at one batch size "
                   f"({pst.get('batch_size') or 32}), not the paper's datasets c < b < a (batch 16 / 16 / 32)")
    if ds and any(c in claims for c in ("defsent_plus_beats_defsent", "defsent_raises_wordpred")):
        if entries:
            out.append(f"DefSent's arm on {entries:,} single-token entries (its head predicts only those; the cap is "
                       f"taken after that filter), DefSent+'s on {entries:,} entries of any length: the two train on "
                       "different entries and numbers of definitions")
        if ds.get("lr") is not None:
            out.append(f"DefSent at lr {ds['lr']:g} (the paper: {PAPER_DEFSENT['lr']})")
        if ds.get("max_length", 512) != PAPER_DEFSENT["max_length"]:
            out.append(f"DefSent at {ds.get('max_length')} tokens (the reference: the tokenizer's maximum)")
    return out
