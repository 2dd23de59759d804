"""The promotion gate: after a completed pipeline run, its model replaces the champion only when it wins.

The run's selected model is compared with the holder of ``<config name>@champion`` on one dev figure,
by its registry name (a leaderboard column: ``revdict_dev_unseen_q50_len32_cosine_mrr``, with every
setting that changes the value in it). By default that is the run's own selection figure (PST's
``pst_runs.selection_column``; a run without PST: STS-B dev), or ``promote.metric``. Both figures are
read from the catalog (``model_scores``), so the champion is judged by a figure of the same name or
not at all: a champion without a figure of that name (the protocol changed) is **not comparable**
and stays. The new model must beat it as reported (:mod:`defsentflow.ties`: figures equal to 4
significant digits tie) and by more than ``promote.min_delta``; a tie keeps the champion.
The first run of a config sets it. A model a rollback took the alias away from is never promoted
again by the gate (a person decided; ``defsentflow promote`` can).

The decision is one of :data:`DECISIONS`; it is the ``runs`` row's ``promotion`` field, a line of the
run's summary, the Prefect flow run's state name and tag, and a Prefect artifact (:func:`markdown`).

Example:
    >>> decision = gate_run(Catalog(), config, "demo-1a2b3c4d", {"model_id": "dsp-73df1180e82d"})
    >>> decision.line()
    'promoted: dsp-73df1180e82d replaces dsp-ca7a747f5b31 as demo@champion: revdict_dev_..._mrr 0.01674 > 0.01457'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from pydantic import Field, field_validator

from defsentflow.config_tools import ConfigSection
from defsentflow.eval_tasks import SELECTION_METRICS
from defsentflow.registry.aliases import AliasChange, champion_alias, changes_on, demoted, record_change, standing
from defsentflow.storage.catalog import Catalog
from defsentflow.ties import beats, tied

__all__ = ["DECISIONS", "Decision", "PromoteSection", "Promotion", "compare", "decide", "figure_value", "gate_run",
           "markdown", "promote", "record_unchanged", "run_figure", "shown_decision"]

Decision = Literal["promoted", "kept", "not-comparable", "unchanged"]
DECISIONS: tuple[str, ...] = get_args(Decision)
_DEV_FIGURE = re.compile(r"^[a-z0-9]+_dev(_[a-z0-9]+)+$")  # <family>_dev_..._<metric>: eval_tasks.metric_column


class PromoteSection(ConfigSection):
    """``promote:``: when a run's model replaces ``<name>@champion``.

    Example:
        >>> PromoteSection.model_validate({"metric": "stsb_dev_spearman", "min_delta": 0.5}).min_delta
        0.5
    """

    metric: str | None = Field(None, description="the dev figure a new model must win on, by its registry name (a "
                                                 "leaderboard column, e.g. stsb_dev_spearman); default: the run's own "
                                                 "selection figure")
    min_delta: float = Field(0.0, ge=0.0, le=1e6, allow_inf_nan=False,
                             description="the new figure must exceed the champion's by more than this (and differ "
                                         "at the 4 significant digits figures are reported at); ties keep it")

    @field_validator("metric")
    @classmethod
    def _dev_only(cls, value: str | None) -> str | None:
        if value is not None and not _DEV_FIGURE.fullmatch(value):
            raise ValueError(f"{value[:80]!r} is not a dev figure's name (<family>_dev_..._<metric>, as the leaderboard's "
                             "columns: stsb_dev_spearman): a choice reads dev figures only")
        return value


@dataclass(frozen=True)
class Promotion:
    """The gate's decision on one run (or a manual promotion's comparison)."""

    decision: str                    # one of DECISIONS
    alias: str
    model_id: str | None             # the run's model (the candidate)
    champion: str | None             # the holder before
    figure: str | None
    value: float | None              # the candidate's figure
    champion_value: float | None
    min_delta: float
    reason: str
    why: str = ""                    # the reason in a word or three: worse, tied, rolled back, ...

    def line(self) -> str:
        """The decision in one line (the run summary's, the Prefect state's message)."""
        return f"{self.decision}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"


def decide(alias: str, model_id: str, value: float | None, champion: AliasChange | None, champion_value: float | None,
           figure: str | None, min_delta: float, rolled_back: Mapping[str, AliasChange] | None = None) -> Promotion:
    """The gate's rule (see the module doc), on figures already read."""
    held = champion.model_id if champion else None

    def out(decision: str, why: str, reason: str) -> Promotion:
        return Promotion(decision, alias, model_id, held, figure, value, champion_value, min_delta, reason, why)

    name = figure or "no figure"
    if champion is None:
        return out("promoted", "first model", f"{model_id} is {alias}'s first model ({name} {_fmt(value)})")
    if model_id == held:
        return out("kept", "re-run of the champion", f"{model_id} is {alias} already ({name} {_fmt(value)})")
    if rolled_back and model_id in rolled_back:
        back = rolled_back[model_id]
        return out("kept", "rolled back", f"{model_id} was rolled back from {alias} ({str(back.changed_at)[:19]}, by "
                                          f"{back.who}); the gate leaves {held} there (`defsentflow promote {model_id} "
                                          f"--alias {alias}` promotes it by hand)")
    if figure is None or value is None:
        return out("not-comparable", "no figure", f"{held} stays {alias}: the catalog holds no {name} of {model_id}")
    if champion_value is None:
        since = f" (it was promoted by {champion.figure})" if champion.figure and champion.figure != figure else ""
        return out("not-comparable", "no figure", f"{held} stays {alias}: it has no {figure} figure{since}, the protocol "
                                                  f"of this run; measure it (`defsentflow eval {alias} ...`) or promote by hand")
    if beats(value, champion_value) and value > champion_value + min_delta:
        return out("promoted", "better", f"{model_id} replaces {held} as {alias}: {figure} {_fmt(value)} > "
                                         f"{_fmt(champion_value)}" + (f" + {min_delta:g}" if min_delta else ""))
    why = "tied" if tied(value, champion_value) else "worse" if value < champion_value else "within min_delta"
    verb = {"tied": "ties", "worse": "is below", "within min_delta": "is within min_delta of"}[why]
    return out("kept", why, f"{held} stays {alias}: {model_id}'s {figure} {_fmt(value)} {verb} its {_fmt(champion_value)}"
                            + (" (a tie at the reported precision keeps the champion)" if why == "tied" else "")
                            + (f" (+ {min_delta:g} needed)" if min_delta else ""))


