"""Find links in reason text: URLs, issues, pull requests, bugs and advisories.

Shapes seen in the corpus: full URLs, ``#123``, ``owner/repo#123``,
``bug 1593641`` and ``Bug#1916771`` (OpenStack), Launchpad ``+bug/NNN`` URLs,
``GHSA-xxxx-xxxx-xxxx`` and ``CVE-YYYY-NNNN``.
"""

from __future__ import annotations

import re

from govern.exclusions.model import Link
from govern.exclusions.settings import LinkContext

_URL_RE = re.compile(r"https?://[^\s<>\"'`]+")
_GHSA_RE = re.compile(r"\bGHSA(?:-[23456789cfghjmpqrvwx]{4}){3}\b", re.IGNORECASE)
_CVE_RE = re.compile(r"\bCVE-\d{4}-\d{4,}\b", re.IGNORECASE)
_REPO_ISSUE_RE = re.compile(r"(?<![\w/.@-])([A-Za-z0-9][\w.-]*/[A-Za-z0-9_.-]+)#(\d+)\b")
_LP_RE = re.compile(r"\b(?:LP|lp):?\s*#(\d+)\b")
_BUG_RE = re.compile(r"\b[Bb]ug\s*#?\s*(\d{3,})\b")
_HASH_RE = re.compile(r"(?<![\w/&#])#(\d+)\b")


def _url_kind(url: str) -> str:
    if "launchpad.net" in url:
        return "launchpad"
    if "/advisories/GHSA-" in url:
        return "ghsa"
    if re.search(r"/(issues|pull)/\d+", url):
        return "issue"
    return "url"


def find_links(text: str, context: LinkContext | None = None) -> tuple[Link, ...]:
    """Every link in ``text``, in order of appearance, without duplicates."""
    ctx = context or LinkContext()
    found: list[tuple[int, Link]] = []
    masked = text

    def take(match: re.Match[str], link: Link) -> None:
        nonlocal masked
        found.append((match.start(), link))
        masked = (
            masked[: match.start()] + " " * (match.end() - match.start()) + masked[match.end() :]
        )

    # Most text has no link at all: each expression runs only when the text has
    # the literal it cannot match without ("http", "ghsa", "cve-", "#", "ug").
    # casefold, not lower: IGNORECASE also matches "S" with the long s "\u017f".
    folded = text.casefold()
    if "http" in text:
        for m in list(_URL_RE.finditer(masked)):
            url = m.group(0).rstrip(".,;:!?)]}")
            take(m, Link(_url_kind(url), url, url))
    if "ghsa" in folded:
        for m in list(_GHSA_RE.finditer(masked)):
            ghsa = "GHSA" + m.group(0)[4:].lower()
            take(m, Link("ghsa", ghsa, f"{ctx.forge_host}/advisories/{ghsa}"))
    if "cve-" in folded:
        for m in list(_CVE_RE.finditer(masked)):
            cve = m.group(0).upper()
            take(m, Link("cve", cve, f"https://www.cve.org/CVERecord?id={cve}"))
    if "#" in text:
        for m in list(_REPO_ISSUE_RE.finditer(masked)):
            repo, number = m.group(1), m.group(2)
            take(m, Link("issue", f"{repo}#{number}", f"{ctx.forge_host}/{repo}/issues/{number}"))
        for m in list(_LP_RE.finditer(masked)):
            number = m.group(1)
            take(m, Link("launchpad", m.group(0), f"https://bugs.launchpad.net/bugs/{number}"))
    if "ug" in text:
        for m in list(_BUG_RE.finditer(masked)):
            number = m.group(1)
            bug_url = ctx.bug_url.format(id=number) if ctx.bug_url else None
            take(m, Link("bug", f"bug {number}", bug_url))
    if "#" in text:
        for m in list(_HASH_RE.finditer(masked)):
            number = m.group(1)
            issue_url = f"{ctx.forge.rstrip('/')}/issues/{number}" if ctx.forge else None
            take(m, Link("issue", f"#{number}", issue_url))
    if not found:
        return ()
    seen: set[str] = set()
    links: list[Link] = []
    for _, link in sorted(found, key=lambda item: item[0]):
        if str(link) not in seen:
            seen.add(str(link))
            links.append(link)
    return tuple(links)
