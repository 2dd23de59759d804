"""Reverse-dictionary serving: look up entries for a definition with a cached faiss index."""

from __future__ import annotations

from defsentflow.revdict.index import IndexMode, RevdictIndex, build_revdict_index, measured_modes, resolve_mode

__all__ = ["IndexMode", "RevdictIndex", "build_revdict_index", "measured_modes", "resolve_mode"]
