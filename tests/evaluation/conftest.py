"""Fixture evaluation data in every layout the loaders read (written by the tests, tiny)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

# Sentences over the tiny tokenizer's word list, with gold scores that vary.
PAIRS = [
    ("the cat is a small animal", "a small cat", 4.2),
    ("a dog can run fast", "the dog is fast", 3.8),
    ("people live in a house", "a home where people live", 4.6),
    ("the river is clear water", "a fish in the sea", 1.4),
    ("a bird can fly", "the wing of a bird", 2.9),
    ("the sun is light", "the night is dark", 0.8),
    ("a red apple is sweet", "a sweet red fruit", 4.0),
    ("the king is a ruler", "a queen and a king", 2.2),
    ("read a book", "words on a page", 2.5),
    ("drive a car on the road", "a vehicle with a wheel", 3.1),
    ("children play a game", "a young child with a ball", 3.3),
    ("old man and woman", "a happy song", 0.2),
]


def write_sts_year(folder: Path, subsets: dict[str, list[tuple[str, str, float | None]]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in subsets.items():
        (folder / f"STS.input.{name}.txt").write_text("".join(f"{a}\t{b}\n" for a, b, _ in rows))
        (folder / f"STS.gs.{name}.txt").write_text("".join(("" if g is None else f"{g:.3f}") + "\n" for _, _, g in rows))


def write_stsb(path: Path, rows: list[tuple[str, str, float]], extra: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (a, b, g) in enumerate(rows):
        tail = "\tsource-a\tsource-b" if extra and i % 2 == 0 else ""
        lines.append(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{g:.3f}\t{a}\t{b}{tail}\n")
    path.write_text("".join(lines))


def write_sick(path: Path, rows: list[tuple[str, str, float]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
    path.write_text(head + "".join(f"{i}\t{a}\t{b}\t{g:.1f}\tNEUTRAL\n" for i, (a, b, g) in enumerate(rows, 1)))


@pytest.fixture(scope="session")
def sts_writers() -> SimpleNamespace:
    """The writers above, for tests that build their own files (test modules are not a package)."""
    return SimpleNamespace(sts_year=write_sts_year, stsb=write_stsb, sick=write_sick, pairs=PAIRS)


@pytest.fixture()
def sts_data_dir(tmp_path) -> Path:
    """A data dir with STS12-16 (every SentEval subset), STS-B train/dev/test and SICK trial/test."""
    from defsentflow.evaluation.sts_data import STS_YEARS

    root = tmp_path / "data"
    for k, (folder, subsets) in enumerate(STS_YEARS.values()):
        subs = {}
        for j, name in enumerate(subsets):
            rot = (k * 3 + j) % len(PAIRS)
            rows = PAIRS[rot:] + PAIRS[:rot]
            rows = rows[: 6 + (j % 3)]
            # an unscored pair in every subset: it must be skipped
            subs[name] = rows[:2] + [("a sentence without gold", "skip me", None)] + rows[2:]
        write_sts_year(root / "sts" / folder, subs)
    for split in ("train", "dev", "test"):
        write_stsb(root / "sts" / "STSBenchmark" / f"sts-{split}.csv", PAIRS, extra=True)
    write_sick(root / "sick" / "SICK_trial.txt", PAIRS[:8])
    write_sick(root / "sick" / "SICK_test_annotated.txt", PAIRS)
    return root
