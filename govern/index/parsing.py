"""What the PEP 691 JSON and the PEP 503 HTML parsers share: a file read from its name and
URL, the URLs resolved against the page, the notes of what a page left out, the API version.

Its own module so that :mod:`govern.index.pep503` (loaded for HTML pages only) and
:mod:`govern.index.simple` read it without importing each other. Notes: docs/internals.md#index.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Mapping
from datetime import datetime
from urllib.parse import urldefrag, urljoin, urlsplit

from packaging.tags import Tag
from packaging.utils import (
    NormalizedName,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from govern.index.model import DistributionFile, FileKind

# The major version of the Simple API this parser understands (PEP 629: a client must
# refuse a page of a newer major version, and may warn on a newer minor one).
SUPPORTED_MAJOR = 1

# Userinfo of an absolute URL: everything between "//" and the last "@" of the authority.
_USERINFO = re.compile(r"(?<=//)[^/?#]*@")
# A PEP 503 hash fragment: "#sha256=<hex>".
HASH_FRAGMENT = re.compile(r"^([a-z0-9_]{1,32})=([0-9a-fA-F]{1,256})$")
# Messages quote page content; a hostile page must not make them huge.
_QUOTE_LIMIT = 80
# An absolute http(s) URL that urljoin() gives back unchanged against any base it can parse:
# a lower-case scheme, a plain ASCII authority, no ";params", a query or fragment only when
# not empty (urlunsplit drops an empty "?" or "#"), no white space or control character.
_PLAIN_URL = re.compile(
    r"https?://[-A-Za-z0-9._~%!$&'()*+,=:@]+"
    r"(?P<path>/[^\x00-\x20\x7f?#;]*)?"
    r"(?:\?[^\x00-\x20\x7f#]+)?"
    r"(?:#[^\x00-\x20\x7f]+)?"
)
# A relative reference to a file in a folder (``../../files/demo-1.0.tar.gz#sha256=...``): no
# scheme, authority, params or query, and a file name that is neither "." nor "..". Against
# a base with an authority, urljoin(base, url) is urljoin(base, folder) + the rest.
_PLAIN_RELATIVE = re.compile(
    r"(?!//)(?P<folder>[^\x00-\x20\x7f:?#;]*/)(?P<name>[^\x00-\x20\x7f:?#;/]+)"
    r"(?:#[^\x00-\x20\x7f]+)?"
)


class SimpleParseError(ValueError):
    """A project page that is not valid PEP 691 JSON / PEP 503 HTML (recorded, never fatal)."""


def strip_credentials(url: str) -> str:
    """The URL without its userinfo (``https://user:token@host/x`` → ``https://host/x``)."""
    return _USERINFO.sub("", url, count=1) if "@" in url else url


class Resolver:
    """``urljoin(base, url)`` for the file URLs of one page, without work it need not do.

    A plain absolute URL (:data:`_PLAIN_URL`) is its own resolution; a plain relative one
    (:data:`_PLAIN_RELATIVE`) is its folder, resolved once per page, and the rest. Any
    other URL goes through urljoin, which may raise ValueError.
    """

    def __init__(self, base: str) -> None:
        self._base = base
        try:
            urlsplit(base)
            self._shortcuts = True
        except ValueError:  # urljoin raises for every URL against this base
            self._shortcuts = False
        # The folder shortcut holds for a base with an authority: a plain one.
        self._folders: dict[str, str] | None = {} if _PLAIN_URL.fullmatch(base) else None

    def __call__(self, url: str) -> str:
        if self._shortcuts and _PLAIN_URL.fullmatch(url):
            return url
        if self._folders is not None:
            match = _PLAIN_RELATIVE.fullmatch(url)
            if match is not None and match["name"] not in (".", ".."):
                folder = match["folder"]
                joined = self._folders.get(folder)
                if joined is None:
                    joined = self._folders[folder] = urljoin(self._base, folder)
                return joined + url[len(folder) :]
        return urljoin(self._base, url)


def split_url(url: str) -> tuple[str, str, str]:
    """The URL without its fragment, the fragment, and the path (urldefrag, urlsplit)."""
    match = _PLAIN_URL.fullmatch(url)
    if match is not None:
        absolute, _, fragment = url.partition("#")
        return absolute, fragment, match["path"] or ""
    absolute, fragment = urldefrag(url)
    return absolute, fragment, urlsplit(absolute).path


def quoted(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _QUOTE_LIMIT else text[: _QUOTE_LIMIT - 3] + "..."


# A page keeps this many reasons for what it left out, then counts the rest: a hostile page
# of 100,000 bad entries costs a bounded list.
MAX_NOTES = 20


class Notes:
    """What a parser left out of a page and why, the first :data:`MAX_NOTES` kept."""

    __slots__ = ("dropped", "kept")

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.dropped = 0

    def add(self, reason: str) -> None:
        """Record one reason (past the bound, only counted)."""
        if len(self.kept) < MAX_NOTES:
            self.kept.append(reason)
        else:
            self.dropped += 1

    def result(self) -> tuple[str, ...]:
        """The reasons, and how many more there were."""
        if self.dropped:
            return (*self.kept, f"and {self.dropped} more")
        return tuple(self.kept)


def file_from(
    filename: str,
    url: str,
    *,
    project: str | None = None,
    requires_python: str | None = None,
    yanked: bool = False,
    yanked_reason: str | None = None,
    upload_time: datetime | None = None,
    size: int | None = None,
    hashes: Mapping[str, str] | None = None,
    notes: Notes | None = None,
) -> DistributionFile:
    """One distribution file, its kind, version and tags read from the filename.

    Wheels and sdists (``.tar.gz``/``.zip``) that parse get a version; anything else, or a
    file of another project than ``project`` (when given), is :attr:`FileKind.OTHER` with
    no version: a name that does not parse is data to keep, never an error. The reason a
    wheel or sdist name was not read goes to ``notes`` (when given).
    """
    kind = FileKind.OTHER
    version: Version | None = None
    tags: frozenset[Tag] = frozenset()
    parsed_name: NormalizedName | None = None
    try:
        if filename.endswith(".whl"):
            parsed_name, version, _build, tags = parse_wheel_filename(filename)
            kind = FileKind.WHEEL
        elif filename.endswith((".tar.gz", ".zip")):
            parsed_name, version = parse_sdist_filename(filename)
            kind = FileKind.SDIST
    except ValueError as exc:
        # InvalidWheelFilename, InvalidSdistFilename, InvalidVersion, and the ValueError of
        # int() for a version part past sys.get_int_max_str_digits() (4,300 digits).
        kind, version, tags = FileKind.OTHER, None, frozenset()
        if notes is not None:
            notes.add(f"{quoted(filename)}: {why_not(exc)}: not read as a release")
    if project is not None and parsed_name not in (None, canonicalize_name(project)):
        kind, version, tags = FileKind.OTHER, None, frozenset()
        if notes is not None:
            notes.add(f"{quoted(filename)} is a file of {parsed_name!r}: not read as a release")
    return DistributionFile(
        filename=filename,
        url=strip_credentials(url),
        kind=kind,
        version=version,
        tags=_shared(frozenset(tags)),
        requires_python=requires_python,
        yanked=yanked or yanked_reason is not None,
        yanked_reason=yanked_reason or None,
        upload_time=upload_time,
        size=size,
        hashes=dict(hashes or {}),
    )


# -- memory: one tag set per kind of wheel (a poll of a 100,000-wheel page; bench/hostile.py)


@functools.lru_cache(maxsize=1024)
def _shared(tags: frozenset[Tag]) -> frozenset[Tag]:
    """The first equal tag set seen: a page's wheels share a few, so a large page keeps few."""
    return tags


def why_not(exc: ValueError) -> str:
    """Why a file name or version did not parse, in a few words (never the whole text)."""
    if "digits" in str(exc) and "integer string" in str(exc):
        return f"a version number over {sys.get_int_max_str_digits()} digits"
    if isinstance(exc, InvalidVersion):
        return "not a PEP 440 version"
    return "not a valid wheel or sdist name"


def parse_version(text: str) -> Version | None:
    """``Version(text)``, or None for anything that is not one (past the int limit too)."""
    try:
        return Version(text)
    except ValueError:  # InvalidVersion, or int() over sys.get_int_max_str_digits()
        return None


def api_major(version: str) -> int | None:
    """The major number of a Simple API version ("1.1" → 1), None when it has none."""
    major = version.split(".", 1)[0]
    return int(major) if is_number(major) else None


def check_api_version(version: str) -> None:
    major = api_major(version)
    if major is None:
        raise SimpleParseError(f"api-version {quoted(version)} is not a version")
    if major > SUPPORTED_MAJOR:
        raise SimpleParseError(f"api-version {quoted(version)} is newer than this govern reads")


def is_number(text: str) -> bool:
    """ASCII digits, few enough for int() ("²" is a digit to str.isdigit, not to int)."""
    return text.isascii() and text.isdigit() and len(text) <= 64


def looks_like_json(data: bytes) -> bool:
    """Whether a body is a JSON object or list (what an HTML page never is)."""
    start = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    if not start.startswith((b"{", b"[")):
        return False
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True
