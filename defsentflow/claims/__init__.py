"""The papers' claims, measured by the product itself: ``defsentflow claims CONFIG``.

A claims file (:mod:`defsentflow.claims.config`) names a base pipeline config and the claims to
test; each claim's arms (:mod:`~defsentflow.claims.arms`) are pipeline runs of that base with a few
values changed; their figures are read from the catalog (:mod:`~defsentflow.claims.figures`),
aggregated over seeds and judged (:mod:`~defsentflow.claims.judge`), and recorded in the
``claims`` view (:mod:`~defsentflow.claims.run`). Prefect-free: the caller passes the function
that runs one pipeline config.
"""

from defsentflow.claims.arms import ArmPlan, arm_name, plan_arms
from defsentflow.claims.config import CLAIM_IDS, ClaimsConfig, ClaimsFile
from defsentflow.claims.figures import CatalogFigures, claim_series
from defsentflow.claims.judge import Judgement, Series, judge, mean_sd, series_text
from defsentflow.claims.load import load_claims
from defsentflow.claims.papers import CLAIMS, ClaimText
from defsentflow.claims.run import ClaimRow, ClaimsOutcome, claim_rows, measure_claims, record_claims, run_claims

__all__ = ["ArmPlan", "CLAIMS", "CLAIM_IDS", "CatalogFigures", "ClaimRow", "ClaimText", "ClaimsConfig", "ClaimsFile",
           "ClaimsOutcome", "Judgement", "Series", "arm_name", "claim_rows", "claim_series", "judge", "load_claims",
           "mean_sd", "measure_claims", "plan_arms", "record_claims", "run_claims", "series_text"]
