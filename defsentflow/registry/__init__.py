"""The model registry: aliases (``demo@champion``) that name one model at a time, with their history,
and the promotion gate that moves ``<config>@champion`` after a pipeline run only when the run's
model wins on the config's dev figure."""

from __future__ import annotations

from defsentflow.registry.aliases import (
    CHAMPION,
    AliasChange,
    champion_alias,
    demoted,
    history,
    holder,
    holders,
    is_alias,
    record_change,
    rollback,
    rollback_target,
)
from defsentflow.registry.gate import (
    DECISIONS,
    PromoteSection,
    Promotion,
    compare,
    decide,
    figure_value,
    gate_run,
    markdown,
    promote,
    record_unchanged,
)

__all__ = ["CHAMPION", "DECISIONS", "AliasChange", "PromoteSection", "Promotion", "champion_alias", "compare", "decide",
           "demoted", "figure_value", "gate_run", "history", "holder", "holders", "is_alias", "markdown", "promote",
           "record_change", "record_unchanged", "rollback", "rollback_target"]
