"""The ``github-actions`` provider's shared part: the REST API, and reading GitHub's runs.

Notes: docs/internals.md#ci.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Self, Unpack
from urllib.parse import quote

import httpx

from govern.ci import options as opts
from govern.ci.base import Conclusion, RunRef, RunStatus, Trial
from govern.ci.hosted import (
    HostedProvider,
    Job,
    Settings,
    expect,
    judged,
    optional_str,
    timestamp,
)
from govern.errors import CI_ERRORS, CIError, ConfigError
from govern.http.github import API_URL, DEFAULT_ENV, GitHubApi, TokenSource
from govern.tomltables import show

log = logging.getLogger(__name__)

KIND = "github-actions"
VENDOR = "GitHub"
MODES = ("dispatch", "checks")
#: The check runs of GitHub Actions jobs carry this app slug; their ids are job ids.
ACTIONS_APP = "github-actions"

#: a run id not known yet: dispatch:<correlation id>
DISPATCHED = "dispatch:"
#: the check runs of a ref: checks:<ref>
CHECKS = "checks:"
_RUNNING = frozenset({"queued", "in_progress", "waiting", "requested", "pending"})
_GREEN_CHECKS = frozenset({"success", "neutral", "skipped"})
_FINAL: dict[str, tuple[Conclusion, str]] = {
    "cancelled": (Conclusion.CANCELLED, "the run was cancelled"),
    "timed_out": (Conclusion.TIMED_OUT, "GitHub timed the run out"),
    "action_required": (
        Conclusion.ERRORED,
        "the run waits for someone to approve it (action_required)",
    ),
    "neutral": (Conclusion.ERRORED, "the run ended neutral: it neither passed nor failed"),
    "skipped": (Conclusion.ERRORED, "the run was skipped"),
    "stale": (Conclusion.ERRORED, "GitHub marked the run stale"),
    "startup_failure": (
        Conclusion.ERRORED,
        "the workflow could not start (startup_failure): check the workflow file",
    ),
}
_PER_PAGE = "100"

_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_WORKFLOW_FILE = re.compile(r"^[A-Za-z0-9_.-]+\.ya?ml$")


@dataclass(frozen=True, slots=True)
class CheckRunInfo:
    """One check run of a commit, as GitHub lists it.

    ``app`` is the slug of the app that made it: ``github-actions`` for the jobs of a
    workflow run, whose check run id is also the job id (so its log can be read).
    """

    id: int
    name: str
    status: str  # queued, in_progress, completed, waiting, requested, pending
    conclusion: str | None  # success, failure, neutral, cancelled, skipped, timed_out, ...
    html_url: str | None = None
    app: str | None = None


class GitHubActions(HostedProvider):
    """Verify candidates with GitHub Actions (github.com or GitHub Enterprise Server); the
    mode (a subclass) says how a trial is started."""

    #: how a trial is started: "dispatch" or "checks"
    mode: ClassVar[str] = ""
    #: whether the mode needs the workflow (a file name or an id), and its default ref
    workflow_required: ClassVar[bool] = False
    default_ref: ClassVar[str | None] = None
    kind = KIND
    vendor = VENDOR
    keys = opts.COMMON_KEYS | {"repository", "workflow", "ref", "mode"}
    default_api_url = API_URL
    env_variable = DEFAULT_ENV
    needs = "the actions:write (and checks:read) permission on the repository"
    shown = ("repository", "mode", "workflow", "ref")
    log_limit = 16 * 1024 * 1024  # per job: the evidence line is near the start of a log

    def __init__(
        self,
        name: str,
        *,
        http: httpx.AsyncClient,
        repository: str,
        token: str,
        workflow: str | int = "",
        ref: str = "main",
        app: TokenSource | None = None,
        **settings: Unpack[Settings],
    ) -> None:
        """A provider for ``repository`` ("owner/repo"), with ``workflow`` (a file name such
        as ``verify.yml``, or the numeric id) and ``ref`` as the mode reads them. ``token``
        is sent as a bearer token and scrubbed from every message; ``token_source``
        ("$GITHUB_TOKEN", in ``settings``) names it in messages; ``app`` gives a GitHub
        App's installation tokens instead, renewed as they expire. The client is the
        forge's (:class:`~govern.http.github.GitHubApi`): GitHub's headers and API version,
        and its secondary rate limit waited for.
        """
        if not _REPOSITORY.match(repository):
            raise ValueError(f"repository must be owner/name, not {repository!r}")
        if self.workflow_required and not str(workflow):
            raise ValueError(f"{self.mode} mode needs a workflow (a file name or an id)")
        connect = functools.partial(
            GitHubApi, http, errors=CI_ERRORS, token=token, app=app, vendor=VENDOR
        )
        super().__init__(name, connect=connect, **settings)
        self.repository = repository
        self.workflow = str(workflow)
        self.ref = ref
        self._resolved: dict[str, str] = {}  # correlation id -> run id

    # -- the provider interface ----------------------------------------------------------

    @classmethod
    def from_table(
        cls,
        name: str,
        options: Mapping[str, Any],
        *,
        http: httpx.AsyncClient,
        environ: Mapping[str, str],
    ) -> Self:
        """A provider of this mode from ``[tool.govern.ci.NAME]`` (its keys and its mode
        checked already: :func:`mode_of`): ``repository``, ``workflow``, ``ref``, then the
        connection (``api-url``, ``timeout``, the token)."""
        fields = table(options, name, required=cls.workflow_required, ref=cls.default_ref)
        cls.check_ref(fields["ref"], name)
        return cls(name, http=http, **fields, **cls.connection(options, environ, name))

    @classmethod
    def check_ref(cls, ref: str, name: str) -> None:
        """Refuse a ``ref`` this mode cannot use (any branch name will do by default)."""

    async def status(self, trial: Trial, run: RunRef) -> RunStatus:
        """The run's status; a completed run is judged with the evidence in its jobs' logs."""
        if run.run_id.startswith(CHECKS):
            return await self.checks_status(trial, run.run_id.removeprefix(CHECKS))
        run_id = await self._resolve(run)
        if run_id is None:
            correlation_id = run.run_id.removeprefix(DISPATCHED)
            return RunStatus(None, f"GitHub does not list the run dispatched as {correlation_id}")
        status = await self._run_status(trial, run, run_id)
        if run.run_id != run_id:  # found out now: the store keeps the real id
            status = dataclasses.replace(status, run_id=run_id)
        return status

    async def _run_status(self, trial: Trial, run: RunRef, run_id: str) -> RunStatus:
        """The status of one workflow run by its numeric id."""
        api = await self.client()
        body = await api.json("GET", self.repo_path(f"actions/runs/{run_id}"))
        data = expect(body, dict, "the workflow run", VENDOR)
        state = expect(data.get("status"), str, "the run's status", VENDOR)
        url = optional_str(data.get("html_url")) or run.url
        if state != "completed":
            shown = state if state in _RUNNING else f"{state} (taken as still running)"
            return RunStatus(None, f"the workflow run is {shown}", url=url)
        finished = timestamp(data.get("updated_at"))
        ending, detail = _run_ending(data.get("conclusion"))
        if isinstance(ending, Conclusion):
            return RunStatus(ending, detail, url=url, finished_at=finished)
        jobs = await self._jobs(run_id)
        failed = [job.name for job in jobs if job.failed]
        if not ending and failed:
            detail = f"{detail}: job {', '.join(failed)} failed"
        return await self.judge_logs(trial, ending, detail, jobs, url=url, finished_at=finished)

    async def _cancel(self, run: RunRef) -> None:
        """Ask GitHub to cancel the run (a finished run cannot be: 409)."""
        if run.run_id.startswith(CHECKS):
            return  # govern did not start those runs
        run_id = await self._resolve(run)
        if run_id is not None:
            api = await self.client()
            await api.request("POST", self.repo_path(f"actions/runs/{run_id}/cancel"))

    # -- check runs ----------------------------------------------------------------------

    async def check_runs(self, ref: str) -> list[CheckRunInfo]:
        """The latest check runs of ``ref`` (a sha, a branch, or ``refs/pull/N/head``)."""
        api = await self.client()
        body = await api.json(
            "GET",
            self.repo_path(f"commits/{quote(ref, safe='/')}/check-runs"),
            params={"per_page": _PER_PAGE},
        )
        data = expect(body, dict, "the check-run list", VENDOR)
        items = expect(data.get("check_runs"), list, "check_runs", VENDOR)
        out: list[CheckRunInfo] = []
        for item in items:
            entry = expect(item, dict, "a check run", VENDOR)
            app = entry.get("app")
            out.append(
                CheckRunInfo(
                    id=expect(entry.get("id"), int, "a check run's id", VENDOR),
                    name=optional_str(entry.get("name")) or "",
                    status=expect(entry.get("status"), str, "a check run's status", VENDOR),
                    conclusion=optional_str(entry.get("conclusion")),
                    html_url=optional_str(entry.get("html_url")),
                    app=optional_str(app.get("slug")) if isinstance(app, dict) else None,
                )
            )
        return out

    async def checks_status(self, trial: Trial, ref: str) -> RunStatus:
        """The trial's status from the check runs of ``ref`` (see :func:`summarize_check_runs`).

        When they all passed (or one failed), the logs of the GitHub Actions jobs among
        them are read for the evidence.
        """
        checks = await self.check_runs(ref)
        ending, _ = _checks_ending(checks)
        if not isinstance(ending, bool):
            return summarize_check_runs(checks, trial)
        jobs = [self._job(c.id, c.name, c.conclusion) for c in checks if c.app == ACTIONS_APP]
        text, problems = await self.read_logs(jobs)
        api = await self.client()
        return summarize_check_runs(checks, trial, api.scrub(text), problems=problems)

    # -- helpers -------------------------------------------------------------------------

    def repo_path(self, rest: str) -> str:
        """The API path of ``rest`` under the repository."""
        return f"/repos/{self.repository}/{rest}"

    def workflow_path(self, rest: str) -> str:
        """The API path of ``rest`` under the workflow."""
        return self.repo_path(f"actions/workflows/{quote(self.workflow, safe='')}/{rest}")

    async def find_run(self, correlation_id: str, since: datetime | None) -> dict[str, Any] | None:
        """The dispatched run whose title carries the correlation id, or None."""
        params = {"event": "workflow_dispatch", "per_page": _PER_PAGE}
        branch = self.ref.removeprefix("refs/heads/")
        if branch:
            params["branch"] = branch
        if since is not None:
            params["created"] = f">={since.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
        api = await self.client()
        body = await api.json("GET", self.workflow_path("runs"), params=params)
        data = expect(body, dict, "the run list", VENDOR)
        runs = expect(data.get("workflow_runs"), list, "workflow_runs", VENDOR)
        pattern = correlation_pattern(correlation_id)
        matches = [
            run
            for run in runs
            if isinstance(run, dict)
            and isinstance(run.get("id"), int)
            and run.get("event", "workflow_dispatch") == "workflow_dispatch"
            and any(
                isinstance(run.get(key), str) and pattern.search(run[key])
                for key in ("display_title", "name")
            )
        ]
        # Two matches are two runs of the same attempt (a repeated dispatch): the first one.
        return min(matches, key=lambda run: int(run["id"])) if matches else None

    async def _resolve(self, run: RunRef) -> str | None:
        """The numeric run id of a RunRef (looked up for ``dispatch:`` refs), or None."""
        if not run.run_id.startswith(DISPATCHED):
            if not run.run_id.isdigit():
                raise CIError(f"{VENDOR}: {run.run_id!r} is not a workflow run id")
            return run.run_id
        correlation_id = run.run_id.removeprefix(DISPATCHED)
        if correlation_id in self._resolved:
            return self._resolved[correlation_id]
        found = await self.find_run(correlation_id, None)
        if found is None:
            return None
        run_id = str(found["id"])
        self._resolved[correlation_id] = run_id
        return run_id

    def run_ref(self, run: Mapping[str, Any]) -> RunRef:
        """The reference of a workflow run GitHub listed."""
        return RunRef(str(run["id"]), url=optional_str(run.get("html_url")))

    async def _jobs(self, run_id: str) -> list[Job]:
        """The run's latest jobs."""
        api = await self.client()
        body = await api.json(
            "GET", self.repo_path(f"actions/runs/{run_id}/jobs"), params={"per_page": _PER_PAGE}
        )
        data = expect(body, dict, "the job list", VENDOR)
        items = expect(data.get("jobs"), list, "jobs", VENDOR)
        jobs: list[Job] = []
        for item in items:
            job = expect(item, dict, "a job", VENDOR)
            job_id = expect(job.get("id"), int, "a job's id", VENDOR)
            name = optional_str(job.get("name")) or str(job_id)
            jobs.append(self._job(job_id, name, optional_str(job.get("conclusion"))))
        return jobs

    def _job(self, job_id: int, name: str, conclusion: str | None) -> Job:
        """A job (or the check run of one): its log is read unless it was skipped."""
        path = self.repo_path(f"actions/jobs/{job_id}/logs")
        return Job(
            " ".join(name.split()),
            None if conclusion == "skipped" else path,
            conclusion,
            failed=conclusion == "failure",
        )


