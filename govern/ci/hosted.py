"""What the hosted CI providers (GitHub Actions, Buildkite, GitLab) share.

Notes: docs/internals.md#ci.
"""

from __future__ import annotations

import asyncio
import logging
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol, TypedDict

from govern.ci import options as opts
from govern.ci.base import (
    Conclusion,
    Provider,
    RunRef,
    RunStatus,
    Started,
    Trial,
    excerpt,
    find_evidence,
    judge_evidence,
    strip_ansi,
)
from govern.errors import CIAuthError, CIError, CIRateLimited, CIUnavailable
from govern.http.client import ApiClient, ClientSource

__all__ = [
    "Connect",
    "HostedProvider",
    "Job",
    "PipelineProvider",
    "RunStates",
    "Settings",
    "expect",
    "judged",
    "now",
    "one_line",
    "optional_str",
    "timestamp",
    "trial_env",
    "trial_fields",
]

_LOG_LIMIT = 4 * 1024 * 1024  # bytes of a job's log read (its end)


def now() -> datetime:
    """The current time (UTC): the default clock of the hosted providers."""
    return datetime.now(UTC)


# -- values ---------------------------------------------------------------------------------


def trial_fields(trial: Trial) -> dict[str, str]:
    """The trial as strings: ``package``, ``version``, ``requirement``, ``profile``,
    ``correlation_id`` and, when the exclusion has one, ``reproducer``; when its intent has
    a lock, ``pins``: the lock's versions of every other package, a ``name==version`` a
    line (a constraints file's text)."""
    fields = {
        "package": trial.package,
        "version": str(trial.version),
        "requirement": trial.requirement,
        "profile": trial.profile,
        "correlation_id": trial.correlation_id,
    }
    if trial.reproducer:
        fields["reproducer"] = trial.reproducer
    if trial.pins:
        fields["pins"] = "\n".join(trial.pins)
    return fields


def trial_env(trial: Trial) -> dict[str, str]:
    """The trial as environment variables: ``GOVERN_PACKAGE``, ``GOVERN_VERSION``, ..."""
    return {f"GOVERN_{key.upper()}": value for key, value in trial_fields(trial).items()}


