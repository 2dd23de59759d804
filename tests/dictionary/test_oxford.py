from __future__ import annotations

from defsentflow.dictionary import DefinitionRecord, RejectedRecord, read_oxford


def test_reads_ishiwatari_lines(write):
    path = write("train.txt", "tenant%oxford.2\tnoun\toxford\ta person who occupies land\tthe tenants\n"
                              "run%oxford.14\tverb\toxford\tmove at a speed faster than a walk\n"
                              "broken line without tabs\n"
                              "\n")
    recs = list(read_oxford(path))
    assert recs[0] == DefinitionRecord("tenant", "a person who occupies land", "oxford", str(path), 1, pos="noun")
    assert recs[0].meta == {"sense": "oxford.2", "source": "oxford", "extra": ["the tenants"]}
    assert (recs[1].entry, recs[1].definition, recs[1].line) == ("run", "move at a speed faster than a walk", 2)
    assert isinstance(recs[2], RejectedRecord) and recs[2].reason == "malformed" and recs[2].line == 3
    assert "at least 4" in recs[2].detail
    assert isinstance(recs[3], RejectedRecord) and recs[3].reason == "empty" and recs[3].line == 4
    assert len(recs) == 4
