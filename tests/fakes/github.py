"""A fake of GitHub's REST API on 127.0.0.1 for the github-actions provider's tests.

:class:`FakeGitHub` serves one repository the way GitHub documents its REST API (version
2022-11-28): real sockets, real HTTP, no mocks. On :class:`fakes.api.FakeServer` it
records every request (method, path, query, headers, body), refuses a wrong token as
GitHub does (401 "Bad credentials"), and can be scripted to misbehave
(:meth:`~fakes.api.FakeServer.fail`): 403 with ``x-ratelimit-remaining: 0``, 429 with
``retry-after``, 5xx, invalid JSON (:func:`message` writes GitHub's error body).

Job logs are served the way GitHub serves them: the API answers 302 with a ``Location`` on
another host (here a second server on another port, :attr:`FakeGitHub.blob_requests`
records what reaches it), so a test can check that the token never travels there.

The endpoints, with the documentation each one follows:

- POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches
  https://docs.github.com/en/rest/actions/workflows#create-a-workflow-dispatch-event
  (204; 200 with ``workflow_run_id``, ``run_url`` and ``html_url`` when the body has
  ``return_run_details: true``, https://github.blog/changelog/2026-02-19-workflow-dispatch-api-now-returns-run-ids)
- GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs
  https://docs.github.com/en/rest/actions/workflow-runs#list-workflow-runs-for-a-workflow
- GET /repos/{owner}/{repo}/actions/runs/{run_id}
  https://docs.github.com/en/rest/actions/workflow-runs#get-a-workflow-run
- POST /repos/{owner}/{repo}/actions/runs/{run_id}/cancel
  https://docs.github.com/en/rest/actions/workflow-runs#cancel-a-workflow-run (202; 409)
- GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs
  https://docs.github.com/en/rest/actions/workflow-jobs#list-jobs-for-a-workflow-run
- GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs
  https://docs.github.com/en/rest/actions/workflow-jobs#download-job-logs-for-a-workflow-run
  (302 to a plain-text download that expires)
- GET /repos/{owner}/{repo}/commits/{ref}/check-runs
  https://docs.github.com/en/rest/checks/runs#list-check-runs-for-a-git-reference
- rate limits: https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
  and https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from fakes.api import FakeServer, Recorded, Reply, json_reply

API_VERSION = "2022-11-28"
DOCS = "https://docs.github.com/rest"
#: The inputs the documented verify workflow declares (reproducer and pins are optional).
WORKFLOW_INPUTS = (
    "package",
    "version",
    "requirement",
    "profile",
    "correlation_id",
    "reproducer",
    "pins",
)
REQUIRED_INPUTS = ("package", "version", "requirement", "profile", "correlation_id")


def message(status: int, text: str, **headers: str) -> Reply:
    """GitHub's error body: ``{"message": ..., "documentation_url": ...}`` (header names
    written with ``_`` for ``-``)."""
    body = {"message": text, "documentation_url": DOCS, "status": str(status)}
    return json_reply(status, body, {k.replace("_", "-"): v for k, v in headers.items()})


@dataclass(frozen=True)
class JobPlan:
    """A job of a run: its name, how it ends and its log (GitHub prefixes timestamps)."""

    name: str = "verify"
    conclusion: str | None = "success"
    log: str = ""


@dataclass(frozen=True)
class RunPlan:
    """How a run goes: the (status, conclusion) it shows at each GET (the last repeats)."""

    states: tuple[tuple[str, str | None], ...] = (("completed", "success"),)
    jobs: tuple[JobPlan, ...] = (JobPlan(),)


@dataclass
class _Run:
    id: int
    workflow: str
    display_title: str
    event: str
    head_branch: str
    created_at: datetime
    states: list[tuple[str, str | None]]
    jobs: list[tuple[int, JobPlan]]
    inputs: dict[str, str]
    hidden_listings: int = 0
    shown: tuple[str, str | None] = ("queued", None)


def github_log(*lines: str) -> str:
    """A job log as GitHub writes it: each line prefixed with a timestamp."""
    return "".join(
        f"2026-06-02T10:00:{i % 60:02d}.1234567Z {line}\n" for i, line in enumerate(lines)
    )


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _LogHost(FakeServer):
    """The host GitHub's log downloads redirect to: another origin than the API."""

    def __init__(self, route: Callable[[Recorded], Reply]) -> None:
        super().__init__()
        self._route = route

    def route(self, request: Recorded) -> Reply:
        return self._route(request)


# -- the fake -------------------------------------------------------------------------------