def optional_str(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None (an API field that may be absent)."""
    return value if isinstance(value, str) and value else None


def one_line(value: Any, limit: int = 60) -> str:
    """A name from an API answer for a detail: on one line, at most ``limit`` characters."""
    return " ".join(str(value).split())[:limit]


def timestamp(value: Any) -> datetime | None:
    """An ISO 8601 time from an API ("2026-06-02T10:00:00Z"), or None; UTC if it has no
    zone."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Job:
    """A job of a run, as the judgment needs it.

    ``log_path`` is the API path of its log, None when it has none to read (it never ran,
    or was skipped). ``state`` is the vendor's word for how it ended (shown above its log).
    ``failed`` is a failure that counts (not one allowed to fail), ``timed_out`` one the
    vendor timed out; ``note`` says why it failed (" with exit status 1").
    """

    name: str
    log_path: str | None
    state: str | None = None
    failed: bool = False
    timed_out: bool = False
    note: str = ""


def judged(
    trial: Trial,
    ending: bool | Conclusion,
    detail: str,
    log: str,
    *,
    url: str | None = None,
    finished_at: datetime | None = None,
    problems: Sequence[str] = (),
) -> RunStatus:
    """A finished run's status from how it ended and its log (already scrubbed).

    ``ending`` True or False is a green or red run: the evidence in ``log`` decides
    (:func:`~govern.ci.base.judge_evidence`). A :class:`Conclusion` is final (a job timed
    out); the evidence found is still reported. ``problems`` (logs that could not be
    read) are added to the detail of a run that did not pass. The excerpt is the end of
    the log without its colour codes.
    """
    installed = find_evidence(log, trial.package)
    if isinstance(ending, Conclusion):
        conclusion = ending
    else:
        conclusion, detail = judge_evidence(ending, trial, installed, detail)
    if problems and conclusion is not Conclusion.PASSED:
        detail = f"{detail}; {'; '.join(problems)}"
    return RunStatus(
        conclusion,
        detail,
        installed=installed,
        log_excerpt=excerpt(strip_ansi(log)) if log else None,
        url=url,
        finished_at=finished_at,
    )


def expect(value: Any, kind: type, what: str, vendor: str) -> Any:
    """``value`` if it is a ``kind``, else CIUnavailable: the vendor answered unexpectedly."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CIUnavailable(f"{vendor}: unexpected answer: {what} is not a {kind.__name__}")
    return value


# -- the providers --------------------------------------------------------------------------


class Settings(TypedDict, total=False):
    """What every hosted provider's constructor takes besides its own configuration."""

    token_source: str  # where the token came from, for messages: "$GITHUB_TOKEN"
    api_url: str  # the API root (GitHub Enterprise, a self-managed GitLab)
    timeout: float  # seconds one run may take
    sleep: Callable[[float], Awaitable[None]]  # tests replace the real ones
    clock: Callable[[], datetime]


class Connect(Protocol):
    """Builds a provider's REST client with its vendor's builder (:mod:`govern.http.github`,
    :mod:`govern.http.gitlab`), the token bound in already, raising ``CI_ERRORS``."""

    def __call__(
        self,
        *,
        api_url: str,
        token_source: str,
        sleep: Callable[[float], Awaitable[None]],
        clock: Callable[[], datetime],
    ) -> ClientSource:
        """The client for the API at ``api_url``, its token from ``token_source``."""
        ...


class HostedProvider(Provider):
    """A provider that drives a vendor's REST API with a token."""

    #: the vendor's name in messages ("GitHub", "buildkite", "gitlab")
    vendor: ClassVar[str] = ""
    #: the keys of its ``[tool.govern.ci.NAME]`` table
    keys: ClassVar[frozenset[str]] = opts.COMMON_KEYS
    #: the API root, the variable that holds the token, and what the token must allow,
    #: when the configuration does not say
    default_api_url: ClassVar[str] = ""
    env_variable: ClassVar[str] = ""
    needs: ClassVar[str] = ""
    #: the configuration shown by repr, after the name (never a token)
    shown: ClassVar[tuple[str, ...]] = ()
    #: bytes of a job's log read (the end of it)
    log_limit: ClassVar[int] = _LOG_LIMIT

    def __init__(
        self,
        name: str,
        *,
        connect: Connect,
        token_source: str | None = None,
        api_url: str | None = None,
        timeout: float = 3600.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], datetime] = now,
    ) -> None:
        """``connect`` builds the REST client the vendor's way (headers, API version,
        rate limits), with the token from ``token_source`` ("$TOKEN") bound in it; the
        client scrubs the token from every message and log excerpt."""
        super().__init__(name, timeout=timeout)
        self.api_url = (api_url or self.default_api_url).rstrip("/")
        token_source = token_source or f"${self.env_variable}"
        self.token_source = token_source
        self._sleep = sleep
        self._clock = clock
        self._api = connect(
            api_url=self.api_url, token_source=token_source, sleep=sleep, clock=clock
        )

    async def client(self) -> ApiClient:
        """The REST client for the next request (a GitHub App's token renewed as it expires)."""
        return await self._api.client()

    @classmethod
    def check_table(cls, options: Mapping[str, Any], name: str) -> None:
        """Refuse a table with a token written in it, an unknown key, or another provider."""
        opts.check_keys(options, cls.keys, name)
        opts.check_provider(options, cls.kind, name)

    @classmethod
    def connection(
        cls,
        options: Mapping[str, Any],
        environ: Mapping[str, str],
        name: str,
        *,
        variable: str | None = None,
        needs: str | None = None,
    ) -> opts.Connection:
        """``api-url``, ``timeout`` and the token (:func:`~govern.ci.options.connection`),
        with this provider's defaults unless ``variable`` and ``needs`` are given."""
        return opts.connection(
            options,
            environ,
            name,
            default_url=cls.default_api_url,
            default_variable=variable or cls.env_variable,
            needs=needs or cls.needs,
        )

    def __repr__(self) -> str:
        """The configuration, never a token."""
        keys = ("name", *self.shown, "api_url", "token_source")
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in keys)})"

    @property
    def _log(self) -> logging.Logger:
        """The logger of the provider's own module (``govern.ci.github``, ...)."""
        return logging.getLogger(type(self).__module__)

    async def cancel(self, run: RunRef) -> None:
        """Ask the vendor to stop the run; best effort: a run that already ended, or an
        error, is logged and the run given up either way."""
        try:
            await self._cancel(run)
        except CIError as exc:
            self._log.info("%s: could not cancel run %s: %s", self.name, run.run_id, exc.message)

    @abstractmethod
    async def _cancel(self, run: RunRef) -> None:
        """Send the vendor's cancel request."""

    def clean_log(self, text: str) -> str:
        """A raw log as a reader sees it: subclasses remove the vendor's decorations."""
        return text

    async def read_logs(self, jobs: Iterable[Job]) -> tuple[str, list[str]]:
        """The logs of the jobs that have one, each under a heading line, and what could
        not be read (an expired or removed log); auth, rate limits and outages raise."""
        parts: list[str] = []
        problems: list[str] = []
        api = await self.client()
        for job in jobs:
            if job.log_path is None:
                continue
            try:
                text = await api.text(job.log_path, limit=self.log_limit)
            except (CIAuthError, CIRateLimited, CIUnavailable):
                raise
            except CIError as exc:
                problems.append(f"the log of job {job.name} could not be read ({exc.message})")
                continue
            heading = f"##[govern] job {job.name} ({job.state or 'no conclusion'})"
            parts.append(f"{heading}\n{self.clean_log(text)}")
        return "\n".join(parts), problems

    async def judge_logs(
        self,
        trial: Trial,
        ending: bool | Conclusion,
        detail: str,
        jobs: Iterable[Job],
        *,
        url: str | None,
        finished_at: datetime | None,
    ) -> RunStatus:
        """A finished run judged with the evidence in its jobs' logs (:func:`judged`)."""
        text, problems = await self.read_logs(jobs)
        api = await self.client()
        return judged(
            trial,
            ending,
            detail,
            api.scrub(text),
            url=url,
            finished_at=finished_at,
            problems=problems,
        )


