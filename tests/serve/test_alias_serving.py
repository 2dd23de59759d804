"""``model=demo@champion``: the app answers from the alias's model at request time, without a restart;
the new index is loaded before the first answer from it, and a request already answered from the old
index finishes there."""

from __future__ import annotations

import asyncio

import httpx
import pyarrow as pa
import pytest

from tests.serve.conftest import DEFS


@pytest.fixture(scope="module")
def two_served(tmp_path_factory, tiny_bert_dir, tiny_mlm_dir):
    """Two models with a cosine index each (``model-a``, ``model-b``); demo@champion names model-a."""
    from defsentflow.registry import record_change
    from defsentflow.revdict import build_revdict_index
    from defsentflow.storage import Catalog

    home = tmp_path_factory.mktemp("alias-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEFSENTFLOW_HOME", str(home))
        table = pa.table({"entry": list(DEFS), "definition": list(DEFS.values()), "split": ["test"] * len(DEFS)})
        cat = Catalog()
        for model_id, folder in (("model-a", tiny_bert_dir), ("model-b", tiny_mlm_dir)):
            build_revdict_index(str(folder), table, mode="cosine", device="cpu")
            cat.register_model(model_id, folder, method="defsent_plus", pooling="mean")
        record_change(cat, "demo@champion", "model-a", action="gate")
        yield home


def test_an_alias_follows_promotions_without_a_restart(two_served, monkeypatch):
    from defsentflow.registry import record_change, rollback
    from defsentflow.serve import create_app
    from defsentflow.serve.lookup import LookupService
    from defsentflow.storage import Catalog

    monkeypatch.setenv("DEFSENTFLOW_HOME", str(two_served))
    events: list[tuple[str, str]] = []
    hold = asyncio.Event()
    load, lookup = LookupService.load, LookupService.lookup

    def loading(self, served):
        load(self, served)
        events.append(("loaded", served.model_id))

    async def held(self, served, text, k):
        events.append(("lookup", served.model_id))
        if text == "held":  # a request in flight on the old model
            await hold.wait()
        return await lookup(self, served, DEFS["river"], k)

    monkeypatch.setattr(LookupService, "load", loading)
    monkeypatch.setattr(LookupService, "lookup", held)
    app = create_app(max_batch=4, max_wait_ms=1)
    cat = Catalog()

    async def scenario() -> dict[str, str]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as client:
            async def ask(q: str = "a dog") -> httpx.Response:
                return await client.get("/api/revdict", params={"q": q, "model": "demo@champion", "k": 2})

            first = await ask()
            in_flight = asyncio.create_task(ask("held"))
            while events.count(("lookup", "model-a")) < 2:
                await asyncio.sleep(0.01)
            record_change(cat, "demo@champion", "model-b", action="promote")  # while that request waits
            after = await ask()
            models = (await client.get("/api/models")).json()
            hold.set()
            old = await in_flight
            rollback(cat, "demo@champion")
            back = await ask()
        assert all(r.status_code == 200 for r in (first, after, old, back)), [r.text for r in (first, after, old, back)]
        return {"first": first.json()["model"], "after": after.json()["model"], "in flight": old.json()["model"],
                "back": back.json()["model"], "models": models}

    got = asyncio.run(scenario())
    assert (got["first"], got["after"], got["in flight"], got["back"]) == ("model-a", "model-b", "model-a", "model-a")
    assert events.index(("loaded", "model-b")) < events.index(("lookup", "model-b"))  # loaded before it answers
    serves = {m["model"]: [a["alias"] for a in m["serves"]] for m in got["models"]}
    assert serves == {"model-a": [], "model-b": ["demo@champion"]} and all(
        a["since"] for m in got["models"] for a in m["serves"])


@pytest.mark.parametrize(("model", "status", "text"), [
    ("nobody@champion", 404, "no alias 'nobody@champion'; aliases: demo@champion"),
    ("demo@", 422, "pattern"),
    ("demo@champion@x", 422, "pattern"),
])
def test_an_unknown_or_malformed_alias_is_refused(two_served, monkeypatch, model, status, text):
    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app

    monkeypatch.setenv("DEFSENTFLOW_HOME", str(two_served))
    with TestClient(create_app()) as client:
        r = client.get("/api/revdict", params={"q": "a dog", "model": model})
    assert r.status_code == status and text in r.text, r.text


def test_the_page_offers_each_alias_and_answers_from_its_model(two_served, monkeypatch):
    """The reverse-dictionary page lists demo@champion first (with the model it serves and since when);
    picking it answers from that model, and after a promotion from the new one."""
    from fastapi.testclient import TestClient

    from defsentflow.registry import record_change, rollback
    from defsentflow.serve import create_app
    from defsentflow.storage import Catalog

    monkeypatch.setenv("DEFSENTFLOW_HOME", str(two_served))
    with TestClient(create_app()) as client:
        page = client.get("/revdict")
        assert page.status_code == 200
        # the first view: the Model box shows the alias, and the example's table is its model's answer
        assert '<optgroup label="Aliases">' in page.text and \
            '<option value="demo@champion" selected>demo@champion: model-a since' in page.text
        assert page.text.index('value="demo@champion"') < page.text.index('value="model-a"')
        assert '<div class="hits"><p class="muted">model-a (' in page.text and "ranked by score" in page.text
        picked = client.get("/revdict", params={"q": "a dog", "model": "demo@champion", "k": 2})
        assert picked.status_code == 200 and '<option value="demo@champion" selected>' in picked.text
        assert '<div class="hits"><p class="muted">model-a (' in picked.text  # answered by the alias's model
        record_change(Catalog(), "demo@champion", "model-b", action="promote")
        try:
            after = client.get("/revdict", params={"q": "a dog", "model": "demo@champion", "k": 2})
            assert "demo@champion: model-b since" in after.text
            assert '<div class="hits"><p class="muted">model-b (' in after.text  # no restart
        finally:
            rollback(Catalog(), "demo@champion")


def test_a_retired_alias_leaves_the_page_the_api_and_the_leaderboard(two_served, monkeypatch):
    """`defsentflow aliases --retire` (through the CLI) takes the alias out of serve's lists at the next
    request, and a request for it says which aliases there are; the API names the alias asked for. (The
    leaderboard: tests/cli/test_registry_cli.py.)"""
    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app
    from tests.integration.tiny_pipeline_utils import cli_here

    monkeypatch.setenv("DEFSENTFLOW_HOME", str(two_served))
    assert cli_here(["promote", "model-b", "--alias", "demo@oops", "--new", "--yes"]).returncode == 0
    with TestClient(create_app()) as client:
        answer = client.get("/api/revdict", params={"q": "a dog", "model": "demo@oops"}).json()
        assert (answer["model"], answer["alias"]) == ("model-b", "demo@oops")   # which model the alias resolved to
        assert 'value="demo@oops"' in client.get("/revdict").text
        res = cli_here(["aliases", "--retire", "demo@oops"])
        assert res.returncode == 0 and "retired" in res.stdout, res.stderr
        assert 'value="demo@oops"' not in client.get("/revdict").text
        assert all(a["alias"] != "demo@oops" for m in client.get("/api/models").json() for a in m["serves"])
        gone = client.get("/api/revdict", params={"q": "a dog", "model": "demo@oops"})
        assert gone.status_code == 404 and "no alias 'demo@oops'; aliases: demo@champion" in gone.text