# -- pure helpers ---------------------------------------------------------------------------


def correlation_pattern(correlation_id: str) -> re.Pattern[str]:
    """A pattern for the correlation id as a whole word (``govern-7-1`` not in ``-10``)."""
    return re.compile(rf"(?<![\w.-]){re.escape(correlation_id)}(?![\w.-])")


def summarize_check_runs(
    checks: Sequence[CheckRunInfo],
    trial: Trial,
    log_text: str | None = None,
    *,
    problems: Sequence[str] = (),
) -> RunStatus:
    """The status of a trial from a ref's check runs and the logs of their Actions jobs.

    Still running while any check run is not completed (or none exists yet). Once all
    completed: a failure is ``failed``, else a time-out ``timed-out``, a cancellation
    ``cancelled``, another unhappy conclusion (action_required, stale, startup_failure)
    ``errored``; all success, neutral or skipped is ``passed``. ``passed`` and ``failed``
    still need the evidence in ``log_text`` (:func:`~govern.ci.hosted.judged`);
    ``problems`` are the logs that could not be read.
    """
    ending, detail = _checks_ending(checks)
    url = next((c.html_url for c in checks if c.html_url), None)
    if ending is None or isinstance(ending, Conclusion):
        return RunStatus(ending, detail, url=url)
    return judged(trial, ending, detail, log_text or "", url=url, problems=problems)


