"""The arms of the claims: which pipeline runs each claim reads, as changes to the base config.

An arm is the base pipeline config with a few dotted values changed (a sweep point, run by the
ordinary pipeline, so stages shared between arms are computed once: the pretrained encoder, the
dictionary, PST's step 1 of every run with the same seed and entries). Per training seed ``s``:

* ``pst s``: PST with ``steps`` fixed steps, separate training, the claims file's transition steps,
  no ICA candidate (steps 1..N, entry spaces);
* ``continue s``: the same, each step continuing the previous step's best encoder (``separate: false``);
* ``ica s``: the same with the ICA-transformed entry matrix as a second candidate at the ICA step
  (``ica_step``, Eq. 11: both candidates of that step come from the same run);
* ``defsent s``: one DefSent run (the ``defsent:`` of the claims file) instead of PST;
* ``entries=N s``: one PST step on ``N`` training entries (N other than the base's);
* ``raw p``: the pipeline on the raw encoder pretrained with seed ``p`` (one small PST step), for
  claims about the raw encoder itself.

A claim whose arms cannot exist (a raw-encoder claim on a base without a ``pretrain:`` section),
or that the control cannot test (SBERT-WK on an encoder too shallow for the paper's layer window),
is "cannot be tested here" with the reason, instead of failing the run or measuring something else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from defsentflow.claims.config import ClaimsConfig
from defsentflow.eval_tasks import CANONICAL, FigureSettings, dictionary_task
from defsentflow.sweep import Sweep, SweepFile, SweepPoint, expand_sweep, point_id_of

__all__ = ["SBERT_WK_FIRST_LAYER", "ArmPlan", "arm_name", "defsent_wordpred_task", "plan_arms", "sbert_wk_untestable"]


def arm_name(kind: str, seed: int, n: int | None = None) -> str:
    """``pst seed=0``, ``entries=2000 seed=1``, ``raw pretrain_seed=2``."""
    if kind == "raw":
        return f"raw pretrain_seed={seed}"
    return f"{kind}{'' if n is None else f'={n}'} seed={seed}"


@dataclass(frozen=True)
class ArmPlan:
    """The arms a claims file needs: each arm's sweep point, which arms each claim reads, and why a
    claim cannot be measured here (``untestable``)."""

    sweep: Sweep | None            # None: no claim has an arm to run
    points: dict[str, SweepPoint]
    needs: dict[str, list[str]]
    untestable: dict[str, str] = field(default_factory=dict)
    base_entries: int | None = None
    base_pretrain_seed: int | None = None


_PST_EVAL = {"eval.tasks": ["stsb-dev"], "eval.baselines": ["untrained", "sbert_wk"], "report": False}
# DefSent's Table 2 protocol: every dev / test definition whose word is a target (all-definitions)
_DEFSENT_EVAL = {"eval.tasks": ["stsb-dev", "wordpred"], "eval.revdict_protocols": ["all-definitions"],
                 "eval.baselines": ["untrained"], "report": False}


def defsent_wordpred_task(base: dict[str, Any]) -> str:
    """The task the DefSent arms' word prediction is filed under: test, all-definitions, the base's
    evaluation settings (the registry's name for them)."""
    ev = base.get("eval") or {}
    settings = FigureSettings(max_length=ev.get("max_length", CANONICAL.max_length),
                              autocast=ev.get("autocast", CANONICAL.autocast), ties=ev.get("ties", CANONICAL.ties))
    return dictionary_task("wordpred", "test", "all-definitions", settings)


# SBERT-WK (Wang & Kuo 2020) fuses the hidden states from layer 4 up (encoders/sbert_wk.py's layer_start)
SBERT_WK_FIRST_LAYER = 4


def sbert_wk_untestable(base: dict[str, Any]) -> str | None:
    """Why the control cannot test SBERT-WK, or None: its raw encoder must leave the paper's window
    (hidden states from layer 4 up, at least three of them) to fuse."""
    layers = ((base.get("pretrain") or {}).get("architecture") or {}).get("layers")
    if layers is not None and layers + 1 - 3 < SBERT_WK_FIRST_LAYER:
        return (f"SBERT-WK fuses hidden states from layer {SBERT_WK_FIRST_LAYER} up (Wang & Kuo 2020); this "
                f"control's encoder has {layers} layers, so it would fuse hidden states 0-{layers} instead: not the "
                f"method (needs an encoder of {SBERT_WK_FIRST_LAYER + 2} layers or more)")
    return None


def _plain(claims: ClaimsConfig) -> dict[str, Any]:
    """PST with ``steps`` separate steps, the claims file's transition steps and no ICA candidate."""
    return {"pst.steps": claims.spec.steps, "pst.ica_step": None, "pst.separate": True,
            "pst.transition_steps": list(claims.spec.transition_steps)}


def plan_arms(claims: ClaimsConfig, *, origin: str = "<claims>") -> ArmPlan:
    """Expand the claims into arms (validated pipeline configs, one sweep point each).

    Raises:
        ValueError: an arm that makes an invalid pipeline config (the message names the arm and the key).
    """
    spec = claims.spec
    pst = claims.base["pst"]
    base_entries = pst.get("max_train_entries")
    base_pretrain_seed = (claims.base.get("pretrain") or {}).get("seed", 0) if claims.base.get("pretrain") else None
    arms: dict[str, dict[str, Any]] = {}
    needs: dict[str, list[str]] = {}
    untestable: dict[str, str] = {}

    def use(claim: str, name: str, params: dict[str, Any]) -> None:
        arms[name] = params
        needs.setdefault(claim, []).append(name)

    def pst_arm(claim: str, s: int) -> None:
        use(claim, arm_name("pst", s), {**_plain(claims), "pst.seeds": [s],
                                         "pst.max_train_entries": base_entries, **_PST_EVAL})

    for claim in spec.claims:
        needs[claim] = []
        for s in spec.seeds:
            if claim in ("defsent_plus_beats_defsent", "later_steps_beat_step_1", "separate_beats_continuing",
                         "more_entries_help", "entry_space_more_isotropic"):
                pst_arm(claim, s)
            if claim in ("defsent_plus_beats_defsent", "defsent_raises_wordpred"):
                section = {**spec.defsent, "base_model": pst.get("base_model", "minilm"),
                           "dictionary": claims.base["dictionary"]["name"], "max_train_entries": base_entries,
                           "seed": s}
                use(claim, arm_name("defsent", s), {"pst": None, "defsent": section, **_DEFSENT_EVAL})
            if claim == "separate_beats_continuing":
                use(claim, arm_name("continue", s), {**_plain(claims), "pst.separate": False, "pst.seeds": [s],
                                                     "pst.max_train_entries": base_entries, **_PST_EVAL})
            if claim == "ica_candidate_helps":
                use(claim, arm_name("ica", s), {**_plain(claims), "pst.ica_step": spec.ica_step or spec.steps,
                                                "pst.seeds": [s], "pst.max_train_entries": base_entries, **_PST_EVAL})
            if claim == "more_entries_help":
                for n in spec.entries:
                    if n != base_entries:
                        use(claim, arm_name("entries", s, n), {"pst.steps": 1, "pst.seeds": [s],
                                                               "pst.max_train_entries": n, **_PST_EVAL})
        if claim == "sbert_wk_beats_mean" and base_pretrain_seed is None:
            untestable[claim] = "the base config has no pretrain: section (no raw encoder)"
        elif claim == "sbert_wk_beats_mean" and sbert_wk_untestable(claims.base):
            untestable[claim] = sbert_wk_untestable(claims.base)
        elif claim == "sbert_wk_beats_mean":
            for p in spec.pretrain_seeds:
                if p == base_pretrain_seed:
                    pst_arm(claim, spec.seeds[0])
                else:
                    use(claim, arm_name("raw", p), {"pretrain.seed": p, "pst.steps": 1, "pst.seeds": [spec.seeds[0]],
                                                    "pst.max_train_entries": min(spec.entries), **_PST_EVAL})
    sweep = None
    points: dict[str, SweepPoint] = {}
    if arms:
        file = SweepFile(name=spec.name, description=f"the arms of the claims {origin}", base=claims.base,
                         points=list(arms.values()))
        expanded = expand_sweep(file, claims.base, origin=f"{origin}: arm")
        sweep = Sweep(name=spec.name, path=claims.path, spec=file, base=claims.base, base_path=claims.base_path,
                      points=expanded, home=claims.home)
        by_id = {p.point_id: p for p in expanded}
        points = {n: by_id[point_id_of(params)] for n, params in arms.items()}
    return ArmPlan(sweep=sweep, points=points, needs={c: list(dict.fromkeys(v)) for c, v in needs.items()},
                   untestable=untestable, base_entries=base_entries, base_pretrain_seed=base_pretrain_seed)
