"""The report's Markdown as a Prefect artifact: its own images inline, nothing outside its folder read."""

from __future__ import annotations

import base64

from defsentflow.report.markup import inline_images


def test_the_reports_images_are_inlined_and_nothing_else(tmp_path):
    (tmp_path / "img").mkdir()
    png = b"\x89PNG fake"
    (tmp_path / "img" / "a.png").write_bytes(png)
    (tmp_path / "secret.png").write_bytes(b"not mine")
    md = "![curve](img/a.png)\n![gone](img/none.png)\n![up](img/../secret.png)\n![web](https://x/y.png)"
    out = inline_images(md, tmp_path).splitlines()
    assert out[0] == f"![curve](data:image/png;base64,{base64.b64encode(png).decode()})"
    assert out[1:] == md.splitlines()[1:]  # missing, outside img/, or not a report image: left as written
