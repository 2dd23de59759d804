"""STS loaders on fixture files in each layout: SentEval years, STS-B, SICK."""

from __future__ import annotations

import numpy as np
import pytest

from defsentflow.evaluation.sts_data import (
    StsFormatError,
    available_tasks,
    load_sick,
    load_sts_year,
    load_stsb,
    load_task,
    task_files,
    validate_tasks,
)


def test_sts_year_skips_empty_gold_lines_and_normalises_whitespace(tmp_path, sts_writers):
    sts_writers.sts_year(tmp_path, {"MSRpar": [("a  cat ", "the\u00a0dog", 4.0), ("x", "y", None), ("b", "c", 1.5)],
                              "OnWN": [("one", "two", 2.0), ("three", "four", 3.0)]})
    task = load_sts_year(tmp_path, ("MSRpar", "OnWN"), task="sts12")
    a, b = task.subsets
    assert a.sentences1 == ("a cat", "b") and a.sentences2 == ("the dog", "c")
    np.testing.assert_array_equal(a.scores, [4.0, 1.5])
    assert a.skipped == 1 and len(b) == 2 and task.n == 4


def test_sts_year_errors_name_file_and_line(tmp_path):
    (tmp_path / "STS.input.x.txt").write_text("a\tb\nno tab here\n")
    (tmp_path / "STS.gs.x.txt").write_text("1\n2\n")
    with pytest.raises(StsFormatError, match=r"STS.input.x.txt:2: expected two tab-separated"):
        load_sts_year(tmp_path, ("x",))
    (tmp_path / "STS.input.x.txt").write_text("a\tb\nc\td\n")
    (tmp_path / "STS.gs.x.txt").write_text("1\nfive\n")
    with pytest.raises(StsFormatError, match=r"STS.gs.x.txt:2: gold score 'five'"):
        load_sts_year(tmp_path, ("x",))
    (tmp_path / "STS.gs.x.txt").write_text("1\n")
    with pytest.raises(StsFormatError, match="2 sentence pairs but .* 1 gold lines"):
        load_sts_year(tmp_path, ("x",))
    with pytest.raises(FileNotFoundError, match="STS.input.missing.txt"):
        load_sts_year(tmp_path, ("missing",))


def test_stsb_ignores_extra_fields_and_keeps_quotes(tmp_path):
    f = tmp_path / "sts-test.csv"
    f.write_text(
        'main-forums\tdeft-forum\t2014\t0001\t3.000\the said "yes\tshe said no\tsource-a\tsource-b\n'
        "main-news\theadlines\t2015\t0002\t1.250\ta cat\ta dog\n"
    )
    task = load_stsb(f, task="stsb-test")
    (sub,) = task.subsets
    assert sub.sentences1 == ('he said "yes', "a cat") and sub.sentences2 == ("she said no", "a dog")
    np.testing.assert_array_equal(sub.scores, [3.0, 1.25])
    f.write_text("main\tx\t2014\t0001\t3.0\tonly six fields\n")
    with pytest.raises(StsFormatError, match=r"sts-test.csv:1: expected at least 7"):
        load_stsb(f)


def test_sick_reads_columns_by_header_name(tmp_path):
    f = tmp_path / "SICK_test_annotated.txt"
    f.write_text("pair_ID\trelatedness_score\tsentence_B\tsentence_A\tentailment_judgment\n"
                 "1\t4.5\tB one\tA one\tNEUTRAL\n\n2\t1.0\tB two\tA two\tCONTRADICTION\n")
    (sub,) = load_sick(f).subsets
    assert sub.sentences1 == ("A one", "A two") and sub.sentences2 == ("B one", "B two")
    np.testing.assert_array_equal(sub.scores, [4.5, 1.0])
    f.write_text("pair_ID\tsentence_A\tsentence_B\tscore\n1\ta\tb\t3\n")
    with pytest.raises(StsFormatError, match=r":1: header lacks column\(s\) \['relatedness_score'\]"):
        load_sick(f)
    f.write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\n1\ta\tb\n")
    with pytest.raises(StsFormatError, match=r":2: expected at least 4"):
        load_sick(f)


def test_sickr_uses_test_split_else_reports_the_split_used(tmp_path, sts_writers):
    sts_writers.sick(tmp_path / "sick" / "SICK_trial.txt", [("a", "b", 1.0), ("c", "d", 2.0)])
    task = load_task(tmp_path, "sickr")
    assert task.name == "sickr-trial" and task.sources[0].endswith("SICK_trial.txt")
    with pytest.raises(FileNotFoundError, match="SICK_test_annotated.txt"):
        load_task(tmp_path, "sickr", sick_split="test")
    sts_writers.sick(tmp_path / "sick" / "SICK_test_annotated.txt", [("a", "b", 1.0), ("c", "d", 2.0), ("e", "f", 3.0)])
    task = load_task(tmp_path, "sickr")
    assert task.name == "sickr" and task.n == 3
    assert load_task(tmp_path, "sickr-trial").n == 2
    with pytest.raises(ValueError, match="sick_split must be one of"):
        load_task(tmp_path, "sickr", sick_split="dev")


def test_every_task_loads_from_the_fixture_layout(sts_data_dir):
    tasks = available_tasks(sts_data_dir)
    assert tasks == ["sts12", "sts13", "sts14", "sts15", "sts16", "stsb-train", "stsb-dev", "stsb-test",
                     "sickr", "sickr-trial"]
    for name in tasks:
        task = load_task(sts_data_dir, name)
        assert task.name == name and task.n > 0
        assert all(f.is_file() for f in task_files(sts_data_dir, name))
    sts12 = load_task(sts_data_dir, "sts12")
    assert [s.name for s in sts12.subsets] == ["MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"]
    assert all(s.skipped == 1 for s in sts12.subsets)


def test_unknown_task_names_are_rejected_with_the_valid_list():
    assert validate_tasks("sts12, stsb-dev,sts12") == ["sts12", "stsb-dev"]
    with pytest.raises(ValueError, match="unknown STS task.*'sts17'.*valid: sts12"):
        validate_tasks(["sts17"])
