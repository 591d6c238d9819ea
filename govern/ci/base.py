"""The CI provider interface: start a trial of one candidate, then read how it ended.

Notes: docs/internals.md#ci.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from govern.exclusions.states import Conclusion as Conclusion  # re-exported: what providers report
from govern.index.model import DistributionFile


@dataclass(frozen=True, slots=True)
class Trial:
    """One candidate to try on one runtime profile.

    ``version`` is a parsed PEP 440 version: a string from an index that is not one never
    becomes a trial. ``correlation_id`` is unique per attempt (``govern-<id>-<attempt>``):
    hosted providers pass it to the run so that the run govern started can be found.
    """

    package: str  # canonical name
    version: Version
    profile: str
    correlation_id: str
    clause: str = ""  # the exclusion's clause, for messages and inputs ("<14.1.0")
    index_url: str | None = None  # where the candidate is installed from (may hold credentials)
    extra_index_urls: tuple[str, ...] = ()
    reproducer: str | None = None  # the exclusion's own check (its ``verify`` annotation)
    # Run the reproducer alone (its confirmation on a known-bad release): a configured
    # command failing there would prove nothing about the reproducer. Hosted CI gets the
    # same inputs (a workflow refuses inputs it does not declare).
    reproducer_only: bool = False
    # The release's files as the poll stored them from the index's page (with their
    # hashes), the index whose page listed them (may hold credentials), and the origins
    # it may send govern to besides its own: an isolated install takes the candidate from
    # there only, and checks its sha256 (govern.ci.command).
    files: tuple[DistributionFile, ...] = field(default=(), repr=False)
    files_index: str | None = field(default=None, repr=False)
    trusted_redirects: tuple[str, ...] = ()
    # The versions of every other package the intent's locks hold once regenerated for the
    # candidate (``name==version``; govern.locks.installed): the run installs the candidate
    # with them, so its evidence covers what the change installs.
    pins: tuple[str, ...] = ()

    @property
    def requirement(self) -> str:
        """``package==version``: what the run must install."""
        return f"{self.package}=={self.version}"

    @property
    def constraints(self) -> str:
        """The text of a pip constraints file that pins the candidate (and, when its intent
        has a lock, every other package to the lock's version)."""
        return "".join(f"{pin}\n" for pin in (self.requirement, *self.pins))


@dataclass(frozen=True, slots=True)
class RunRef:
    """A run a provider started: its id at the provider, and where a person can see it."""

    run_id: str
    url: str | None = None


@dataclass(frozen=True, slots=True)
class RunStatus:
    """What a provider knows of a run now.

    ``conclusion`` is None while the run is queued or running. ``installed`` is the
    version the run reports it installed (the evidence), when found. ``detail`` says why
    in a line ("exit status 1", "no evidence that 14.1.1 was installed").
    """

    conclusion: Conclusion | None
    detail: str = ""
    installed: str | None = None
    log_excerpt: str | None = None
    url: str | None = None
    finished_at: datetime | None = None
    # The run's id at the provider when the status found it out (a run that was not listed
    # yet when it started); the verification rows take it, so webhooks can match them.
    run_id: str | None = None

    @property
    def done(self) -> bool:
        """True once the run has a conclusion."""
        return self.conclusion is not None


@dataclass(frozen=True, slots=True)
class Started:
    """The result of :meth:`Provider.start`: the run, and its status when it already ended."""

    run: RunRef
    status: RunStatus = field(default_factory=lambda: RunStatus(None))


class Provider(ABC):
    """A CI system that can try a candidate. Subclasses hold their own configuration."""

    #: the provider kind, as configured: command, github-actions, buildkite, gitlab
    kind: str = ""

    def __init__(self, name: str, *, timeout: float = 3600.0) -> None:
        """``name`` is the configured name; ``timeout`` bounds one run (seconds)."""
        self.name = name
        self.timeout = timeout

    @abstractmethod
    async def start(self, trial: Trial) -> Started:
        """Start a run of the trial (the command provider runs it to its end)."""

    @abstractmethod
    async def status(self, trial: Trial, run: RunRef) -> RunStatus:
        """The run's status now; a finished run carries its conclusion and evidence."""

    async def cancel(self, run: RunRef) -> None:  # noqa: B027 -- optional for providers
        """Ask the provider to stop a run (after a time-out); best effort, default nothing."""


# -- evidence -------------------------------------------------------------------------------

#: The line a workflow prints after installing: ``govern-verify: installed NAME==VERSION``.
MARKER = "govern-verify: installed"

_MARKER_LINE = re.compile(
    r"govern-verify: installed\s+([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s]+)", re.IGNORECASE
)
# pip: "Successfully installed cupy-cuda13x-14.1.1 fastrlock-0.8.3"
_PIP_LINE = re.compile(r"Successfully installed\s+(.+)$", re.MULTILINE)
# uv: " + cupy-cuda13x==14.1.1"
_UV_LINE = re.compile(r"^\s*\+\s+([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s]+)", re.MULTILINE)
# GitHub Actions prefixes every log line with a timestamp: "2026-06-02T10:00:00.1234567Z "
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT[0-9:.]+Z ", re.MULTILINE)
# ANSI control sequences (ECMA-48 CSI: colours, bold, erase line), as CI logs keep them.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences (the colours a CI log keeps)."""
    return _ANSI.sub("", text)


def _as_version(text: str) -> str | None:
    try:
        return str(Version(text))
    except InvalidVersion:
        return None


def find_evidence(log: str, package: str) -> str | None:
    """The version of ``package`` that a run's log says was installed, or None.

    Read, in order of trust: govern's marker line, pip's ``Successfully installed`` and
    uv's ``+ name==version``; the last such statement in the log wins (a later reinstall
    replaces an earlier one). Names compare canonically; a version that is not PEP 440 is
    no evidence. ANSI colours and GitHub's line timestamps are ignored.
    """
    wanted = canonicalize_name(package)
    text = _TIMESTAMP.sub("", strip_ansi(log))
    found: list[tuple[int, str]] = []
    for match in _MARKER_LINE.finditer(text):
        if canonicalize_name(match.group(1)) == wanted and (v := _as_version(match.group(2))):
            found.append((match.start(), v))
    if found:
        return found[-1][1]
    for match in _PIP_LINE.finditer(text):
        for item in match.group(1).split():
            name, _, version = item.rpartition("-")
            if name and canonicalize_name(name) == wanted and (v := _as_version(version)):
                found.append((match.start(), v))
    for match in _UV_LINE.finditer(text):
        if canonicalize_name(match.group(1)) == wanted and (v := _as_version(match.group(2))):
            found.append((match.start(), v))
    return max(found)[1] if found else None


def judge_evidence(
    passed: bool, trial: Trial, installed: str | None, detail: str
) -> tuple[Conclusion, str]:
    """A run's conclusion from its exit and its evidence.

    A green run counts as ``passed`` only if it installed exactly the candidate: without
    evidence, or with another version, it is ``errored`` (it tested something else). A
    red run is ``failed`` only if the candidate was installed (else the install itself
    did not happen, and the check said nothing about the candidate).
    """
    if installed is None:
        what = "passed" if passed else "failed"
        return Conclusion.ERRORED, (
            f"the run {what} ({detail}), but shows no evidence that {trial.requirement} was "
            f'installed (a line "{MARKER} {trial.requirement}")'
        )
    if Version(installed) != trial.version:
        return Conclusion.ERRORED, (
            f"the run installed {trial.package} {installed}, not {trial.version} ({detail})"
        )
    return (Conclusion.PASSED if passed else Conclusion.FAILED), detail


def excerpt(log: str, limit: int = 16 * 1024) -> str:
    """The end of a log, at most ``limit`` characters, cut at a line start when it can be."""
    if len(log) <= limit:
        return log
    tail = log[-limit:]
    newline = tail.find("\n")
    if 0 <= newline < limit // 4:
        tail = tail[newline + 1 :]
    return f"[... {len(log) - len(tail):,} characters before ...]\n{tail}"
