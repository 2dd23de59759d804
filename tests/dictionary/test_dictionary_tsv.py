from __future__ import annotations

from defsentflow.dictionary import DefinitionRecord, RejectedRecord, read_tsv


def test_reads_rows_without_header(write):
    path = write("d.tsv", "dog\ta domesticated canid\r\ncat\tsmall feline\n")
    assert list(read_tsv(path)) == [
        DefinitionRecord("dog", "a domesticated canid", "tsv", str(path), 1),
        DefinitionRecord("cat", "small feline", "tsv", str(path), 2),
    ]


def test_header_names_extra_columns_as_metadata(write):
    path = write("d.tsv", "\ufeffEntry\tDefinition\tfreq\ndog\ta canid\t12\ncat\tfeline\n")
    recs = list(read_tsv(path, source="mine"))
    assert recs[0].meta == {"freq": "12"} and recs[0].line == 2 and recs[0].source == "mine"
    assert isinstance(recs[1], RejectedRecord) and recs[1].reason == "malformed" and recs[1].line == 3
    assert "expected 3" in recs[1].detail


def test_invalid_utf8_line_is_rejected_not_fatal(write):
    path = write("d.tsv", b"dog\ta canid\nbad\t\xff\xfe bytes\ncat\tfeline\n")
    recs = list(read_tsv(path))
    assert [type(r).__name__ for r in recs] == ["DefinitionRecord", "RejectedRecord", "DefinitionRecord"]
    assert recs[1].reason == "invalid_utf8" and recs[1].line == 2 and recs[1].raw == "bad\t\\xff\\xfe bytes"
