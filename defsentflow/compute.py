"""Where fanned-out work runs: the ``compute:`` config section, shared by every stage.

Neither ``address`` nor ``local_workers``: today's sequential path, in the command's process.
``address``: an existing Dask scheduler (``dask scheduler`` + ``dask worker``, dask-jobqueue's
``SLURMCluster``, dask-cuda's ``LocalCUDACluster``, Kubernetes). ``local_workers: N``: a
``LocalCluster`` of N single-threaded worker processes that the command starts and stops.

The command passes the settings to its flows (and a deployment to its flow run) through the
environment variables below, so one cluster serves every stage and subflow of a command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from defsentflow.config_tools import LIMITS, ConfigSection

__all__ = ["ADDRESS_ENV", "GPUS_ENV", "THREADS_ENV", "ComputeSection", "compute_from_env", "compute_to_env"]

ADDRESS_ENV = "DEFSENTFLOW_DASK_ADDRESS"
GPUS_ENV = "DEFSENTFLOW_GPUS_PER_CANDIDATE"
THREADS_ENV = "DEFSENTFLOW_THREADS_PER_CANDIDATE"


class ComputeSection(ConfigSection):
    """``compute:``: the Dask cluster fanned-out work (PST candidates, harvest batches) runs on."""

    address: str | None = Field(None, description="an existing Dask scheduler, e.g. tcp://host:8786")
    local_workers: int = Field(0, ge=0, le=LIMITS["workers"], description="start a LocalCluster of this many single-threaded worker "
                                                    "processes for the command (0: sequential, in process)")
    gpus_per_candidate: float = Field(0, ge=0, le=64, description="Dask worker resource GPU each candidate asks for "
                                                           "(workers started with --resources GPU=1)")
    threads_per_candidate: int | None = Field(None, ge=1, le=LIMITS["workers"], description="torch threads per candidate, set on the "
                                                                       "worker (None: the worker's default)")

    @property
    def distributed(self) -> bool:
        return bool(self.address or self.local_workers)


def compute_to_env(compute: ComputeSection, address: str | None = None) -> dict[str, str]:
    """The environment that hands ``compute`` (and a started cluster's ``address``) to flows."""
    env = {GPUS_ENV: str(compute.gpus_per_candidate)}
    if address or compute.address:
        env[ADDRESS_ENV] = str(address or compute.address)
    if compute.threads_per_candidate:
        env[THREADS_ENV] = str(compute.threads_per_candidate)
    return env


def compute_from_env(env: Mapping[str, str] | None = None, default: ComputeSection | Mapping[str, Any] | None = None
                     ) -> ComputeSection:
    """``default`` (a config's ``compute:``) overridden by what the command put in the environment."""
    env = os.environ if env is None else env
    base = ComputeSection.model_validate(default or {}) if not isinstance(default, ComputeSection) else default
    update: dict[str, Any] = {}
    if env.get(ADDRESS_ENV):
        update["address"] = env[ADDRESS_ENV]
    if env.get(GPUS_ENV):
        update["gpus_per_candidate"] = float(env[GPUS_ENV])
    if env.get(THREADS_ENV):
        update["threads_per_candidate"] = int(env[THREADS_ENV])
    return base.model_copy(update=update)