def _checks_ending(checks: Sequence[CheckRunInfo]) -> tuple[bool | Conclusion | None, str]:
    """None: running; True/False: green/red (evidence decides); a Conclusion: final."""
    if not checks:
        return None, "no check runs yet"
    running = [c.name for c in checks if c.status != "completed"]
    if running:
        return None, f"{len(running)} of {len(checks)} check runs running ({_names(running)})"
    by: dict[str, list[str]] = {}
    for check in checks:
        by.setdefault(check.conclusion or "none", []).append(check.name)
    if "failure" in by:
        return False, f"check runs failed: {_names(by['failure'])}"
    if "timed_out" in by:
        return Conclusion.TIMED_OUT, f"check runs timed out: {_names(by['timed_out'])}"
    if "cancelled" in by:
        return Conclusion.CANCELLED, f"check runs were cancelled: {_names(by['cancelled'])}"
    other = sorted(set(by) - _GREEN_CHECKS)
    if other:
        names = [name for key in other for name in by[key]]
        return Conclusion.ERRORED, f"check runs ended {', '.join(other)}: {_names(names)}"
    return True, f"{len(checks)} check runs passed"


def _run_ending(conclusion: Any) -> tuple[bool | Conclusion, str]:
    """A completed workflow run's conclusion: True/False when evidence decides, else final."""
    if conclusion == "success":
        return True, "the workflow run succeeded"
    if conclusion == "failure":
        return False, "the workflow run failed"
    if isinstance(conclusion, str) and conclusion in _FINAL:
        return _FINAL[conclusion]
    shown = repr(conclusion[:40]) if isinstance(conclusion, str) else "no conclusion"
    return Conclusion.ERRORED, f"the workflow run completed with {shown}"


