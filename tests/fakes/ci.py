"""Buildkite and GitLab REST APIs on 127.0.0.1 for the CI providers' tests, and the kit
those tests share with GitHub's (:mod:`fakes.github`): real sockets, no mocks.

Each fake follows the vendor's documented requests and answers closely enough that a
client written against the documentation works against it unchanged:

* :class:`BuildkiteFake` serves the Buildkite REST API v2 (``Authorization: Bearer``),
* :class:`GitLabFake` serves the GitLab REST API v4 (``PRIVATE-TOKEN``, trigger tokens).

The documentation each one follows:

- Buildkite: https://buildkite.com/docs/apis/rest-api (authentication: ``Authorization:
  Bearer``), https://buildkite.com/docs/apis/rest-api/builds (create, get, cancel a build),
  https://buildkite.com/docs/apis/rest-api/jobs (a job's log output; the ``.txt`` raw form),
  https://buildkite.com/docs/apis/rest-api/limits (``RateLimit-*`` headers, 429)
- GitLab: https://docs.gitlab.com/api/rest/authentication/ (``PRIVATE-TOKEN``; 401
  "401 Unauthorized"), https://docs.gitlab.com/api/rest/#namespaced-paths (URL-encoded
  project path), https://docs.gitlab.com/api/pipelines/ (create a pipeline, get one, cancel
  its jobs), https://docs.gitlab.com/api/pipeline_triggers/ (trigger with a token),
  https://docs.gitlab.com/api/jobs/ (a pipeline's jobs, a job's log: ``/trace``),
  https://docs.gitlab.com/api/rest/#pagination (``page``, ``per_page``, ``X-Next-Page``),
  https://docs.gitlab.com/administration/settings/user_and_ip_rate_limits/ (429 headers)

Both are :class:`fakes.api.FakeServer` values: they record every request, answer a wrong
token with the vendor's documented 401, and are scriptable: a plan per build or pipeline
(the states it goes through, its jobs and their logs) and faults
(:meth:`~fakes.api.FakeServer.fail`) played instead of the API's answer: 429 with the
vendor's reset headers, 5xx, a body that is not JSON.

The kit: the trial every test tries (:data:`TRIAL`), a recording sleep (:class:`Sleeps`),
and a :class:`Vendor` per provider (:data:`VENDORS`): its fake, its provider pointed at
the fake, and the vendor's words, so that what every hosted provider must do is tested
once for all three (tests/ci/test_http.py).
"""

from __future__ import annotations

import email.utils
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, Self, TypeVar
from urllib.parse import parse_qs, quote

import httpx
from packaging.version import Version

from fakes.api import TEXT_TYPE, FakeServer, Recorded, Reply, json_reply
from fakes.github import FakeGitHub, JobPlan, RunPlan, github_log, message
from fakes.sleeps import Sleeps, run
from govern.ci.base import Conclusion, RunStatus, Trial
from govern.ci.buildkite import Buildkite
from govern.ci.buildkite import from_config as buildkite_config
from govern.ci.github import GitHubActions
from govern.ci.gitlab import GitLab
from govern.ci.gitlab import from_config as gitlab_config
from govern.ci.hosted import HostedProvider, PipelineProvider, RunStates
from govern.ci.providers import github_actions
from govern.ci.providers import github_from_config as github_config

T = TypeVar("T")
CREATED_AT = "2026-06-01T11:59:00.000Z"
STARTED_AT = "2026-06-01T11:59:30.000Z"
FINISHED_AT = "2026-06-01T12:04:00.000Z"


# -- runs that follow a plan ----------------------------------------------------------------

Plan = TypeVar("Plan")


class PlannedRuns(FakeServer, Generic[Plan]):
    """A CI API whose runs (builds, pipelines) are numbered from ``first``; each created
    run follows the next plan queued with :meth:`plan`, else ``idle``."""

    def __init__(self, *, token: str, first: int, idle: Plan) -> None:
        super().__init__()
        self.token = token
        self.runs: dict[int, dict[str, Any]] = {}  # number -> the create request and state
        self._plans: list[Plan] = []
        self._idle = idle
        self._next = first

    def plan(self, plan: Plan) -> None:
        """Queue the plan the next created run follows."""
        with self._lock:
            self._plans.append(plan)

    def _new_run(self, **fields: Any) -> dict[str, Any]:
        """A new run that follows the next plan (with the lock held)."""
        number, self._next = self._next, self._next + 1
        plan = self._plans.pop(0) if self._plans else self._idle
        self.runs[number] = {"number": number, "plan": plan, "gets": 0, "canceled": False}
        self.runs[number].update(fields)
        return self.runs[number]

    @staticmethod
    def _shown(run: Mapping[str, Any], created: str, states: Sequence[str]) -> str:
        """The state a run shows: ``created`` until it is first read, then one of
        ``states`` at each read (the last repeats); ``canceled`` once cancelled."""
        if run["canceled"]:
            return "canceled"
        gets: int = run["gets"]
        return created if gets == 0 else states[min(gets, len(states)) - 1]


# -- Buildkite ------------------------------------------------------------------------------