def shown_decision(decision: str | None, why: str | None) -> str | None:
    """A decision as listings show it: ``kept: worse``, ``promoted: better`` (None: the run had none)."""
    return f"{decision}: {why}" if decision and why else decision


def figure_value(con: Any, model_id: str, figure: str | None) -> float | None:
    """``model_id``'s figure named ``figure`` (newest, under any of its ids; the pooling it was filed
    with first), or None: it has none of that name."""
    if not figure:
        return None
    row = con.execute(
        'SELECT s.value FROM model_scores AS s JOIN model_ids AS i ON i.display_id = s.model_id AND i.model_id = $m '
        'LEFT JOIN models AS m ON m.model_id = $m WHERE s."column" = $f '
        "ORDER BY s.pooling IS NOT DISTINCT FROM m.pooling DESC, s.created_at DESC LIMIT 1",
        {"m": model_id, "f": figure}).fetchone()
    return None if row is None else float(row[0])


def run_figure(con: Any, run_id: str, section: PromoteSection) -> str:
    """The figure a run is judged by: ``promote.metric``, else the run's selection figure (PST's
    ``selection_column``), else STS-B dev's."""
    if section.metric:
        return section.metric
    row = con.execute("SELECT selection_column FROM pst_runs WHERE run_id = ?", [run_id]).fetchone()
    return row[0] if row and row[0] else SELECTION_METRICS["stsb-dev"].column()


def _record(con: Any, run_id: str, promotion: Promotion) -> None:
    con.execute("UPDATE runs SET promotion = ?, promotion_note = ?, promotion_why = ? WHERE run_id = ?",
                [promotion.decision, promotion.reason, promotion.why or None, run_id])


