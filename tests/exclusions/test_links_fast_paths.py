"""find_links skips expressions by literal: it must still find what they match."""

from __future__ import annotations

from govern.exclusions.links import find_links
from govern.exclusions.settings import LinkContext


def test_no_link_is_empty() -> None:
    assert find_links("Cap until a fixed newer release is verified") == ()


def test_case_insensitive_advisories_are_found() -> None:
    refs = [link.ref for link in find_links("see ghsa-2345-6789-cfgh and cve-2024-12345")]
    assert refs == ["GHSA-2345-6789-cfgh", "CVE-2024-12345"]


def test_long_s_still_matches_ghsa() -> None:
    # re.IGNORECASE matches "S" with U+017F; the literal check must not skip it.
    links = find_links("GH\u017fA-2345-6789-cfgh")
    assert [link.kind for link in links] == ["ghsa"]


def test_bugs_and_hashes() -> None:
    ctx = LinkContext(forge="https://github.com/o/r", bug_url="https://bugs/{id}")
    assert [str(link) for link in find_links("Bug #1234 and #77, LP: #99", ctx)] == [
        "https://bugs/1234",
        "https://github.com/o/r/issues/77",
        "https://bugs.launchpad.net/bugs/99",
    ]
