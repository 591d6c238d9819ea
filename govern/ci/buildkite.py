"""Buildkite: a trial is a build of a configured pipeline (REST API v2).

Notes: docs/internals.md#ci.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Unpack
from urllib.parse import quote

import httpx

from govern.ci import options as opts
from govern.ci.base import Trial
from govern.ci.hosted import (
    Job,
    PipelineProvider,
    RunStates,
    Settings,
    expect,
    now,
    one_line,
    trial_env,
)
from govern.errors import CI_ERRORS
from govern.http.client import ApiClient

__all__ = ["API_URL", "Buildkite", "from_config", "trial_env"]

VENDOR = "buildkite"
API_URL = "https://api.buildkite.com"
META_DATA_KEY = "govern-correlation-id"

_STATES = RunStates(
    noun="build",
    id_key="number",
    state_key="state",
    passed="passed",
    passed_word="passed",
    failed="failed",
    cancelled=frozenset({"canceled"}),
    not_run=frozenset({"skipped", "not_run"}),
    # not an end: the build goes on, or waits for a person
    pending=frozenset(
        {
            "creating",
            "scheduled",
            "running",
            "failing",
            "blocked",
            "canceling",
            "waiting",
            "waiting_failed",
        }
    ),
    reason_key="cancel_reason",
)

# Buildkite's raw logs mark lines with an APC timestamp (ESC _bk;t=<ms> BEL); the ANSI
# colours they keep are removed with the evidence search (govern.ci.base).
_BK_TIMESTAMP = re.compile(r"\x1b_bk;t=\d+\x07")


def buildkite_client(
    http: httpx.AsyncClient,
    *,
    token: str,
    token_source: str,
    api_url: str = API_URL,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], datetime] = now,
) -> ApiClient:
    """A client of Buildkite's REST API with an API access token as a bearer token
    (scrubbed from every message), raising ``CI_ERRORS``. Buildkite has no forge: its API
    is built here alone."""
    return ApiClient(
        http,
        vendor=VENDOR,
        base_url=api_url,
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        secrets=(token,) if token else (),
        token_source=token_source,
        sleep=sleep,
        clock=clock,
        errors=CI_ERRORS,
    )


class Buildkite(PipelineProvider):
    """Trials as builds of one Buildkite pipeline."""

    kind = "buildkite"
    vendor = VENDOR
    keys = opts.COMMON_KEYS | {"organization", "pipeline", "branch", "commit"}
    default_api_url = API_URL
    env_variable = "BUILDKITE_API_TOKEN"
    needs = "the write_builds, read_builds and read_build_logs scopes"
    states = _STATES
    shown = ("organization", "pipeline", "branch")
    cancel_method = "PUT"

    def __init__(
        self,
        name: str,
        *,
        http: httpx.AsyncClient,
        organization: str,
        pipeline: str,
        token: str,
        branch: str = "main",
        commit: str = "HEAD",
        **settings: Unpack[Settings],
    ) -> None:
        """Builds of ``organization/pipeline`` on ``branch`` at ``commit``.

        ``token`` is an API access token with the ``write_builds``, ``read_builds`` and
        ``read_build_logs`` scopes; ``settings`` say where it came from (for messages),
        the API root, the time-out, and the sleep and clock of tests.
        """
        connect = functools.partial(buildkite_client, http, token=token)
        super().__init__(name, connect=connect, **settings)
        self.organization = organization
        self.pipeline = pipeline
        self.branch = branch
        self.commit = commit
        self._builds = (
            f"/v2/organizations/{quote(organization, safe='')}"
            f"/pipelines/{quote(pipeline, safe='')}/builds"
        )

    def run_path(self, number: int) -> str:
        """``/v2/organizations/{org}/pipelines/{pipeline}/builds/{number}``."""
        return f"{self._builds}/{number}"

    async def create(self, trial: Trial) -> Any:
        """Create a build with the trial in its environment and its correlation id in its
        meta-data."""
        body = {
            "commit": self.commit,
            "branch": self.branch,
            "message": (
                f"govern verify {trial.requirement} on {trial.profile} ({trial.correlation_id})"
            ),
            "env": trial_env(trial),
            "meta_data": {META_DATA_KEY: trial.correlation_id},
        }
        return await (await self.client()).json("POST", self._builds, json_body=body)

    def pending_reason(self, number: int, run: Mapping[str, Any]) -> str | None:
        """A build blocked on a block step waits for a person, whatever its state."""
        return f"build {number} is blocked on a block step" if run.get("blocked") is True else None

    async def jobs(self, number: int, run: Mapping[str, Any]) -> list[Job]:
        """The build's script jobs (wait and block steps have no log); a job that never
        started has no log either."""
        jobs: list[Job] = []
        for job in expect(run.get("jobs", []), list, "the build's jobs", VENDOR):
            if not isinstance(job, dict) or job.get("type") != "script":
                continue
            job_id, state, exit_status = job.get("id"), job.get("state"), job.get("exit_status")
            ran = isinstance(job_id, str) and job.get("started_at")
            path = f"{self.run_path(number)}/jobs/{quote(str(job_id), safe='')}/log.txt"
            jobs.append(
                Job(
                    one_line(job.get("name") or job.get("step_key") or job_id),
                    path if ran else None,
                    state if isinstance(state, str) else None,
                    failed=state == "failed",
                    timed_out=state == "timed_out",
                    note=f" with exit status {exit_status}" if isinstance(exit_status, int) else "",
                )
            )
        return jobs

    def clean_log(self, text: str) -> str:
        """A raw Buildkite log as a reader sees it: no timestamp markers, no CRs."""
        return _BK_TIMESTAMP.sub("", text).replace("\r\n", "\n")


def from_config(
    name: str,
    options: Mapping[str, Any],
    *,
    http: httpx.AsyncClient,
    environ: Mapping[str, str],
) -> Buildkite:
    """A :class:`Buildkite` provider from ``[tool.govern.ci.NAME]``.

    Keys: ``provider = "buildkite"``, ``organization`` and ``pipeline`` (slugs, required),
    ``branch`` (default ``"main"``), ``commit`` (default ``"HEAD"``), ``token-env`` (the
    variable holding the API token, default ``BUILDKITE_API_TOKEN``), ``api-url``
    (default ``https://api.buildkite.com``) and ``timeout`` (seconds, default 3600).
    """
    Buildkite.check_table(options, name)
    organization = opts.slug(options, "organization", name)
    pipeline = opts.slug(options, "pipeline", name)
    branch = opts.string(options, "branch", name, default="main")
    commit = opts.string(options, "commit", name, default="HEAD")
    return Buildkite(
        name,
        http=http,
        organization=organization,
        pipeline=pipeline,
        branch=branch,
        commit=commit,
        **Buildkite.connection(options, environ, name),
    )