def _names(names: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more"


# -- configuration --------------------------------------------------------------------------


def mode_of(options: Mapping[str, Any], name: str) -> str:
    """The mode of a ``[tool.govern.ci.NAME]`` table, once the table's keys are checked."""
    GitHubActions.check_table(options, name)
    return opts.choice(options, "mode", name, MODES)


def table(
    options: Mapping[str, Any], name: str, *, required: bool, ref: str | None
) -> dict[str, Any]:
    """The keys both modes read: ``repository``, ``workflow`` (when ``required``, it must
    be there) and ``ref`` (``ref`` when absent; without a default, it must be there)."""
    repository = opts.string(options, "repository", name).strip()
    if not _REPOSITORY.match(repository):
        raise ConfigError(
            f"{opts.where(name)}: repository must be owner/name, not {show(repository)}",
            tip='Write repository = "owner/repo".',
        )
    workflow = _workflow(options, name, required=required)
    return {
        "repository": repository,
        "workflow": workflow,
        "ref": opts.string(options, "ref", name, default=ref),
    }


def _workflow(options: Mapping[str, Any], name: str, *, required: bool) -> str | int:
    """``workflow``: a workflow file name (``verify.yml``) or its numeric id."""
    value = options.get("workflow")
    if value is None:
        if required:
            raise ConfigError(
                f"{opts.where(name)}: workflow is required: the workflow file to dispatch",
                tip='Add workflow = "verify.yml" (the file under .github/workflows).',
            )
        return ""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str):
        text = value.strip().removeprefix(".github/workflows/")
        if _WORKFLOW_FILE.match(text) or text.isdigit():
            return text
    raise ConfigError(
        f"{opts.where(name)}: workflow must be a workflow file name (verify.yml) or id,"
        f" not {show(value)}",
        tip='Write workflow = "verify.yml".',
    )