def gate_run(cat: Catalog, config: Mapping[str, Any], run_id: str, selected: Mapping[str, Any]) -> Promotion:
    """Decide whether the run's ``selected`` model (``model_id``) becomes ``<name>@champion``, record the
    decision on the run's row and, when promoted, the alias change: one transaction."""
    section = PromoteSection.model_validate(config.get("promote") or {})
    alias = champion_alias(config["name"])
    with cat.transaction() as con:
        changes = changes_on(con, alias)
        champion = standing(changes)
        figure = run_figure(con, run_id, section)
        value = figure_value(con, selected["model_id"], figure)
        held = figure_value(con, champion.model_id, figure) if champion else None
        promotion = decide(alias, selected["model_id"], value, champion, held, figure, section.min_delta,
                           demoted(changes))
        if promotion.decision == "promoted" and not con.execute("SELECT 1 FROM models WHERE model_id = ?",
                                                                [selected["model_id"]]).fetchone():
            promotion = Promotion("not-comparable", alias, selected["model_id"], promotion.champion, figure, value, held,
                                  section.min_delta, f"{selected['model_id']} is not filed in the catalog: an alias "
                                  f"names catalog models only; {alias} stays {promotion.champion or 'unset'}", "not filed")
        if promotion.decision == "promoted":
            record_change(cat, alias, selected["model_id"], action="gate", run_id=run_id, figure=figure, value=value,
                          from_value=held, note=promotion.reason, con=con)
        _record(con, run_id, promotion)
    if promotion.decision == "promoted":
        cat.keep_rows("alias", [alias])
    return promotion


def record_unchanged(cat: Catalog, config: Mapping[str, Any], run_id: str, previous: str) -> Promotion:
    """An ``only_if_changed`` run that found nothing new: ``unchanged``, the champion as it was."""
    alias = champion_alias(config["name"])
    with cat.transaction() as con:
        champion = standing(changes_on(con, alias))
        held = champion.model_id if champion else None
        promotion = Promotion("unchanged", alias, None, held, None, None, None, 0.0,
                              f"inputs unchanged since run {previous}: {alias} stays {held or 'unset'}", "inputs unchanged")
        _record(con, run_id, promotion)
    return promotion


def compare(cat: Catalog, model_id: str, alias: str) -> Promotion:
    """What promoting ``model_id`` to ``alias`` by hand means: both models' figures under the name the
    holder was promoted by (an alias without a holder: the selection figure of its config's newest
    run). ``decision`` is ``promoted`` when the model is better (or the alias is new), else ``kept``
    (not better) or ``not-comparable`` (a figure is missing): what ``defsentflow promote`` confirms."""
    with cat.connect(read_only=True) as con:
        champion = standing(changes_on(con, alias))
        figure = champion.figure if champion else _config_figure(con, alias.split("@", 1)[0])
        value = figure_value(con, model_id, figure)
        held = figure_value(con, champion.model_id, figure) if champion else None
    return decide(alias, model_id, value, champion, held, figure, 0.0)


def _config_figure(con: Any, config_name: str) -> str | None:
    """The selection figure of the config's newest completed run, else the one its champion was promoted by."""
    row = con.execute("SELECT p.selection_column FROM runs AS r JOIN pst_runs AS p USING (run_id) WHERE r.flow = 'pipeline' "
                      "AND r.status = 'completed' AND json_extract_string(r.config, '$.name') = ? "
                      "ORDER BY r.ended_at DESC LIMIT 1", [config_name]).fetchone()
    row = row or con.execute("SELECT figure FROM alias_holders WHERE alias = ?", [champion_alias(config_name)]).fetchone()
    return row[0] if row else None


def promote(cat: Catalog, promotion: Promotion) -> AliasChange:
    """Make ``promotion.alias`` name ``promotion.model_id`` by hand (``defsentflow promote``), recording
    the figures :func:`compare` read."""
    return record_change(cat, promotion.alias, promotion.model_id, action="promote", figure=promotion.figure,
                         value=promotion.value, from_value=promotion.champion_value,
                         note=f"by hand; the gate would say {promotion.line()}")


def markdown(promotion: Mapping[str, Any]) -> str:
    """The Prefect artifact of a decision (a :meth:`Promotion.to_dict`): the sentence and both figures."""
    p = promotion
    rows = [("run's model", p.get("model_id"), p.get("value")), ("champion before", p.get("champion"), p.get("champion_value"))]
    table = "\n".join(f"| {who} | `{m or '-'}` | {_fmt(v)} |" for who, m, v in rows)
    return (f"# {p['alias']}: {p['decision']}\n\n{p['reason']}\n\n| | model | {p.get('figure') or 'figure'} |\n|---|---|---:|\n"
            f"{table}\n\nmin_delta: {p.get('min_delta', 0):g}; history: `defsentflow aliases {p['alias']}`\n")
