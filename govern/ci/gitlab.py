"""GitLab CI/CD: a trial is a pipeline of a configured project (REST API v4).

Notes: docs/internals.md#ci.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Unpack
from urllib.parse import quote

import httpx

from govern.ci import options as opts
from govern.ci.base import Trial
from govern.ci.hosted import Job, PipelineProvider, RunStates, Settings, expect, one_line, trial_env
from govern.errors import CI_ERRORS, CIAuthError, CIError, ConfigError
from govern.http.gitlab import API_URL, DEFAULT_ENV, gitlab_client
from govern.http.pages import pages
from govern.tomltables import show

__all__ = [
    "PRIVATE",
    "TOKEN_KINDS",
    "TRIGGER",
    "GitLab",
    "from_config",
]

VENDOR = "gitlab"
#: the kinds of token that start a pipeline: an access token, or a pipeline trigger token
PRIVATE, TRIGGER = TOKEN_KINDS = ("private", "trigger")
_STATES = RunStates(
    noun="pipeline",
    id_key="id",
    state_key="status",
    passed="success",
    passed_word="succeeded",
    failed="failed",
    cancelled=frozenset({"canceled", "canceling"}),
    not_run=frozenset({"skipped"}),
    # not an end (``manual`` waits for a person to play a job)
    pending=frozenset(
        {
            "created",
            "waiting_for_resource",
            "preparing",
            "pending",
            "running",
            "scheduled",
            "manual",
            "waiting_for_callback",
        }
    ),
)
_TRIGGER_VARIABLE = "GITLAB_TRIGGER_TOKEN"
_TIMEOUT_REASONS = frozenset({"job_execution_timeout", "stuck_or_timeout_failure"})
_PER_PAGE = 100
_MAX_PAGES = 10

# GitLab runner log decorations: a per-line timestamp header (runner 17+, FF_TIMESTAMPS;
# "+" marks the continuation of the previous line) and collapsible section markers; the
# ANSI colours are removed with the evidence search (govern.ci.base).
_TIMESTAMP_HEADER = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z [0-9a-f]{2}[EO][+ ]")
_SECTION = re.compile(r"section_(?:start|end):\d+:[A-Za-z0-9_.-]+(?:\[[^\]\n]*\])?\r?")
_PROJECT_PATH = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_.][A-Za-z0-9_.+-]*)+\Z")


def _valid_project(project: int | str) -> bool:
    if isinstance(project, bool):
        return False
    if isinstance(project, int):
        return project > 0
    if project.isdigit():
        return int(project) > 0
    return bool(_PROJECT_PATH.match(project)) and not any(
        part in (".", "..") for part in project.split("/")
    )


class GitLab(PipelineProvider):
    """Trials as pipelines of one GitLab project."""

    kind = "gitlab"
    vendor = VENDOR
    keys = opts.COMMON_KEYS | {"project", "ref", "token-kind", "read-token-env"}
    default_api_url = API_URL
    env_variable = DEFAULT_ENV
    needs = "the api scope"
    states = _STATES
    shown = ("project", "ref", "token_kind")

    def __init__(
        self,
        name: str,
        *,
        http: httpx.AsyncClient,
        project: int | str,
        token: str,
        token_kind: str = PRIVATE,
        read_token: str | None = None,
        read_token_source: str | None = None,
        ref: str = "main",
        **settings: Unpack[Settings],
    ) -> None:
        """Pipelines of ``project`` (numeric id or ``group/project`` path) on ``ref``.

        With ``token_kind="private"`` the token (``api`` scope) does everything; with
        ``"trigger"`` it is a pipeline trigger token and ``read_token`` (``read_api``)
        reads the pipelines. ``token_source`` (in ``settings``) and ``read_token_source``
        say where each token came from, for messages.
        """
        if token_kind not in TOKEN_KINDS:
            raise ConfigError(
                f"{opts.where(name)}: token-kind must be one of {', '.join(TOKEN_KINDS)}"
            )
        if not _valid_project(project):
            raise ConfigError(f"{opts.where(name)}: {str(project)[:60]!r} is not a project")
        trigger = token_kind == TRIGGER
        if trigger and not read_token:
            raise ConfigError(
                f"{opts.where(name)}: a trigger token cannot read pipelines;"
                " a read token (read-token-env) is needed too",
            )
        # The API client (built as the forge's: gitlab_client) reads with the access token;
        # a trigger token only starts pipelines, and is scrubbed from messages too.
        token_source = settings.get("token_source", f"${self.env_variable}")
        settings["token_source"] = read_token_source or token_source
        connect = functools.partial(
            gitlab_client,
            http,
            token=read_token or token,
            errors=CI_ERRORS,
            vendor=VENDOR,
            also_secret=(token,),
        )
        super().__init__(name, connect=connect, **settings)
        self.project = project
        self.ref = ref
        self.token_kind = token_kind
        self.read_token_source = self.token_source
        self.token_source = token_source  # the token that starts pipelines
        self._token = token if trigger else None
        self._project = f"/projects/{quote(str(project), safe='')}"

    def run_path(self, number: int) -> str:
        """``/projects/:id/pipelines/:pipeline_id``."""
        return f"{self._project}/pipelines/{number}"

    async def create(self, trial: Trial) -> Any:
        """Create a pipeline on ``ref`` with the trial as its variables."""
        variables = trial_env(trial)
        api = await self.client()
        if self._token is None:
            body: dict[str, Any] = {
                "ref": self.ref,
                "variables": [
                    {"key": key, "value": value, "variable_type": "env_var"}
                    for key, value in variables.items()
                ],
            }
            return await api.json("POST", f"{self._project}/pipeline", json_body=body)
        body = {"token": self._token, "ref": self.ref, "variables": variables}
        # The trigger token travels in the body, never in a header.
        trigger = api.with_credentials({}, token_source=self.token_source)
        try:
            return await trigger.json("POST", f"{self._project}/trigger/pipeline", json_body=body)
        except CIError as exc:
            if exc.status != 404:  # a wrong trigger token is a 404 there
                raise
            raise CIAuthError(
                f"gitlab did not accept the trigger token from {self.token_source} "
                f"for project {str(self.project)[:80]!r} (HTTP 404)",
                tip=f"check that {self.token_source} holds a trigger token of that project",
                status=exc.status,
            ) from None

    async def jobs(self, number: int, run: Mapping[str, Any]) -> list[Job]:
        """The pipeline's jobs, oldest first (GitLab lists them newest first, by pages)."""
        items: list[dict[str, Any]] = []
        path = f"{self.run_path(number)}/jobs"
        api = await self.client()
        async for page in pages(api, path, {}, per_page=_PER_PAGE, max_pages=_MAX_PAGES):
            listed = expect(api.decode(page), list, "the pipeline's jobs", VENDOR)
            items.extend(j for j in listed if isinstance(j, dict) and isinstance(j.get("id"), int))
        return [self._job(item) for item in sorted(items, key=lambda job: int(job["id"]))]

    def _job(self, job: Mapping[str, Any]) -> Job:
        status, reason = job.get("status"), job.get("failure_reason")
        failed = status == "failed" and not job.get("allow_failure")
        path = f"{self._project}/jobs/{job['id']}/trace" if job.get("started_at") else None
        return Job(
            one_line(job.get("name") or job["id"]),
            path,
            status if isinstance(status, str) else None,
            failed=failed,
            timed_out=failed and reason in _TIMEOUT_REASONS,
            note=f" ({reason})" if isinstance(reason, str) and reason.isidentifier() else "",
        )

    def clean_log(self, text: str) -> str:
        """A job trace as a reader sees it: no timestamp headers, section markers or CRs."""
        return _SECTION.sub("", _TIMESTAMP_HEADER.sub("", text)).replace("\r\n", "\n")