BUILDKITE_UNAUTHORIZED = {
    "message": "Authentication required. Please supply a valid API Access Token: "
    "https://buildkite.com/docs/apis/rest-api#authentication"
}
_BK_FINISHED = frozenset({"passed", "failed", "canceled", "skipped", "not_run"})


def buildkite_rate_limited(reset: int, user_reset: int | None = None) -> Reply:
    """The documented 429: ``RateLimit-Remaining: 0`` and the seconds until the reset of
    the organization's window; with ``user_reset``, the user's own limit's headers too."""
    headers = {
        "RateLimit-Scope": "rest",
        "RateLimit-Remaining": "0",
        "RateLimit-Limit": "200",
        "RateLimit-Reset": str(reset),
    }
    if user_reset is not None:
        headers |= {"RateLimit-User-Remaining": "0", "RateLimit-User-Reset": str(user_reset)}
    return json_reply(
        429,
        {
            "message": "You have exceeded your API rate limit. "
            f"Please wait {reset} seconds before making more requests.",
            "scope": "rest",
            "limit": 200,
            "current": 201,
            "reset": reset,
        },
        headers,
    )


@dataclass(frozen=True)
class BuildkiteJob:
    """A job of a fake build, as it ends (while the build runs it shows as running)."""

    id: str
    name: str = "check"
    log: str = ""
    state: str = "passed"
    exit_status: int | None = 0
    type: str = "script"
    started: bool = True


@dataclass(frozen=True)
class BuildPlan:
    """What a created build does: the state each GET shows (the last repeats), its jobs."""

    states: tuple[str, ...] = ("scheduled", "running", "passed")
    jobs: tuple[BuildkiteJob, ...] = ()
    blocked: bool = False


class BuildkiteFake(PlannedRuns[BuildPlan]):
    """The Buildkite REST API for one organization's pipeline.

    Builds are numbered from ``first_number``; each created build follows the next plan
    queued with :meth:`plan` (a build with no plan stays ``scheduled``).
    """

    def __init__(
        self, *, token: str, organization: str, pipeline: str, first_number: int = 42
    ) -> None:
        """A fake that accepts ``token`` for ``organization/pipeline``."""
        super().__init__(token=token, first=first_number, idle=BuildPlan(states=("scheduled",)))
        self.organization = organization
        self.pipeline = pipeline

    @property
    def builds(self) -> dict[int, dict[str, Any]]:
        """Number -> the create request and state of each build."""
        return self.runs

    @property
    def builds_path(self) -> str:
        """``/v2/organizations/{org}/pipelines/{pipeline}/builds``."""
        return f"/v2/organizations/{self.organization}/pipelines/{self.pipeline}/builds"

    def route(self, request: Recorded) -> Reply:
        """Authenticate, then create, read or cancel builds and serve job logs."""
        headers = {
            "RateLimit-Scope": "rest",
            "RateLimit-Remaining": "180",
            "RateLimit-Limit": "200",
            "RateLimit-Reset": "42",
        }
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return json_reply(401, BUILDKITE_UNAUTHORIZED, headers)
        prefix = self.builds_path
        if not request.path.startswith(prefix):
            return json_reply(404, {"message": "Not Found"}, headers)
        parts = [p for p in request.path[len(prefix) :].split("/") if p]
        if not parts and request.method == "POST":
            return self._create(request, headers)
        if not parts or not parts[0].isdigit() or int(parts[0]) not in self.builds:
            return json_reply(404, {"message": "No build found"}, headers)
        build = self.builds[int(parts[0])]
        if parts[1:] == [] and request.method == "GET":
            build["gets"] += 1
            return json_reply(200, self._build(build), headers)
        if parts[1:] == ["cancel"] and request.method == "PUT":
            state = self._state(build)
            if state not in ("scheduled", "running", "failing"):
                return json_reply(
                    422, {"message": f"Build can't be canceled because it's {state}"}, headers
                )
            build["canceled"] = True
            return json_reply(200, self._build(build), headers)
        if len(parts) == 4 and parts[1] == "jobs" and parts[3] in ("log", "log.txt"):
            return self._log(build, parts[2], parts[3], request, headers)
        return json_reply(404, {"message": "Not Found"}, headers)

    def _create(self, request: Recorded, headers: dict[str, str]) -> Reply:
        try:
            body = request.json()
        except ValueError:
            return json_reply(400, {"message": "Problems parsing JSON"}, headers)
        missing = [k for k in ("commit", "branch") if not isinstance(body.get(k), str)]
        if missing:
            errors = [{"field": k, "code": "missing_field"} for k in missing]
            return json_reply(422, {"message": "Validation Failed", "errors": errors}, headers)
        build = self._new_run(request=body, variables=body.get("env", {}))
        return json_reply(201, self._build(build), headers)

    def _state(self, build: dict[str, Any]) -> str:
        return self._shown(build, "scheduled", build["plan"].states)

    def _build(self, build: dict[str, Any]) -> dict[str, Any]:
        """The documented build object."""
        number, request, plan = build["number"], build["request"], build["plan"]
        state = self._state(build)
        finished = state in _BK_FINISHED
        api = f"{self.base}{self.builds_path}/{number}"
        web = f"{self.base}/{self.organization}/{self.pipeline}/builds/{number}"
        jobs = []
        for job in plan.jobs:
            ran = job.started and state != "scheduled"
            done = finished and ran
            jobs.append(
                {
                    "id": job.id,
                    "graphql_id": f"Sm9i{job.id}",
                    "type": job.type,
                    "name": job.name,
                    "step_key": job.name,
                    "state": job.state if done else ("running" if ran else "scheduled"),
                    "web_url": f"{web}#{job.id}",
                    "log_url": f"{api}/jobs/{job.id}/log",
                    "raw_log_url": f"{api}/jobs/{job.id}/log.txt",
                    "command": "scripts/check.sh",
                    "soft_failed": False,
                    "exit_status": job.exit_status if done else None,
                    "created_at": CREATED_AT,
                    "scheduled_at": CREATED_AT,
                    "runnable_at": CREATED_AT,
                    "started_at": STARTED_AT if ran else None,
                    "finished_at": FINISHED_AT if done else None,
                    "retried": False,
                    "retried_in_job_id": None,
                }
            )
        return {
            "id": f"f62a1b4d-10f9-4790-bc1c-{number:012d}",
            "graphql_id": f"QnVpbGQ{number}",
            "url": api,
            "web_url": web,
            "number": number,
            "state": state,
            "cancel_reason": "canceled by govern" if state == "canceled" else None,
            "blocked": plan.blocked and not finished,
            "message": request.get("message"),
            "commit": request["commit"],
            "branch": request["branch"],
            "env": request.get("env", {}),
            "source": "api",
            "creator": {"id": "3d3c3bf0", "name": "govern", "email": "govern@example.org"},
            "jobs": jobs,
            "created_at": CREATED_AT,
            "scheduled_at": CREATED_AT,
            "started_at": None if state == "scheduled" else STARTED_AT,
            "finished_at": FINISHED_AT if finished else None,
            "meta_data": request.get("meta_data", {}),
            "pull_request": None,
            "pipeline": {"slug": self.pipeline, "name": self.pipeline},
        }

    def _log(
        self,
        build: dict[str, Any],
        job_id: str,
        form: str,
        request: Recorded,
        headers: dict[str, str],
    ) -> Reply:
        job = next((j for j in build["plan"].jobs if j.id == job_id), None)
        if job is None:
            return json_reply(404, {"message": "No job found"}, headers)
        raw = "text/plain" in request.headers.get("accept", "") and form == "log"
        if form == "log.txt" or raw:
            return Reply(200, job.log.encode(), TEXT_TYPE, headers)
        url = f"{self.base}{self.builds_path}/{build['number']}/jobs/{job_id}/log"
        document = {
            "url": url,
            "content": job.log,
            "size": len(job.log.encode()),
            "header_times": [],
        }
        return json_reply(200, document, headers)


