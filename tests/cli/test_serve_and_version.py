"""What a user tries in the first minutes: `serve` on a port already in use (one line naming the port
and --port, exit 2, nothing claiming to serve), `--version`, a plain-text `--help`, FastAPI's /docs."""

from __future__ import annotations

import argparse
import socket

import pytest

from defsentflow import __version__
from defsentflow.cli import build_parser, main


def test_serve_on_a_busy_port_is_one_line_naming_it_and_exit_2(home, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no "serving ..." before the failure
    assert err == (f"defsentflow: error: port {port} on 127.0.0.1 is in use (another server?): stop it, or choose "
                   "another port with --port N (--port 0: any free port)\n")


def test_version_and_a_help_without_markup(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"defsentflow {__version__}\n"

    def helps(parser: argparse.ArgumentParser):
        yield parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from helps(sub)

    for text in helps(build_parser()):
        assert not any(role in text for role in ("``", ":func:", ":class:", ":mod:", ":meth:", ":data:")), text


def test_docs_where_fastapi_users_look(home):
    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app

    with TestClient(create_app(home)) as client:
        page = client.get("/docs")
        # the API's routes from its OpenAPI schema (a plain page: Swagger's CDN script is blocked by the CSP)
        assert page.status_code == 200 and page.url.path == "/api/docs" and "/api/revdict" in page.text
