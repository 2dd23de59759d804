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
    new_alias_problem,
    no_alias,
    record_change,
    retire,
    rollback,
    rollback_preview,
    rollback_target,
    standing,
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
    shown_decision,
)

__all__ = ["CHAMPION", "DECISIONS", "AliasChange", "PromoteSection", "Promotion", "champion_alias", "compare", "decide",
           "demoted", "figure_value", "gate_run", "history", "holder", "holders", "is_alias", "markdown", "new_alias_problem",
           "no_alias", "promote", "record_change", "record_unchanged", "retire", "rollback", "rollback_preview", "rollback_target",
           "shown_decision", "standing"]
