"""PEP 503 HTML project pages, parsed without trusting their markup.

Split from :mod:`govern.index.simple` so that :mod:`html.parser` loads only when an index
answers in HTML: most answer PEP 691 JSON, and a poll starts faster without it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from html.parser import HTMLParser
from urllib.parse import unquote, urljoin

from packaging.utils import canonicalize_name

from govern.index.model import DistributionFile, ProjectPage
from govern.index.parsing import (
    HASH_FRAGMENT,
    Notes,
    Resolver,
    SimpleParseError,
    api_major,
    check_api_version,
    file_from,
    looks_like_json,
    quoted,
    split_url,
)


class _AnchorCollector(HTMLParser):
    """Collects ``<a>`` attributes, the first ``<base href>`` and the repository version."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[dict[str, str | None]] = []
        self.base_href: str | None = None
        self.api_version: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            attributes: dict[str, str | None] = {}
            for key, value in attrs:
                attributes.setdefault(key, value)  # the first of a repeated attribute wins
            if attributes.get("href"):
                self.anchors.append(attributes)
        elif tag == "base" and self.base_href is None:
            self.base_href = next((v for k, v in attrs if k == "href" and v), None)
        elif tag == "meta":
            attributes = dict(attrs)
            if attributes.get("name") == "pypi:repository-version" and self.api_version is None:
                self.api_version = attributes.get("content") or None


# The start tags that matter, and the elements whose content is text (never markup).
_WANTED_TAGS = frozenset({"a", "base", "meta"})
# As in HTMLParser (what pip parses with): only script and style hold raw text.
_TEXT_ELEMENTS = frozenset({"script", "style"})
_MARKUP = re.compile(r"<[!?A-Za-z]")  # what may open a tag; "</x" and a stray "<" are text
_TAG_NAME = re.compile(r"[A-Za-z][^\s/>\x00]*")
_TAG_STOP = re.compile(r"[>\"']")
_MAX_TAG = 32 * 1024  # a longer tag is not an anchor of a real index: skipped


def _tag_end(text: str, pos: int) -> int:
    """The index after the ``>`` that closes the tag whose attributes start at pos, or -1.

    A quote opens a quoted value only after ``=``; an unterminated quote or tag runs to the
    end of the document (as in HTML5), so -1 ends the scan.
    """
    while True:
        stop = _TAG_STOP.search(text, pos)
        if stop is None:
            return -1
        at = stop.start()
        quote = text[at]
        if quote == ">":
            return at + 1
        if text[pos:at].rstrip().endswith("="):
            closing = text.find(quote, at + 1)
            if closing < 0:
                return -1
            pos = closing + 1
        else:
            pos = at + 1


def _start_tags(text: str) -> list[str]:
    """The complete ``<a>``, ``<base>`` and ``<meta>`` start tags of a document, in order.

    A linear pre-scan: comments, declarations, processing instructions and the content of
    script-like elements are skipped, each position is looked at a bounded number of times.
    Only the bounded tags reach :class:`HTMLParser`, whose own scan of unterminated
    constructs is quadratic on older Python patch releases (CVE-2025-6069).
    """
    tags: list[str] = []
    pos = 0
    while True:
        markup = _MARKUP.search(text, pos)
        if markup is None:
            return tags
        start = markup.start()
        if text.startswith("<!--", start):
            close = text.find("-->", start + 4)
            if close < 0:
                return tags
            pos = close + 3
            continue
        if text.startswith(("<!", "<?"), start):  # doctype, CDATA, bogus comments
            close = text.find(">", start + 2)
            if close < 0:
                return tags
            pos = close + 1
            continue
        name = _TAG_NAME.match(text, start + 1)
        if name is None:  # unreachable: _MARKUP saw a letter
            return tags
        end = _tag_end(text, name.end())
        if end < 0:
            return tags
        pos = end
        tag = name.group().lower()
        if tag in _WANTED_TAGS:
            if end - start <= _MAX_TAG and "=" in text[start:end]:  # no attribute: no use
                tags.append(text[start:end])
        elif tag in _TEXT_ELEMENTS:
            close_tag = re.compile(rf"</{tag}[\s/>]", re.IGNORECASE).search(text, pos)
            if close_tag is None:
                return tags
            pos = close_tag.start()


def _html_file(
    anchor: Mapping[str, str | None], *, project: str, resolve: Resolver, notes: Notes
) -> DistributionFile | None:
    href = (anchor.get("href") or "").strip()
    try:
        absolute, fragment, path = split_url(resolve(href))
    except ValueError:  # a malformed URL is not a file
        return None
    filename = unquote(path.rsplit("/", 1)[-1])
    if not filename:
        return None
    hashes: dict[str, str] = {}
    match = HASH_FRAGMENT.match(fragment)
    if match:
        hashes[match.group(1)] = match.group(2).lower()
    yanked = "data-yanked" in anchor
    return file_from(
        filename,
        absolute,
        project=project,
        requires_python=anchor.get("data-requires-python") or None,
        yanked=yanked,
        yanked_reason=(anchor.get("data-yanked") or None) if yanked else None,
        hashes=hashes,
        notes=notes,
    )


def parse_page(
    data: bytes, *, name: str, base_url: str, encoding: str | None = None
) -> ProjectPage:
    """:func:`govern.index.simple.parse_html`, which documents it."""
    project = canonicalize_name(name)
    try:
        text = data.decode(encoding or "utf-8", errors="replace")
    except LookupError:  # an unknown charset in the Content-Type
        text = data.decode("utf-8", errors="replace")
    collector = _AnchorCollector()
    tags = _start_tags(text)
    if not tags:
        _check_is_html(data, text)
    for tag in tags:
        try:
            collector.feed(tag)
            collector.close()
        except Exception:  # noqa: S112 -- HTMLParser may assert on odd markup: not an anchor
            continue
        finally:
            collector.reset()
    notes = Notes()
    api_version = collector.api_version
    if api_version is not None and api_major(api_version) is None:
        notes.add(f"pypi:repository-version {quoted(api_version)} is not a version: ignored")
        api_version = None
    if api_version is not None:
        check_api_version(api_version)  # a newer major: PEP 629 asks to refuse the page
    base = base_url
    if collector.base_href:
        try:
            base = urljoin(base_url, collector.base_href.strip())
        except ValueError:  # a malformed <base href> is ignored, as browsers do
            base = base_url
    files: list[DistributionFile] = []
    resolve = Resolver(base)
    for anchor in collector.anchors:
        file = _html_file(anchor, project=project, resolve=resolve, notes=notes)
        if file is not None:
            files.append(file)
    return ProjectPage(
        name=project,
        files=tuple(files),
        api_version=api_version,
        format="html",
        ignored=notes.result(),
    )


def _check_is_html(data: bytes, text: str) -> None:
    """A page with no tag of use must still be HTML: JSON or plain text labelled as HTML
    is a mislabelled body (a failed fetch), not a project without files."""
    if looks_like_json(data):
        raise SimpleParseError("the body is JSON, not the HTML its content type says")
    if _MARKUP.search(text) is None:
        raise SimpleParseError("the body has no HTML markup (not an HTML page)")