@dataclass(frozen=True, slots=True)
class RunStates:
    """A vendor's words for a run and its states (Buildkite's builds, GitLab's pipelines)."""

    noun: str  # "build": how details name a run
    id_key: str  # the run's number in the API's answer: "number"
    state_key: str  # its state: "state"
    passed: str  # the state of a run that passed: "passed"
    passed_word: str  # how a detail says it: "passed", "succeeded"
    failed: str
    cancelled: frozenset[str]
    not_run: frozenset[str]  # ended without running the check: skipped, not run
    pending: frozenset[str]  # not an end: the run goes on, or waits for a person
    reason_key: str | None = None  # the answer's field that says why a run was cancelled

    def ended_unrun(self, state: str) -> bool:
        """True for a run that ended without running the check (cancelled, skipped)."""
        return state in self.cancelled or state in self.not_run

    def status(
        self, number: int, state: str, run: Mapping[str, Any], url: str | None
    ) -> RunStatus | bool:
        """What a run's state says: True or False for a run that passed or failed (its
        logs decide), else its status: running, cancelled, not run, or ended in a state
        govern does not know (errored)."""
        subject = f"{self.noun} {number}"
        finished = timestamp(run.get("finished_at"))
        if state in (self.passed, self.failed):
            return state == self.passed
        if state in self.cancelled:
            reason = run.get(self.reason_key) if self.reason_key else None
            why = f": {one_line(reason, 200)}" if isinstance(reason, str) else ""
            return RunStatus(
                Conclusion.CANCELLED, f"{subject} was canceled{why}", url=url, finished_at=finished
            )
        if state in self.not_run:
            return RunStatus(
                Conclusion.ERRORED,
                f"{subject} was {state.replace('_', ' ')}: the check did not run",
                url=url,
                finished_at=finished,
            )
        if state not in self.pending and run.get("finished_at"):
            return RunStatus(
                Conclusion.ERRORED,
                f"{subject} ended in an unknown {self.state_key} {state[:40]!r}",
                url=url,
                finished_at=finished,
            )
        return RunStatus(None, f"{subject} {state[:40]}", url=url)