def _project(options: Mapping[str, Any], name: str) -> int | str:
    """``project``: a numeric id, or the ``group/project`` path."""
    if "project" not in options:
        raise ConfigError(
            f"{opts.where(name)}: project is required",
            tip='Add project = "group/project" (or the numeric project id).',
        )
    value = options["project"]
    if isinstance(value, int | str) and _valid_project(value):
        return value
    raise ConfigError(
        f"{opts.where(name)}: project must be a numeric id or a path like"
        f' "group/project", not {show(value)}',
        tip='Write project = "group/project" (or the numeric project id).',
    )


def from_config(
    name: str,
    options: Mapping[str, Any],
    *,
    http: httpx.AsyncClient,
    environ: Mapping[str, str],
) -> GitLab:
    """A :class:`GitLab` provider from ``[tool.govern.ci.NAME]``.

    Keys: ``provider = "gitlab"``, ``project`` (numeric id or ``"group/project"``,
    required), ``ref`` (default ``"main"``), ``token-kind`` (``"private"``, the default, or
    ``"trigger"``), ``token-env`` (the variable holding the token: default
    ``GITLAB_TOKEN``, or ``GITLAB_TRIGGER_TOKEN`` for a trigger token), ``read-token-env``
    (trigger tokens only: the variable holding a ``read_api`` token, default
    ``GITLAB_TOKEN``), ``api-url`` (default ``https://gitlab.com/api/v4``) and ``timeout``
    (seconds, default 3600).
    """
    GitLab.check_table(options, name)
    project = _project(options, name)
    ref = opts.string(options, "ref", name, default="main")
    token_kind = opts.choice(options, "token-kind", name, TOKEN_KINDS)
    trigger = token_kind == TRIGGER
    if not trigger and "read-token-env" in options:
        raise ConfigError(
            f'{opts.where(name)}: read-token-env is only for token-kind = "trigger"',
            tip="Remove it: an access token both starts and reads pipelines.",
        )
    read_variable = None
    if trigger:
        read_variable = opts.env_name(options, "read-token-env", name, GitLab.env_variable)
        if read_variable == opts.env_name(options, "token-env", name, _TRIGGER_VARIABLE):
            raise ConfigError(
                f"{opts.where(name)}: token-env and read-token-env both name {read_variable};"
                " a trigger token cannot read pipelines",
                tip="Name two variables: the trigger token and a read_api token.",
            )
        connection = GitLab.connection(
            options,
            environ,
            name,
            variable=_TRIGGER_VARIABLE,
            needs="a trigger token of the project",
        )
    else:
        connection = GitLab.connection(options, environ, name)
    read_token = (
        opts.token_from_env(environ, read_variable, name, needs="the read_api scope")
        if read_variable
        else None
    )
    return GitLab(
        name,
        http=http,
        project=project,
        ref=ref,
        token_kind=token_kind,
        read_token=read_token,
        read_token_source=f"${read_variable}" if read_variable else None,
        **connection,
    )
