"""The texts govern sends: a reminder, the pending-relaxations issue, a digest.

Notes: docs/internals.md#notify.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date

from govern.exclusions.notices import Notice, Overview
from govern.notify.base import Message, repository_key
from govern.store.outbox import KeyKind, outbox_key
from govern.store.proposals import Work
from govern.text import is_link, link, quoted, visible

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
_HANDLE = re.compile(r"@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:/[A-Za-z0-9_.-]+)?")


def owner_text(owner: str) -> str:
    """An owner as sent: its ``@user`` and ``@org/team`` handles live (they are asked to
    review, and meant to be told), the rest of the words :func:`~govern.text.quoted`."""
    words = owner.split()
    handles = [word for word in words if _HANDLE.fullmatch(word)]
    rest = " ".join(word for word in words if not _HANDLE.fullmatch(word))
    return " ".join([*handles, *([quoted(rest)] if rest else [])])


def _run_link(url: str | None) -> str:
    """A CI run's page as a Markdown link when govern recognises it, else quoted."""
    if not url:
        return "-"
    return f"[run]({url})" if is_link(url) else quoted(url)


def reminder_key(work: Work) -> str:
    """``remind:<exclusion key>:<version>``: one reminder per exclusion and version."""
    return outbox_key(KeyKind.REMIND, work.ref.key, work.version)


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
    old = quoted(work.ref.requirement)
    relaxation = work.relaxation
    if relaxation is None or relaxation.requirement is None:
        why = relaxation.refused if relaxation is not None else "not computed yet"
        return f"none computed ({why})", f"none computed ({why})"
    new = quoted(relaxation.requirement)
    note = f" ({relaxation.note})" if relaxation.note else ""
    return f"{old} → {new}{note}", f"{old} → {new}{note}"


def reminder(work: Work, *, blocked: str | None = None) -> Message:
    """The reminder that ``work.version`` passed verification and the line can be relaxed;
    ``blocked``: why govern could not propose the change itself (a lock it could not
    regenerate), said in the message."""
    held = (
        [f"Blocked: govern did not propose the change itself: {quoted(blocked)}", ""]
        if blocked
        else []
    )
    old = work.ref.requirement.strip()
    change, change_md = _change(work)
    reason = quoted(work.reason) if work.reason else "(none recorded)"
    runs = [
        f"{r.profile} ({r.provider}): {link(r.url) if r.url else 'no run URL'}, "
        f"installed {r.installed or '?'}"
        for r in work.runs
    ] or ["(no run recorded)"]
    links = [link(each) for each in work.links] or ["(none recorded)"]
    owner = [owner_text(work.owner)] if work.owner else []
    where = f"{quoted(old)} in {quoted(work.ref.source)} line {work.ref.line}"
    text = "\n".join(
        [
            f"{work.ref.package} {work.version} passed verification: the exclusion that keeps it "
            "out can be relaxed.",
            "",
            f"Exclusion: {where} ({work.ref.repository})",
            f"Reason: {reason}",
            f"Candidate: {work.ref.package} {work.version}",
            f"Change: {change}",
            *(f"Owner: {said}" for said in owner),
            "",
            *held,
            "Verification:",
            *(f"- {line}" for line in runs),
            "",
            "Links:",
            *(f"- {link}" for link in links),
            "",
            stop_hint(work.ref.package),
        ]
    )
    rows = [
        f"| {r.profile} | {r.provider} | {_run_link(r.url)} | {r.installed or '-'} |"
        for r in work.runs
    ] or ["| - | - | - | - |"]
    markdown = "\n".join(
        [
            f"**govern:** `{work.ref.package}` {work.version} passed verification; the exclusion "
            "that keeps it out can be relaxed.",
            "",
            f"**Exclusion:** {where}",
            f"**Reason:** {reason}",
            f"**Candidate:** {work.ref.package} {work.version}",
            f"**Change:** {change_md}",
            *(f"**Owner:** {said}" for said in owner),
            "",
            *(
                [f"**Blocked:** govern did not propose the change itself: {quoted(blocked)}", ""]
                if blocked
                else []
            ),
            "| profile | CI | run | installed |",
            "|---|---|---|---|",
            *rows,
            "",
            "**Links:**",
            *(f"- {link}" for link in links),
            "",
            stop_hint(work.ref.package, markdown=True),
        ]
    )
    return Message(
        key=reminder_key(work),
        kind="reminder",
        subject=f"{work.ref.package} {work.version} passed verification: relax {visible(old)}",
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


def _where(entry: Notice) -> str:
    return f"{quoted(entry.ref.source)} line {entry.ref.line}"


def _relaxable(entry: Notice, code: Callable[[str], str]) -> str:
    run = f", run {link(entry.run_url)}" if entry.run_url else ""
    return (
        f"{code(entry.ref.requirement.strip())} → {code((entry.new or '').strip())}: "
        f"{entry.version} verified{run} ({_where(entry)})"
    )


def _overdue(entry: Notice, code: Callable[[str], str]) -> str:
    when = entry.review_by.isoformat() if isinstance(entry.review_by, date) else "?"
    return f"{code(entry.ref.requirement.strip())}: review by {when} ({_where(entry)})"


def _held(entry: Notice, code: Callable[[str], str]) -> str:
    return f"{code(entry.ref.requirement.strip())} ({_where(entry)})"


def _section(
    title: str,
    entries: Sequence[Notice],
    line: Callable[[Notice, Callable[[str], str]], str],
    *,
    markdown: bool,
) -> list[str]:
    heading = f"## {title} ({len(entries)})" if markdown else f"{title} ({len(entries)}):"
    out = [heading]
    for entry in entries[:SECTION_LIMIT]:
        out.append(f"- {line(entry, quoted)}")
        if entry.reason:
            out.append(f"  Reason: {quoted(' '.join(entry.reason.split()))}")
        if entry.links:
            out.append(f"  Links: {', '.join(link(each) for each in entry.links)}")
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
    return outbox_key(KeyKind.DIGEST, repository_key(repository), period)


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