class PipelineProvider(HostedProvider):
    """A provider whose trial is one numbered run: created by :meth:`create`, read at
    :meth:`run_path`, cancelled with ``cancel_method`` at ``run_path/cancel``."""

    states: ClassVar[RunStates]
    cancel_method: ClassVar[str] = "POST"

    @abstractmethod
    def run_path(self, number: int) -> str:
        """The API path of the run numbered ``number``."""

    @abstractmethod
    async def create(self, trial: Trial) -> Any:
        """Send the request that creates a run carrying the trial; the answer's JSON."""

    @abstractmethod
    async def jobs(self, number: int, run: Mapping[str, Any]) -> list[Job]:
        """The jobs of a finished run (``run`` is the API's answer for it)."""

    def pending_reason(self, number: int, run: Mapping[str, Any]) -> str | None:
        """Why a run is not done although its state is an end (a Buildkite block step)."""
        return None

    def run_number(self, run: RunRef) -> int:
        """The number of a run govern started; anything else is refused."""
        if not run.run_id.isdigit():
            states = self.states
            raise CIError(
                f"{self.vendor}: {run.run_id[:40]!r} is not a {states.noun} {states.id_key}"
            )
        return int(run.run_id)

    async def start(self, trial: Trial) -> Started:
        """Create a run carrying the trial; its number is the run id."""
        states = self.states
        answer = expect(await self.create(trial), dict, f"the created {states.noun}", self.vendor)
        number = expect(
            answer.get(states.id_key), int, f"the {states.noun} {states.id_key}", self.vendor
        )
        url = optional_str(answer.get("web_url"))
        self._log.debug(
            "%s: created %s %s for %s", self.name, states.noun, number, trial.requirement
        )
        state = str(answer.get(states.state_key))
        status = states.status(number, state, answer, url)
        if not isinstance(status, RunStatus):  # it cannot have ended yet: still running
            status = RunStatus(None, f"{states.noun} {number} {state[:40]}", url=url)
        return Started(RunRef(str(number), url=url), status)

    async def status(self, trial: Trial, run: RunRef) -> RunStatus:
        """The run's state; a finished run is judged on its jobs' logs."""
        states, vendor = self.states, self.vendor
        number = self.run_number(run)
        answer = await (await self.client()).json("GET", self.run_path(number))
        document = expect(answer, dict, f"the {states.noun}", vendor)
        what = f"the {states.noun} {states.state_key}"
        state = expect(document.get(states.state_key), str, what, vendor)
        url = optional_str(document.get("web_url")) or run.url
        waiting = None if states.ended_unrun(state) else self.pending_reason(number, document)
        if waiting is not None:
            return RunStatus(None, waiting, url=url)
        status = states.status(number, state, document, url)
        if isinstance(status, RunStatus):
            return status
        return await self._verdict(trial, number, status, document, url)

    async def _cancel(self, run: RunRef) -> None:
        path = f"{self.run_path(self.run_number(run))}/cancel"
        await (await self.client()).request(self.cancel_method, path)

    async def _verdict(
        self, trial: Trial, number: int, passed: bool, run: Mapping[str, Any], url: str | None
    ) -> RunStatus:
        """A run that passed or failed, judged with the evidence in its jobs' logs; a run
        that failed because a job timed out is timed-out."""
        subject = f"{self.states.noun} {number}"
        jobs = await self.jobs(number, run)
        failed = [job for job in jobs if job.failed]
        timed_out = [job for job in jobs if job.timed_out]
        ending: bool | Conclusion = passed
        if passed:
            detail = f"{subject} {self.states.passed_word}"
        elif timed_out:
            ending = Conclusion.TIMED_OUT
            detail = f"{subject} failed: job {timed_out[0].name!r} timed out"
        elif failed:
            detail = f"{subject} failed: job {failed[0].name!r} failed{failed[0].note}"
        else:
            detail = f"{subject} failed"
        finished = timestamp(run.get("finished_at"))
        return await self.judge_logs(trial, ending, detail, jobs, url=url, finished_at=finished)