# -- GitLab ---------------------------------------------------------------------------------

GITLAB_UNAUTHORIZED = {"message": "401 Unauthorized"}
_GL_FINISHED = frozenset({"success", "failed", "canceled", "skipped"})


def gitlab_rate_limited(reset_at: int, retry_after: int | None = None) -> Reply:
    """The documented 429 of a throttle: ``RateLimit-Reset`` is a Unix time."""
    headers = {
        "RateLimit-Name": "throttle_authenticated_api",
        "RateLimit-Limit": "60",
        "RateLimit-Observed": "67",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": str(reset_at),
        "RateLimit-ResetTime": email.utils.formatdate(reset_at, usegmt=True),
    }
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return Reply(429, b"Retry later\n", TEXT_TYPE, headers)


@dataclass(frozen=True)
class GitLabJob:
    """A job of a fake pipeline, as it ends (while the pipeline runs it shows as running)."""

    id: int
    name: str = "check"
    trace: str = ""
    status: str = "success"
    failure_reason: str | None = None
    started: bool = True
    allow_failure: bool = False


@dataclass(frozen=True)
class PipelinePlan:
    """What a created pipeline does: the status each GET shows (the last repeats), its jobs."""

    statuses: tuple[str, ...] = ("pending", "running", "success")
    jobs: tuple[GitLabJob, ...] = ()


