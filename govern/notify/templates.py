"""The texts govern sends: a reminder, the pending-relaxations issue, a digest.

Plain functions over the store's read models (:class:`~govern.store.proposals.Work`,
:class:`~govern.store.notices.Overview`), each rendering plain text (email, chat) and
Markdown (a forge). Nothing in them changes from one run to the next unless what they
describe changed: the pending issue is updated only when its body differs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date

from govern.notify.base import Message, repository_key
from govern.store.notices import Entry, Overview
from govern.store.proposals import Work

__all__ = [
    "SECTION_LIMIT",
    "digest",
    "digest_key",
    "pending_issue",
    "reminder",
    "reminder_key",
    "stop_hint",
]

SECTION_LIMIT = 50  # entries listed per section; the rest are counted (an issue holds 64 KiB)


def reminder_key(work: Work) -> str:
    """``remind:<exclusion key>:<version>``: one reminder per exclusion and version."""
    return f"remind:{work.key}:{work.version}"


def stop_hint(package: str, *, markdown: bool = False) -> str:
    """How to stop reminders for a package."""
    code: Callable[[str], str] = (lambda s: f"`{s}`") if markdown else (lambda s: s)
    none, pull = code('propose = "none"'), code('propose = "pull-request"')
    table = code("[tool.govern.propose.packages]")
    return (
        f"To stop these reminders, set {none} for {code(package)} in {table}; "
        f"{pull} opens a pull request instead."
    )


def _change(work: Work) -> tuple[str, str]:
    """The relaxation as (plain, Markdown): ``old → new (note)``, or why there is none."""
    old = work.requirement.strip()
    relaxation = work.relaxation
    if relaxation is None or relaxation.requirement is None:
        why = relaxation.refused if relaxation is not None else "not computed yet"
        return f"none computed ({why})", f"none computed ({why})"
    new = relaxation.requirement.strip()
    note = f" ({relaxation.note})" if relaxation.note else ""
    return f"{old} → {new}{note}", f"`{old}` → `{new}`{note}"


def reminder(work: Work) -> Message:
    """The reminder that ``work.version`` passed verification and the line can be relaxed."""
    old = work.requirement.strip()
    change, change_md = _change(work)
    reason = work.reason or "(none recorded)"
    runs = [
        f"{r.profile} ({r.provider}): {r.url or 'no run URL'}, installed {r.installed or '?'}"
        for r in work.runs
    ] or ["(no run recorded)"]
    links = list(work.links) or ["(none recorded)"]
    owner = [f"Owner: {work.owner}"] if work.owner else []
    text = "\n".join(
        [
            f"{work.package} {work.version} passed verification: the exclusion that keeps it "
            "out can be relaxed.",
            "",
            f"Exclusion: {old} in {work.source} line {work.line} ({work.repository})",
            f"Reason: {reason}",
            f"Candidate: {work.package} {work.version}",
            f"Change: {change}",
            *owner,
            "",
            "Verification:",
            *(f"- {line}" for line in runs),
            "",
            "Links:",
            *(f"- {link}" for link in links),
            "",
            stop_hint(work.package),
        ]
    )
    rows = [
        f"| {r.profile} | {r.provider} | {f'[run]({r.url})' if r.url else '-'} "
        f"| {r.installed or '-'} |"
        for r in work.runs
    ] or ["| - | - | - | - |"]
    markdown = "\n".join(
        [
            f"**govern:** `{work.package}` {work.version} passed verification; the exclusion "
            "that keeps it out can be relaxed.",
            "",
            f"**Exclusion:** `{old}` in `{work.source}` line {work.line}",
            f"**Reason:** {reason}",
            f"**Candidate:** {work.package} {work.version}",
            f"**Change:** {change_md}",
            *(f"**Owner:** {work.owner}" for _ in owner),
            "",
            "| profile | CI | run | installed |",
            "|---|---|---|---|",
            *rows,
            "",
            "**Links:**",
            *(f"- {link}" for link in links),
            "",
            stop_hint(work.package, markdown=True),
        ]
    )
    return Message(
        key=reminder_key(work),
        kind="reminder",
        subject=f"{work.package} {work.version} passed verification: relax {old}",
        text=text,
        markdown=markdown,
        links=work.links,
    )


# -- the pending issue and the digest ------------------------------------------------------


def _counts(overview: Overview) -> str:
    return (
        f"{len(overview.relaxable)} relaxable, {len(overview.overdue)} overdue, "
        f"{len(overview.held)} held"
    )


def _where(entry: Entry) -> str:
    return f"{entry.source} line {entry.line}"


def _relaxable(entry: Entry, code: Callable[[str], str]) -> str:
    run = f", run {entry.run_url}" if entry.run_url else ""
    return (
        f"{code(entry.requirement.strip())} → {code((entry.new or '').strip())}: "
        f"{entry.version} verified{run} ({_where(entry)})"
    )


def _overdue(entry: Entry, code: Callable[[str], str]) -> str:
    when = entry.review_by.isoformat() if isinstance(entry.review_by, date) else "?"
    return f"{code(entry.requirement.strip())}: review by {when} ({_where(entry)})"


def _held(entry: Entry, code: Callable[[str], str]) -> str:
    return f"{code(entry.requirement.strip())} ({_where(entry)})"


def _section(
    title: str,
    entries: Sequence[Entry],
    line: Callable[[Entry, Callable[[str], str]], str],
    *,
    markdown: bool,
) -> list[str]:
    code: Callable[[str], str] = (lambda s: f"`{s}`") if markdown else (lambda s: s)
    heading = f"## {title} ({len(entries)})" if markdown else f"{title} ({len(entries)}):"
    out = [heading]
    for entry in entries[:SECTION_LIMIT]:
        out.append(f"- {line(entry, code)}")
        if entry.reason:
            out.append(f"  Reason: {' '.join(entry.reason.split())}")
        if entry.links:
            out.append(f"  Links: {', '.join(entry.links)}")
    if len(entries) > SECTION_LIMIT:
        out.append(f"- … and {len(entries) - SECTION_LIMIT} more")
    if not entries:
        out.append("- none")
    return [*out, ""]


def _listing(overview: Overview, *, markdown: bool) -> list[str]:
    return [
        *_section("Relaxable", overview.relaxable, _relaxable, markdown=markdown),
        *_section("Overdue", overview.overdue, _overdue, markdown=markdown),
        *_section("Held", overview.held, _held, markdown=markdown),
    ]


def pending_issue(overview: Overview) -> tuple[str, str]:
    """The pending-relaxations issue's title and Markdown body (its marker is added when
    it is sent)."""
    title = (
        f"Pending relaxations: {len(overview.relaxable)} relaxable, {len(overview.overdue)} overdue"
    )
    body = "\n".join(
        [
            f"govern keeps this issue up to date with the exclusions of {overview.repository}: "
            f"{_counts(overview)}.",
            "",
            *_listing(overview, markdown=True),
            "Relaxable: a newer release passed verification and the narrow change is known. "
            "Overdue: the review date in the exclusion's annotation has passed. "
            'To stop proposing a package, set `propose = "none"` for it in '
            "`[tool.govern.propose.packages]`; to stop this issue, `pending-issue = false` in "
            "`[tool.govern.notify]`.",
        ]
    )
    return title, body


def digest_key(repository: str, period: str) -> str:
    """``digest:<repository>:<period>``: one digest per repository and period."""
    return f"digest:{repository_key(repository)}:{period}"


def digest(overview: Overview, period: str) -> Message:
    """The digest of one period (``2026-W23``, ``2026-06-02``): the pending issue's content
    as one message."""
    header = f"govern digest for {overview.repository}, {period}: {_counts(overview)}."
    footer = (
        'To stop proposing a package, set propose = "none" for it in '
        '[tool.govern.propose.packages]; to stop this digest, digest = "none" in '
        "[tool.govern.notify]."
    )
    links = tuple(link for e in (*overview.relaxable, *overview.overdue) for link in e.links)
    return Message(
        key=digest_key(overview.repository, period),
        kind="digest",
        subject=f"govern digest {period} for {overview.repository}: {_counts(overview)}",
        text="\n".join([header, "", *_listing(overview, markdown=False), footer]),
        markdown="\n".join([header, "", *_listing(overview, markdown=True), footer]),
        links=links,
    )
