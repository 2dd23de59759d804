"""The claims file is validated like every config: a typo, an unknown claim or a bad arm is an
error naming the file and the key, raised before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from defsentflow.claims import CLAIM_IDS, load_claims, plan_arms

ROOT = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, **changes) -> Path:
    data = yaml.safe_load((ROOT / "configs" / "claims-raw-ci.yaml").read_text())
    data["base"] = str(ROOT / "configs" / "raw-ci.yaml")
    data.update(changes)
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_shipped_claims_file_validates_with_an_arm_per_claim():
    claims = load_claims(ROOT / "configs" / "claims-raw-ci.yaml")
    assert set(claims.spec.claims) == set(CLAIM_IDS) and len(claims.spec.seeds) >= 3
    plan = plan_arms(claims)
    for claim in claims.spec.claims:
        assert plan.needs[claim] or claim in plan.untestable
    # arms of the same seed share PST's step 1: the base's entry count is read from the pst arm
    assert f"entries={plan.base_entries} seed=0" not in plan.points


@pytest.mark.parametrize(("changes", "needle"), [
    ({"seedz": [0]}, "seedz"),
    ({"claims": ["defsent_wins_everything"]}, "claims.0"),
    ({"entries": [4000, 2000]}, "ascending"),
    ({"seeds": [0, 0]}, "distinct"),
    ({"set": {"pst.nope": 1}}, "nope"),
    ({"defsent": {"method": "defsent", "lr": "fast"}}, "defsent.lr"),
])
def test_bad_claims_files_name_the_file_and_key(tmp_path, changes, needle):
    path = _write(tmp_path, **changes)
    with pytest.raises(ValueError) as err:
        load_claims(path)
    assert str(path) in str(err.value) and needle in str(err.value)


def test_a_base_without_pst_is_refused(tmp_path):
    path = _write(tmp_path, base=str(ROOT / "configs" / "raw-ci-defsent.yaml"), set={})
    with pytest.raises(ValueError, match="pst: section"):
        load_claims(path)