class GitLabFake(PlannedRuns[PipelinePlan]):
    """The GitLab REST API v4 for one project, known by id and by path.

    ``token`` is accepted as ``PRIVATE-TOKEN`` (or ``Authorization: Bearer``);
    ``trigger_tokens`` start pipelines through the trigger API.
    """

    def __init__(
        self,
        *,
        token: str,
        project_id: int = 4242,
        project_path: str = "acme/tools/gpu-checks",
        trigger_tokens: Sequence[str] = (),
        first_id: int = 1001,
    ) -> None:
        """A fake that accepts ``token`` for the project."""
        idle = PipelinePlan(statuses=("pending",))
        super().__init__(token=token, first=first_id, idle=idle)
        self.project_id = project_id
        self.project_path = project_path
        self.trigger_tokens = tuple(trigger_tokens)

    @property
    def pipelines(self) -> dict[int, dict[str, Any]]:
        """Id -> the create request and state of each pipeline."""
        return self.runs

    @property
    def url(self) -> str:
        """The API root, ``http://127.0.0.1:<port>/api/v4``."""
        return f"{self.base}/api/v4"

    def route(self, request: Recorded) -> Reply:
        """Authenticate, then create, read or cancel pipelines and list jobs and logs."""
        prefix = "/api/v4/projects/"
        if not request.path.startswith(prefix):
            return json_reply(404, {"error": "404 Not Found"})
        project, _, rest = request.path[len(prefix) :].partition("/")
        parts = [p for p in rest.split("/") if p]
        if parts == ["trigger", "pipeline"] and request.method == "POST":
            # The trigger API authenticates with the token in the request, not a header.
            if not self._is_project(project):
                return json_reply(404, {"message": "404 Not Found"})
            return self._trigger(request)
        if not self._authenticated(request):
            return json_reply(401, GITLAB_UNAUTHORIZED)
        if not self._is_project(project):
            return json_reply(404, {"message": "404 Project Not Found"})
        if parts == ["pipeline"] and request.method == "POST":
            return self._create(request)
        if len(parts) >= 2 and parts[0] == "pipelines" and parts[1].isdigit():
            pipeline = self.pipelines.get(int(parts[1]))
            if pipeline is None:
                return json_reply(404, {"message": "404 Not found"})
            if parts[2:] == [] and request.method == "GET":
                pipeline["gets"] += 1
                return json_reply(200, self._pipeline(pipeline))
            if parts[2:] == ["jobs"] and request.method == "GET":
                return self._jobs(pipeline, request)
            if parts[2:] == ["cancel"] and request.method == "POST":
                pipeline["canceled"] = True  # "200 regardless of the pipeline's state"
                return json_reply(200, self._pipeline(pipeline))
        if len(parts) == 3 and parts[0] == "jobs" and parts[2] == "trace":
            return self._trace(parts[1])
        return json_reply(404, {"error": "404 Not Found"})

    def _is_project(self, segment: str) -> bool:
        return segment in (str(self.project_id), quote(self.project_path, safe=""))

    def _authenticated(self, request: Recorded) -> bool:
        token = request.headers.get("private-token")
        bearer = request.headers.get("authorization", "")
        if token is None and bearer.startswith("Bearer "):
            token = bearer[len("Bearer ") :]
        return token == self.token

    @staticmethod
    def _fields(request: Recorded) -> dict[str, Any]:
        """The request's attributes: query string, then a JSON or form body."""
        fields: dict[str, Any] = {k: v[-1] for k, v in request.query.items()}
        content_type = request.headers.get("content-type", "")
        if request.body and "json" in content_type:
            document = request.json()
            if isinstance(document, dict):
                fields.update(document)
        elif request.body:
            for key, values in parse_qs(request.body.decode()).items():
                if key.startswith("variables[") and key.endswith("]"):
                    fields.setdefault("variables", {})[key[10:-1]] = values[-1]
                else:
                    fields[key] = values[-1]
        return fields

    def _create(self, request: Recorded) -> Reply:
        fields = self._fields(request)
        if not isinstance(fields.get("ref"), str) or not fields["ref"]:
            return json_reply(400, {"error": "ref is missing"})
        variables = fields.get("variables", [])
        if not isinstance(variables, list) or not all(
            isinstance(v, dict) and isinstance(v.get("key"), str) for v in variables
        ):
            return json_reply(400, {"error": "variables is invalid"})
        values = {v["key"]: v.get("value") for v in variables}
        return self._new(fields["ref"], values, "api", request)

    def _trigger(self, request: Recorded) -> Reply:
        fields = self._fields(request)
        if not isinstance(fields.get("ref"), str) or not fields["ref"]:
            return json_reply(400, {"error": "ref is missing"})
        if not isinstance(fields.get("token"), str):
            return json_reply(400, {"error": "token is missing"})
        if fields["token"] not in self.trigger_tokens:
            return json_reply(404, {"message": "404 Not Found"})
        variables = fields.get("variables", {})
        if not isinstance(variables, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in variables.items()
        ):
            return json_reply(400, {"message": "variables needs to be a map of key-valued strings"})
        return self._new(fields["ref"], dict(variables), "trigger", request)

    def _new(self, ref: str, variables: dict[str, Any], source: str, request: Recorded) -> Reply:
        pipeline = self._new_run(ref=ref, variables=variables, source=source, request=request)
        return json_reply(201, self._pipeline(pipeline))

    def _status(self, pipeline: dict[str, Any]) -> str:
        return self._shown(pipeline, "created", pipeline["plan"].statuses)

    def _pipeline(self, pipeline: dict[str, Any]) -> dict[str, Any]:
        """The documented pipeline object."""
        status = self._status(pipeline)
        finished = status in _GL_FINISHED
        pipeline_id = pipeline["number"]
        return {
            "id": pipeline_id,
            "iid": pipeline_id - 1000,
            "project_id": self.project_id,
            "sha": "50f0acb76a40e34a4ff304f7347dcc6587da8a14",
            "ref": pipeline["ref"],
            "status": status,
            "source": pipeline["source"],
            "created_at": CREATED_AT,
            "updated_at": FINISHED_AT if finished else STARTED_AT,
            "web_url": f"{self.base}/{self.project_path}/-/pipelines/{pipeline_id}",
            "before_sha": "0000000000000000000000000000000000000000",
            "tag": False,
            "yaml_errors": None,
            "user": {"id": 1, "username": "govern", "name": "govern", "state": "active"},
            "started_at": None if status in ("created", "pending") else STARTED_AT,
            "finished_at": FINISHED_AT if finished else None,
            "committed_at": None,
            "duration": 270 if finished else None,
            "queued_duration": 0.5,
            "coverage": None,
            "detailed_status": {"text": status, "label": status, "group": status},
        }

    def _job(self, pipeline: dict[str, Any], job: GitLabJob) -> dict[str, Any]:
        status = self._status(pipeline)
        finished = status in _GL_FINISHED
        ran = job.started and status not in ("created", "pending")
        return {
            "id": job.id,
            "name": job.name,
            "stage": "test",
            "status": job.status if finished and ran else ("running" if ran else "created"),
            "failure_reason": job.failure_reason if finished else None,
            "allow_failure": job.allow_failure,
            "created_at": CREATED_AT,
            "started_at": STARTED_AT if ran else None,
            "finished_at": FINISHED_AT if finished and ran else None,
            "duration": 270.0 if finished and ran else None,
            "queued_duration": 0.5,
            "ref": pipeline["ref"],
            "tag": False,
            "web_url": f"{self.base}/{self.project_path}/-/jobs/{job.id}",
            "pipeline": {
                "id": pipeline["number"],
                "project_id": self.project_id,
                "ref": pipeline["ref"],
                "status": status,
            },
            "artifacts": [],
            "runner": None,
        }

    def _jobs(self, pipeline: dict[str, Any], request: Recorded) -> Reply:
        """A page of the pipeline's jobs, newest first (``page``, ``per_page`` up to 100)."""
        try:
            page = max(1, int(request.query.get("page", ["1"])[-1]))
            per_page = min(100, max(1, int(request.query.get("per_page", ["20"])[-1])))
        except ValueError:
            return json_reply(400, {"error": "page is invalid"})
        jobs = sorted(pipeline["plan"].jobs, key=lambda j: j.id, reverse=True)
        chunk = jobs[(page - 1) * per_page : page * per_page]
        pages = max(1, -(-len(jobs) // per_page))
        headers = {
            "X-Page": str(page),
            "X-Per-Page": str(per_page),
            "X-Total": str(len(jobs)),
            "X-Total-Pages": str(pages),
            "X-Next-Page": str(page + 1) if page < pages else "",
            "X-Prev-Page": str(page - 1) if page > 1 else "",
        }
        return json_reply(200, [self._job(pipeline, j) for j in chunk], headers)

    def _trace(self, job_id: str) -> Reply:
        for pipeline in self.pipelines.values():
            for job in pipeline["plan"].jobs:
                if str(job.id) == job_id and job.started:
                    return Reply(200, job.trace.encode(), TEXT_TYPE)
        return json_reply(404, {"message": "404 Not Found"})


# -- the kit --------------------------------------------------------------------------------

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
MARKER = "govern-verify: installed cupy-cuda13x==14.1.1"
TRIAL = Trial(
    package="cupy-cuda13x",
    version=Version("14.1.1"),
    profile="cuda13-linux",
    correlation_id="govern-17-1",
    clause="<14.1.0",
)
#: the trial of an exclusion with its own check
REPRODUCED = replace(
    TRIAL,
    correlation_id="govern-17-2",
    clause="",
    reproducer="python -c 'import cupy; cupy.arange(3).sum()'",
)
#: what must never appear in a message, a log or a repr (parts of the tokens below)
SECRETS = ("SECRETTOKEN", "SECRETTRIGGER", "WRONGTOKEN")

P = TypeVar("P", bound=HostedProvider)
F = TypeVar("F", bound=FakeServer)


async def start_and_poll(
    provider: HostedProvider, polls: int = 10, trial: Trial = TRIAL
) -> list[RunStatus]:
    """Start the trial, then poll until it ends (or ``polls`` times)."""
    started = await provider.start(trial)
    seen = []
    for _ in range(polls):
        status = await provider.status(trial, started.run)
        seen.append(status)
        if status.done:
            break
    return seen


@dataclass(frozen=True)
class Ending:
    """How a run is expected to end: conclusion, evidence, and a part of the detail."""

    conclusion: Conclusion | None
    installed: str | None
    detail: str

    def check(self, status: RunStatus) -> None:
        """Assert that ``status`` ended so."""
        assert status.conclusion is self.conclusion
        assert status.installed == self.installed
        assert self.detail in status.detail


class Vendor(ABC, Generic[P, F]):
    """One vendor's fake API, its provider pointed at the fake, and the vendor's words."""

    kind: ClassVar[str]  # the provider kind, as configured
    name: ClassVar[str]  # how the provider's messages name the vendor
    table_name: ClassVar[str]  # the NAME of [tool.govern.ci.NAME]
    token: ClassVar[str]  # the token the fake accepts
    wrong: ClassVar[str]  # a token it refuses
    variable: ClassVar[str]  # token-env's default
    table: ClassVar[dict[str, Any]]  # the smallest valid [tool.govern.ci.NAME] table
    unauthorized: ClassVar[str]  # the vendor's message with a 401
    api_run: ClassVar[str]  # the API path of run {id}
    web_run: ClassVar[str]  # where a person sees run {id}, under the fake's root
    log_path: ClassVar[str]  # how the API path of a job's log ends
    cancel_method: ClassVar[str] = "POST"  # the method of the cancel request
    limit_status: ClassVar[int] = 429  # the status of a rate-limited answer
    create_attempts: ClassVar[int] = 3  # how often a create request is sent (5xx)
    progress: ClassVar[tuple[str, ...]]  # the states a run shows before it ends
    finished_at: ClassVar[datetime] = datetime(2026, 6, 1, 12, 4, tzinfo=UTC)
    cancelled: ClassVar[str]  # a part of the detail of a run govern cancelled
    refused_cancel: ClassVar[int | None] = None  # the status of cancelling a finished run
    not_a_run: ClassVar[str]  # a part of the message for a run id that is not one

    def __init__(self) -> None:
        self.fake = self.new_fake()

    @contextmanager
    def serving(self) -> Iterator[Self]:
        """The fake started for the block, stopped (threads joined) after it."""
        with self.fake:
            yield self

    @abstractmethod
    def new_fake(self) -> F:
        """The vendor's fake (stopped)."""

    @abstractmethod
    def provider(self, http: httpx.AsyncClient, **settings: Any) -> P:
        """The provider pointed at the fake (``settings`` override the defaults)."""

    @abstractmethod
    def configure(
        self, options: Mapping[str, Any], *, http: httpx.AsyncClient, environ: Mapping[str, str]
    ) -> P:
        """The provider's ``from_config``."""

    def using(
        self,
        action: Callable[[P], Awaitable[T]],
        *,
        token: str | None = None,
        sleeps: Sleeps | None = None,
        **options: Any,
    ) -> T:
        """Run ``action`` with a provider pointed at the fake (fixed clock, recorded
        sleeps) on a fresh client."""
        settings = {
            "token": token or self.token,
            "sleep": sleeps or Sleeps(),
            "clock": lambda: NOW,
            **options,
        }

        async def main() -> T:
            async with httpx.AsyncClient(timeout=5.0) as http:
                return await action(self.provider(http, **settings))

        return run(main())

    def configured(self, options: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> P:
        """A provider from a table (and the token in its default variable), no server."""

        async def build() -> P:
            async with httpx.AsyncClient() as http:
                env = {self.variable: self.token} if environ is None else environ
                return self.configure(options, http=http, environ=env)

        return run(build())

    @abstractmethod
    def will_end(self, passed: bool, log: str, progress: Sequence[str] = ("running",)) -> None:
        """The next run shows ``progress``, then passes or fails; its one job logs ``log``."""

    @abstractmethod
    def will_run(self) -> None:
        """The next run never ends."""

    @abstractmethod
    def will_stop(self, outcome: str) -> None:
        """The next run is ``cancelled`` or ``skipped`` (its job would have passed)."""

    @abstractmethod
    def rate_limited(self, seconds: int) -> Reply:
        """The vendor's documented rate-limited answer, ``seconds`` after :data:`NOW`."""

    def token_of(self, request: Recorded) -> str | None:
        """The token a request carried in its header (a bearer token)."""
        return request.headers.get("authorization", "").removeprefix("Bearer ") or None

    @abstractmethod
    def runs(self) -> list[str]:
        """The ids of the runs created so far, oldest first."""

    @abstractmethod
    def received(self) -> list[dict[str, str]]:
        """The trial each run received, as ``package``, ``version``, ... strings."""

    def run_path(self, run_id: str) -> str:
        """The API path of a run."""
        return self.api_run.format(id=run_id)

    def web_url(self, run_id: str) -> str:
        """Where a person sees the run."""
        return self.fake.base + self.web_run.format(id=run_id)

    @abstractmethod
    def running(self, run_id: str, state: str) -> str:
        """The detail of a run still in ``state``."""

    @abstractmethod
    def passed(self, run_id: str) -> str:
        """The detail of a run that passed."""

    @abstractmethod
    def failed(self, run_id: str) -> str:
        """The detail of a run that failed (:meth:`will_end`)."""

    @abstractmethod
    def stopped(self, run_id: str, outcome: str) -> str:
        """The detail of a run that was ``cancelled`` or ``skipped`` (:meth:`will_stop`)."""

    def credentials(self) -> list[tuple[str, dict[str, Any]]]:
        """The tokens (and the provider options that go with them) a provider may use."""
        return [(self.token, {})]


PF = TypeVar("PF", bound=PlannedRuns[Any])
PP = TypeVar("PP", bound=PipelineProvider)


class PipelineVendor(Vendor[PP, PF]):
    """Buildkite or GitLab: runs that follow a plan, named as the provider's states say."""

    waiting: ClassVar[str]  # the state of a run before it runs
    failure_note: ClassVar[str]  # how a detail says why the job of a failed run failed
    provider_states: ClassVar[RunStates]

    @abstractmethod
    def plan(self, states: Sequence[str], log: str, *, passed: bool = True) -> None:
        """The next run shows ``states``; its one job logs ``log`` and passes or fails."""

    def will_end(self, passed: bool, log: str, progress: Sequence[str] = ("running",)) -> None:
        states = self.provider_states
        self.plan((*progress, states.passed if passed else states.failed), log, passed=passed)

    def will_run(self) -> None:
        self.plan((self.waiting, "running"), "")

    def will_stop(self, outcome: str) -> None:
        self.plan(("running", "canceled" if outcome == "cancelled" else outcome), MARKER)

    def runs(self) -> list[str]:
        return [str(number) for number in self.fake.runs]

    def received(self) -> list[dict[str, str]]:
        return [_fields(run["variables"]) for run in self.fake.runs.values()]

    def running(self, run_id: str, state: str) -> str:
        return f"{self.provider_states.noun} {run_id} {state}"

    def passed(self, run_id: str) -> str:
        return self.running(run_id, self.provider_states.passed_word)

    def failed(self, run_id: str) -> str:
        return self.running(run_id, f"failed: job 'check' failed{self.failure_note}")

    def stopped(self, run_id: str, outcome: str) -> str:
        if outcome == "cancelled":
            return self.running(run_id, "was canceled")
        return self.running(run_id, f"was {outcome}: the check did not run")


# -- the vendors ----------------------------------------------------------------------------


class BuildkiteVendor(PipelineVendor[Buildkite, BuildkiteFake]):
    """Buildkite: builds of acme/gpu-checks, numbered from 42."""

    kind = "buildkite"
    name = "buildkite"
    table_name = "gpu"
    token = "bkua_SECRETTOKEN123456"
    wrong = "bkua_WRONGTOKEN654321"
    variable = "BUILDKITE_API_TOKEN"
    table: ClassVar[dict[str, Any]] = {"organization": "acme", "pipeline": "gpu-checks"}
    unauthorized = BUILDKITE_UNAUTHORIZED["message"]
    api_run = "/v2/organizations/acme/pipelines/gpu-checks/builds/{id}"
    web_run = "/acme/gpu-checks/builds/{id}"
    log_path = "/log.txt"
    cancel_method = "PUT"
    progress = ("scheduled", "running", "running")
    cancelled = "canceled by govern"
    refused_cancel = 422
    not_a_run = "is not a build number"
    waiting = "scheduled"
    failure_note = " with exit status 1"
    provider_states = Buildkite.states

    def new_fake(self) -> BuildkiteFake:
        return BuildkiteFake(token=self.token, organization="acme", pipeline="gpu-checks")

    def provider(self, http: httpx.AsyncClient, **settings: Any) -> Buildkite:
        options = {**self.table, "api_url": self.fake.url, **settings}
        return Buildkite(self.table_name, http=http, **options)

    def configure(
        self, options: Mapping[str, Any], *, http: httpx.AsyncClient, environ: Mapping[str, str]
    ) -> Buildkite:
        return buildkite_config(self.table_name, options, http=http, environ=environ)

    def plan(self, states: Sequence[str], log: str, *, passed: bool = True) -> None:
        state, exit_status = ("passed", 0) if passed else ("failed", 1)
        job = BuildkiteJob("j1", log=log, state=state, exit_status=exit_status)
        self.fake.plan(BuildPlan(states=tuple(states), jobs=(job,)))

    def rate_limited(self, seconds: int) -> Reply:
        return buildkite_rate_limited(seconds)


class GitLabVendor(PipelineVendor[GitLab, GitLabFake]):
    """GitLab: pipelines of project 4242 (acme/tools/gpu-checks), numbered from 1001."""

    kind = "gitlab"
    name = "gitlab"
    table_name = "gl"
    token = "glpat-SECRETTOKEN123456"
    trigger = "glptt-SECRETTRIGGER654321"
    wrong = "glpat-WRONGTOKEN000000"
    variable = "GITLAB_TOKEN"
    path = "acme/tools/gpu-checks"
    table: ClassVar[dict[str, Any]] = {"project": path}
    unauthorized = GITLAB_UNAUTHORIZED["message"]
    api_run = f"/api/v4/projects/{quote(path, safe='')}/pipelines/{{id}}"
    web_run = f"/{path}/-/pipelines/{{id}}"
    log_path = "/trace"
    progress = ("created", "pending", "running")
    cancelled = "was canceled"
    not_a_run = "is not a pipeline id"
    waiting = "pending"
    failure_note = " (script_failure)"
    provider_states = GitLab.states

    def new_fake(self) -> GitLabFake:
        return GitLabFake(token=self.token, project_path=self.path, trigger_tokens=[self.trigger])

    def provider(self, http: httpx.AsyncClient, **settings: Any) -> GitLab:
        options = {**self.table, "api_url": self.fake.url, **settings}
        return GitLab(self.table_name, http=http, **options)

    def configure(
        self, options: Mapping[str, Any], *, http: httpx.AsyncClient, environ: Mapping[str, str]
    ) -> GitLab:
        return gitlab_config(self.table_name, options, http=http, environ=environ)

    def plan(self, states: Sequence[str], log: str, *, passed: bool = True) -> None:
        # the job ends as the pipeline does
        status, reason = (states[-1], None) if passed else ("failed", "script_failure")
        job = GitLabJob(1, trace=log, status=status, failure_reason=reason)
        self.fake.plan(PipelinePlan(statuses=tuple(states), jobs=(job,)))

    def rate_limited(self, seconds: int) -> Reply:
        return gitlab_rate_limited(int(NOW.timestamp()) + seconds)

    def token_of(self, request: Recorded) -> str | None:
        return request.headers.get("private-token")

    def credentials(self) -> list[tuple[str, dict[str, Any]]]:
        trigger = {"token_kind": "trigger", "read_token": self.token}
        return [(self.token, {}), (self.trigger, trigger)]


class GitHubVendor(Vendor[GitHubActions, FakeGitHub]):
    """GitHub Actions: the workflow verify.yml of octo-org/verify-lab, dispatched."""

    kind = "github-actions"
    name = "GitHub"
    table_name = "gha"
    token = "ghp_SECRETTOKEN123456"
    wrong = "ghp_WRONGTOKEN000000"
    variable = "GITHUB_TOKEN"
    table: ClassVar[dict[str, Any]] = {
        "repository": "octo-org/verify-lab",
        "workflow": "verify.yml",
    }
    unauthorized = "Bad credentials"
    api_run = "/repos/octo-org/verify-lab/actions/runs/{id}"
    web_run = "/octo-org/verify-lab/actions/runs/{id}"
    log_path = "/logs"
    limit_status = 403  # GitHub's primary rate limit
    create_attempts = 1  # a dispatch is sent once: a lost answer may have started a run
    progress = ("queued", "in_progress")
    finished_at = datetime(2026, 6, 2, 10, 5, tzinfo=UTC)
    cancelled = "the run was cancelled"
    refused_cancel = 409
    not_a_run = "not a workflow run id"

    def __init__(self, **fake: Any) -> None:
        self._settings = fake
        super().__init__()

    def new_fake(self) -> FakeGitHub:
        return FakeGitHub(token=self.token, **self._settings)

    def provider(self, http: httpx.AsyncClient, **settings: Any) -> GitHubActions:
        fake = self.fake
        options = {"repository": fake.repository, "workflow": fake.workflow, **settings}
        return github_actions(self.table_name, http=http, api_url=fake.url, **options)

    def configure(
        self, options: Mapping[str, Any], *, http: httpx.AsyncClient, environ: Mapping[str, str]
    ) -> GitHubActions:
        return github_config(self.table_name, options, http=http, environ=environ)

    def will_end(self, passed: bool, log: str, progress: Sequence[str] = ("in_progress",)) -> None:
        conclusion = "success" if passed else "failure"
        states = (*((state, None) for state in progress), ("completed", conclusion))
        job = JobPlan(conclusion=conclusion, log=github_log(*log.splitlines()))
        self.fake.plan = RunPlan(states=states, jobs=(job,))

    def will_run(self) -> None:
        self.fake.plan = RunPlan(states=(("queued", None), ("in_progress", None)))

    def will_stop(self, outcome: str) -> None:
        job = JobPlan(conclusion=None, log=github_log(MARKER))
        self.fake.plan = RunPlan(
            states=(("in_progress", None), ("completed", outcome)), jobs=(job,)
        )

    def rate_limited(self, seconds: int) -> Reply:
        reset = str(int(NOW.timestamp()) + seconds)
        headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}
        return message(403, "API rate limit exceeded for user ID 1.", **headers)

    def runs(self) -> list[str]:
        return [str(run_id) for run_id in self.fake.run_ids()]

    def received(self) -> list[dict[str, str]]:
        return [self.fake.inputs_of(run_id) for run_id in self.fake.run_ids()]

    def running(self, run_id: str, state: str) -> str:
        return f"the workflow run is {state}"

    def passed(self, run_id: str) -> str:
        return "the workflow run succeeded"

    def failed(self, run_id: str) -> str:
        return "the workflow run failed: job verify failed"

    def stopped(self, run_id: str, outcome: str) -> str:
        return f"the run was {outcome}"


#: every vendor by its kind
VENDORS: dict[str, type[Vendor[Any, Any]]] = {
    vendor.kind: vendor for vendor in (GitHubVendor, BuildkiteVendor, GitLabVendor)
}


def _fields(variables: Mapping[str, str]) -> dict[str, str]:
    """``GOVERN_PACKAGE`` ... as the trial's fields: ``package`` ..."""
    return {key.removeprefix("GOVERN_").lower(): value for key, value in variables.items()}
