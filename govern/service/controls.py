"""A verdict needs controls: which run a candidate needs next, and what its runs prove.

A failure counts against a candidate only when it fails twice (flakes) and the same check
passes on the release the line admits today (the control): a check that fails there too is
broken, and says nothing. A reproducer (``verify=``) certifies a fix only once it has
failed on a known-bad release. Notes: docs/design.md#verdicts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from govern.exclusions.clause import Clause
from govern.exclusions.states import CandidateStatus, Conclusion, RunKind
from govern.store.verifying import Ran

__all__ = [
    "FAILURES_NEEDED",
    "Judged",
    "check_key",
    "control_version",
    "judge",
    "known_bad_version",
    "next_run",
    "reproducer_said",
]

#: Failed runs of the candidate itself before a failure can count (the second is the re-run).
FAILURES_NEEDED = 2
_VERDICTS = (Conclusion.PASSED, Conclusion.FAILED)


@dataclass(frozen=True, slots=True)
class Judged:
    """What a candidate's runs prove: its status, and why in a sentence (None: more runs)."""

    status: CandidateStatus | None
    why: str


def check_key(reproducer: str | None) -> str | None:
    """A reproducer's identity: its confirmation holds while its text is the same."""
    if not reproducer:
        return None
    return hashlib.sha256(reproducer.encode("utf-8")).hexdigest()[:32]


def next_run(runs: Sequence[Ran], *, confirmed: bool, reproducer: bool) -> RunKind | None:
    """The run a candidate waits for: the reproducer's confirmation first (when it has one
    and it is not confirmed yet), then the candidate, its re-run after a failure, then the
    control. None: its runs have said all they can."""
    if reproducer and not confirmed:
        return RunKind.REPRODUCER
    mine = [r.conclusion for r in runs if r.kind is RunKind.CANDIDATE and r.conclusion in _VERDICTS]
    if not mine:
        return RunKind.CANDIDATE
    if Conclusion.PASSED in mine:
        return None
    if mine.count(Conclusion.FAILED) < FAILURES_NEEDED:
        return RunKind.CANDIDATE
    if not any(r.kind is RunKind.CONTROL and r.conclusion in _VERDICTS for r in runs):
        return RunKind.CONTROL
    return None


def judge(runs: Sequence[Ran], *, candidate: str) -> Judged:
    """What the verdict-bearing runs of ``candidate`` prove so far."""
    mine = [r for r in runs if r.kind is RunKind.CANDIDATE and r.conclusion in _VERDICTS]
    failed = [r for r in mine if r.conclusion is Conclusion.FAILED]
    if any(r.conclusion is Conclusion.PASSED for r in mine):
        plural = "s" if len(failed) != 1 else ""
        flaky = f" (after {len(failed)} failed run{plural}: a flake)" if failed else ""
        return Judged(CandidateStatus.PASSED, f"{candidate} passed{flaky}")
    controls = [r for r in runs if r.kind is RunKind.CONTROL and r.conclusion in _VERDICTS]
    for control in controls:
        if control.conclusion is Conclusion.FAILED:
            return Judged(
                CandidateStatus.ERRORED,
                f"the check fails on {control.version} too, the release the line admits "
                "today: it cannot tell a good release from a bad one (no verdict)",
            )
    if len(failed) >= FAILURES_NEEDED and controls:
        return Judged(
            CandidateStatus.FAILED,
            f"{candidate} failed {len(failed)} times; the same check passed on "
            f"{controls[0].version}, the release the line admits today",
        )
    return Judged(None, "")


def reproducer_said(version: str, conclusion: Conclusion) -> tuple[bool, str]:
    """(confirmed, why) for a reproducer's run on a known-bad release."""
    if conclusion is Conclusion.FAILED:
        return True, f"reproducer confirmed on {version}"
    return False, (
        f"the reproducer passed on {version}, a known-bad release: it cannot tell a fix "
        "(no verdict; change verify= so that it fails there)"
    )


def known_bad_version(clause: Clause | None, known_bad: Iterable[str]) -> Version | None:
    """The known-bad release a reproducer is confirmed on: the one the clause names (``<V``,
    ``!=V``), else the newest PEP 440 one of ``known_bad``."""
    if (
        clause is not None
        and clause.base is not None
        and clause.spec.operator in ("<", "!=")
        and not clause.version.endswith(".*")
    ):
        return clause.base
    parsed = []
    for text in known_bad:
        try:
            parsed.append(Version(text.strip()))
        except InvalidVersion:
            continue
    return max(parsed) if parsed else None


def control_version(
    versions: Iterable[Version],
    clause: Clause,
    line: SpecifierSet | None,
    *,
    yanked: Iterable[Version] = (),
) -> Version | None:
    """The release the line admits today: the newest final release that is not beyond the
    clause's bound, that the whole line admits (``line``: every clause of it), and that is
    neither known bad nor yanked."""
    left_out = set(yanked)
    found = [
        v
        for v in versions
        if not v.is_prerelease
        and not v.is_devrelease
        and v not in left_out
        and not clause.beyond(v)
        and not clause.keeps_out(v)
        and not clause.is_known_bad(v)
        and (line is None or line.contains(v, prereleases=False))
    ]
    return max(found) if found else None