class FakeGitHub(FakeServer):
    """GitHub's REST API for one repository, and a second host for log downloads.

    ``supports_run_details=False`` answers like a server from before February 2026: a
    dispatch body with ``return_run_details`` is a 422 ("not a permitted key").
    ``list_lag`` hides each new run from that many listings (GitHub lists a dispatched
    run a few seconds late).
    """

    def __init__(
        self,
        *,
        token: str,
        owner: str = "octo-org",
        repo: str = "verify-lab",
        workflow: str = "verify.yml",
        workflow_id: int = 161335,
        branches: Sequence[str] = ("main",),
        supports_run_details: bool = True,
        inputs: Sequence[str] = WORKFLOW_INPUTS,
    ) -> None:
        """A stopped fake; start() (or ``with``) serves it. ``inputs`` are the ones the
        workflow declares (the README's workflow by default)."""
        super().__init__()
        self.token = token
        self.owner = owner
        self.repo = repo
        self.workflow = workflow
        self.workflow_id = workflow_id
        self.branches = set(branches)
        self.supports_run_details = supports_run_details
        self.declared_inputs = tuple(inputs)
        self.list_lag = 0
        self.plan = RunPlan()
        self._runs: dict[int, _Run] = {}
        self._logs: dict[int, str] = {}
        self._checks: dict[str, list[dict[str, Any]]] = {}
        self._signatures: dict[int, str] = {}
        self._next_id = 30433642
        self._blob = _LogHost(self._route_blob)

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Serve the API and the log host, each on a free port of 127.0.0.1."""
        super().start()
        self._blob.start()

    def stop(self) -> None:
        """Stop both servers, close their connections and join their threads."""
        self._blob.stop()
        super().stop()

    @property
    def blob_url(self) -> str:
        """The root of the host that serves log downloads."""
        return self._blob.base

    @property
    def blob_requests(self) -> list[Recorded]:
        """The requests the log host received."""
        return self._blob.sent()

    @property
    def repository(self) -> str:
        """``owner/repo``."""
        return f"{self.owner}/{self.repo}"

    def repo_path(self, rest: str) -> str:
        """An API path under the repository."""
        return f"/repos/{self.owner}/{self.repo}/{rest}"

    # -- scripting ---------------------------------------------------------------------------

    def add_run(
        self,
        title: str,
        plan: RunPlan | None = None,
        *,
        event: str = "workflow_dispatch",
        branch: str = "main",
        created_at: datetime | None = None,
    ) -> int:
        """A run already in the repository (a decoy, or one to read); returns its id."""
        with self._lock:
            return self._create(title, plan or self.plan, event, branch, created_at, {})

    def add_check_run(
        self,
        ref: str,
        name: str,
        status: str = "completed",
        conclusion: str | None = "success",
        *,
        log: str | None = None,
        app: str = "github-actions",
    ) -> int:
        """A check run of ``ref``; with a log it is an Actions job whose log can be read."""
        with self._lock:
            check_id = self._new_id()
            if log is not None:
                self._logs[check_id] = log
            self._checks.setdefault(ref, []).append(
                {
                    "id": check_id,
                    "head_sha": "ce587453ced02b1526dfb4cb910479d431683101",
                    "node_id": "MDg6Q2hlY2tSdW40",
                    "external_id": "",
                    "url": f"{self.url}{self.repo_path(f'check-runs/{check_id}')}",
                    "html_url": f"{self.url}/{self.repository}/runs/{check_id}",
                    "details_url": f"{self.url}/{self.repository}/actions/runs/1/job/{check_id}",
                    "status": status,
                    "conclusion": conclusion,
                    "started_at": "2026-06-02T10:00:00Z",
                    "completed_at": "2026-06-02T10:05:00Z" if status == "completed" else None,
                    "name": name,
                    "app": {"id": 15368, "slug": app, "name": app},
                    "pull_requests": [],
                }
            )
            return check_id

    def reveal_all(self) -> None:
        """List every hidden run from now on."""
        with self._lock:
            for run in self._runs.values():
                run.hidden_listings = 0

    def run_ids(self) -> list[int]:
        """The ids of every run, oldest first."""
        with self._lock:
            return sorted(self._runs)

    def inputs_of(self, run_id: int) -> dict[str, str]:
        """The inputs a dispatched run received."""
        with self._lock:
            return dict(self._runs[run_id].inputs)

    def job_ids(self, run_id: int) -> list[int]:
        """The ids of a run's jobs."""
        with self._lock:
            return [job_id for job_id, _ in self._runs[run_id].jobs]

    # -- routing -----------------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _create(
        self,
        title: str,
        plan: RunPlan,
        event: str,
        branch: str,
        created_at: datetime | None,
        inputs: dict[str, str],
    ) -> int:
        run_id = self._new_id()
        jobs = []
        for job in plan.jobs:
            job_id = self._new_id()
            self._logs[job_id] = job.log
            jobs.append((job_id, job))
        self._runs[run_id] = _Run(
            id=run_id,
            workflow=self.workflow,
            display_title=title,
            event=event,
            head_branch=branch,
            created_at=created_at or datetime.now(UTC),
            states=list(plan.states),
            jobs=jobs,
            inputs=inputs,
            hidden_listings=self.list_lag,
        )
        return run_id

    def route(self, request: Recorded) -> Reply:
        """Authenticate as GitHub does, then answer the repository's endpoints."""
        if request.headers.get("authorization") != f"Bearer {self.token}":
            # https://docs.github.com/en/rest/authentication/authenticating-to-the-rest-api
            return message(401, "Bad credentials")
        if request.headers.get("x-github-api-version", API_VERSION) != API_VERSION:
            # https://docs.github.com/en/rest/about-the-rest-api/api-versions
            return message(400, "Unsupported 'X-GitHub-Api-Version' header")
        try:
            body = request.json() if request.body else None
        except ValueError:
            return message(400, "Problems parsing JSON")
        return self._answer(request, unquote(request.path), body)

    def _answer(self, request: Recorded, path: str, body: Any) -> Reply:
        prefix = f"/repos/{self.owner}/{self.repo}/"
        if not path.startswith(prefix):
            return message(404, "Not Found")
        rest = path.removeprefix(prefix)
        parts = rest.split("/")
        method = request.method
        if rest.startswith("commits/") and rest.endswith("/check-runs") and method == "GET":
            return self._check_runs(rest.removeprefix("commits/").removesuffix("/check-runs"))
        if parts[:2] == ["actions", "workflows"] and len(parts) == 4:
            if parts[2] not in (self.workflow, str(self.workflow_id)):
                return message(404, "Not Found")
            if parts[3] == "dispatches" and method == "POST":
                return self._dispatch(body)
            if parts[3] == "runs" and method == "GET":
                return self._list_runs(request.query)
        if parts[:2] == ["actions", "runs"] and len(parts) >= 3 and parts[2].isdigit():
            run = self._runs.get(int(parts[2]))
            if run is None:
                return message(404, "Not Found")
            if len(parts) == 3 and method == "GET":
                return self._get_run(run)
            if parts[3:] == ["jobs"] and method == "GET":
                return self._jobs(run)
            if parts[3:] == ["cancel"] and method == "POST":
                return self._cancel(run)
        if parts[:2] == ["actions", "jobs"] and parts[3:] == ["logs"] and parts[2].isdigit():
            return self._log_redirect(int(parts[2]))
        return message(404, "Not Found")

    def _dispatch(self, body: Any) -> Reply:
        """Create a workflow dispatch event (validated as GitHub validates it)."""
        allowed = {"ref", "inputs"} | (
            {"return_run_details"} if self.supports_run_details else set()
        )
        if not isinstance(body, dict) or not isinstance(body.get("ref"), str):
            return message(422, "Invalid request.\n\nFor 'links/0/schema', nil is not an object.")
        extra = sorted(set(body) - allowed)
        if extra:
            return message(422, f'Invalid request.\n\n"{extra[0]}" is not a permitted key.')
        if body["ref"].removeprefix("refs/heads/") not in self.branches:
            return message(422, f"No ref found for: {body['ref']}")
        inputs = body.get("inputs", {})
        if not isinstance(inputs, dict) or not all(isinstance(v, str) for v in inputs.values()):
            return message(422, "Invalid request.\n\nFor 'properties/inputs', not a string map.")
        unexpected = sorted(set(inputs) - set(self.declared_inputs))
        if unexpected:
            return message(422, f"Unexpected inputs provided: {unexpected}")
        missing = [name for name in REQUIRED_INPUTS if name not in inputs]
        if missing:
            return message(422, f"Required input '{missing[0]}' not provided")
        branch = body["ref"].removeprefix("refs/heads/")
        # The workflow's run-name: govern verify ${{ inputs.correlation_id }}
        title = f"govern verify {inputs['correlation_id']}"
        run_id = self._create(title, self.plan, "workflow_dispatch", branch, None, dict(inputs))
        if body.get("return_run_details") is True:
            return json_reply(
                200,
                {
                    "workflow_run_id": run_id,
                    "run_url": f"{self.url}{self.repo_path(f'actions/runs/{run_id}')}",
                    "html_url": self._html(run_id),
                },
            )
        return Reply(204, content_type=None)

    def _html(self, run_id: int) -> str:
        return f"{self.url}/{self.repository}/actions/runs/{run_id}"

    def _run_json(self, run: _Run) -> dict[str, Any]:
        status, conclusion = run.shown
        return {
            "id": run.id,
            "name": "govern verify",
            "display_title": run.display_title,
            "node_id": "MDEyOldvcmtmbG93IFJ1bjI2OTI4OQ==",
            "head_branch": run.head_branch,
            "head_sha": "acb5820ced9479c074f688cc328bf03f341a511d",
            "path": f".github/workflows/{run.workflow}",
            "run_number": run.id % 1000,
            "run_attempt": 1,
            "event": run.event,
            "status": status,
            "conclusion": conclusion,
            "workflow_id": self.workflow_id,
            "url": f"{self.url}{self.repo_path(f'actions/runs/{run.id}')}",
            "html_url": self._html(run.id),
            "jobs_url": f"{self.url}{self.repo_path(f'actions/runs/{run.id}/jobs')}",
            "logs_url": f"{self.url}{self.repo_path(f'actions/runs/{run.id}/logs')}",
            "created_at": _iso(run.created_at),
            "updated_at": "2026-06-02T10:05:00Z" if status == "completed" else _iso(run.created_at),
            "run_started_at": _iso(run.created_at),
        }

    def _list_runs(self, query: Mapping[str, Sequence[str]]) -> Reply:
        """List workflow runs for a workflow: newest first, filtered like GitHub."""

        def one(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values else None

        since: datetime | None = None
        created = one("created")
        if created is not None:
            if not created.startswith(">="):
                return message(422, "Validation Failed")
            since = datetime.fromisoformat(created.removeprefix(">="))
        per_page = int(one("per_page") or 30)
        listed = []
        for run in sorted(self._runs.values(), key=lambda r: r.id, reverse=True):
            if one("event") not in (None, run.event):
                continue
            if one("branch") not in (None, run.head_branch):
                continue
            if since is not None and run.created_at < since:
                continue
            if run.hidden_listings > 0:
                run.hidden_listings -= 1
                continue
            listed.append(self._run_json(run))
        return json_reply(200, {"total_count": len(listed), "workflow_runs": listed[:per_page]})

    def _get_run(self, run: _Run) -> Reply:
        """Get a workflow run: each GET moves it to the next scripted state."""
        run.shown = run.states.pop(0) if len(run.states) > 1 else run.states[0]
        return json_reply(200, self._run_json(run))

    def _jobs(self, run: _Run) -> Reply:
        """List jobs for a workflow run (they end as the run shows)."""
        status, _ = run.shown
        jobs = []
        for job_id, job in run.jobs:
            jobs.append(
                {
                    "id": job_id,
                    "run_id": run.id,
                    "run_attempt": 1,
                    "name": job.name,
                    "status": status,
                    "conclusion": job.conclusion if status == "completed" else None,
                    "html_url": f"{self._html(run.id)}/job/{job_id}",
                    "check_run_url": f"{self.url}{self.repo_path(f'check-runs/{job_id}')}",
                    "steps": [],
                }
            )
        return json_reply(200, {"total_count": len(jobs), "jobs": jobs})

    def _cancel(self, run: _Run) -> Reply:
        """Cancel a workflow run: 202, or 409 once it has completed."""
        if run.shown[0] == "completed":
            return message(409, "Cannot cancel a workflow run that is completed.")
        run.states = [("completed", "cancelled")]
        return json_reply(202, {})

    def _log_redirect(self, job_id: int) -> Reply:
        """Download job logs: 302 to a signed URL on the log host (expires after a minute)."""
        if job_id not in self._logs:
            return message(404, "Not Found")
        signature = secrets.token_hex(8)
        self._signatures[job_id] = signature
        location = f"{self.blob_url}/logs/{job_id}.txt?sig={signature}&se=2026-06-02T10%3A01"
        return Reply(302, b"", "text/plain", {"Location": location})

    def _check_runs(self, ref: str) -> Reply:
        """List check runs for a Git reference (sha, branch, tag or refs/pull/N/head)."""
        runs = self._checks.get(ref, [])
        return json_reply(200, {"total_count": len(runs), "check_runs": runs})

    def _route_blob(self, request: Recorded) -> Reply:
        """The log host: plain text for a valid signature, else 403 (like blob storage)."""
        name = request.path.removeprefix("/logs/").removesuffix(".txt")
        job_id = int(name) if name.isdigit() else -1
        with self._lock:
            expected = self._signatures.get(job_id)
            text = self._logs.get(job_id)
        if text is None or expected is None or request.query.get("sig") != [expected]:
            return Reply(403, b"AuthenticationFailed", "application/xml")
        return Reply(200, text.encode(), "text/plain")
