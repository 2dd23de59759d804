"""``defsentflow serve``: a read-only web app over the catalog with a batched reverse dictionary.

The package imports FastAPI (installed with Prefect); nothing else in the library imports it.
"""

from __future__ import annotations

from defsentflow.serve.app import MAX_K, MAX_QUERY_CHARS, create_app
from defsentflow.serve.batcher import MicroBatcher
from defsentflow.serve.catalog import ServeCatalog, ServedIndex, UnknownModelError
from defsentflow.serve.encode import PackedQueryEncoder
from defsentflow.serve.lookup import Hit, LookupService
from defsentflow.serve.search import FlatSearch

__all__ = ["FlatSearch", "Hit", "LookupService", "MAX_K", "MAX_QUERY_CHARS", "MicroBatcher",
           "PackedQueryEncoder", "ServeCatalog", "ServedIndex", "UnknownModelError", "create_app"]
