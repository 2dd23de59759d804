"""defsentflow: dictionaries and raw text -> sentence encoders.

The library never imports Prefect: every piece can be called from a notebook, a test or
another orchestrator. Prefect tasks and flows live in the top-level ``tasks`` and ``flows``
packages and only sequence calls into this library.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
