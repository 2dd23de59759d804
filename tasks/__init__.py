"""Prefect tasks: 5-20 lines each; load inputs, call the library, persist, return a small reference."""

from __future__ import annotations

from defsentflow.tasks._env import configure_prefect_env

configure_prefect_env()
