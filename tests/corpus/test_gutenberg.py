from __future__ import annotations

from defsentflow.corpus import strip_gutenberg

BOOK = """The Project Gutenberg EBook of A Book, by Someone

This eBook is for the use of anyone anywhere at no cost.

*** START OF THIS PROJECT GUTENBERG EBOOK A BOOK ***




Produced by Anonymous Volunteers




A BOOK

Chapter 1

It was a dark night.
The rain fell.

End of the Project Gutenberg EBook of A Book, by Someone

*** END OF THIS PROJECT GUTENBERG EBOOK A BOOK ***

***** This file should be named 1.txt *****

*** START: FULL LICENSE ***
THE FULL PROJECT GUTENBERG LICENSE
"""


def test_strip_keeps_only_the_book():
    text, stripped = strip_gutenberg(BOOK)
    assert stripped
    assert text.startswith("A BOOK")
    assert text.endswith("The rain fell.")
    for gone in ("Project Gutenberg", "Produced by", "LICENSE", "***"):
        assert gone not in text


def test_the_variant_and_no_markers():
    text, stripped = strip_gutenberg("header\n***START OF THE PROJECT GUTENBERG EBOOK X\nBody.\n*** END OF THE PROJECT GUTENBERG EBOOK X ***\n")
    assert stripped and text == "Body."
    plain = "Just a text.\n\nWith *** stars *** in it."
    assert strip_gutenberg(plain) == (plain, False)


def test_real_book_and_embedded_sample(shared_data):
    from defsentflow.storage import sample_dir

    raw = (shared_data / "corpus" / "gutenberg" / "pride_and_prejudice.txt").read_text(encoding="utf-8")
    text, stripped = strip_gutenberg(raw.replace("\r\n", "\n"))
    assert stripped and text.startswith("PRIDE AND PREJUDICE")
    assert "Gutenberg" not in text and "Produced by" not in text
    sample = (sample_dir() / "corpus" / "pride-and-prejudice-sample.txt").read_text(encoding="utf-8")
    assert text.startswith(sample.rstrip("\n"))
    assert "Chapter 12" in sample and "Chapter 13" not in sample
    assert len(sample.encode()) < 300_000
