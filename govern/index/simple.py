"""Parse Simple API project pages (PEP 691 JSON, PEP 503 HTML) into :class:`ProjectPage` values.

Notes: docs/internals.md#index.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast
from urllib.parse import urldefrag, urljoin, urlsplit

from packaging.tags import Tag
from packaging.utils import (
    NormalizedName,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from govern.index.model import DistributionFile, FileKind, ProjectPage

JSON_CONTENT_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_CONTENT_TYPE = "application/vnd.pypi.simple.v1+html"
LEGACY_HTML_CONTENT_TYPE = "text/html"

# The major version of the Simple API this parser understands (PEP 629: a client must
# refuse a page of a newer major version, and may warn on a newer minor one).
SUPPORTED_MAJOR = 1

# Userinfo of an absolute URL: everything between "//" and the last "@" of the authority.
_USERINFO = re.compile(r"(?<=//)[^/?#]*@")
# A PEP 503 hash fragment: "#sha256=<hex>".
_HASH_FRAGMENT = re.compile(r"^([a-z0-9_]{1,32})=([0-9a-fA-F]{1,256})$")
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


class _Resolver:
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


def _split(url: str) -> tuple[str, str, str]:
    """The URL without its fragment, the fragment, and the path (urldefrag, urlsplit)."""
    match = _PLAIN_URL.fullmatch(url)
    if match is not None:
        absolute, _, fragment = url.partition("#")
        return absolute, fragment, match["path"] or ""
    absolute, fragment = urldefrag(url)
    return absolute, fragment, urlsplit(absolute).path


def _quote(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _QUOTE_LIMIT else text[: _QUOTE_LIMIT - 3] + "..."


# A page keeps this many reasons for what it left out, then counts the rest: a hostile page
# of 100,000 bad entries costs a bounded list.
MAX_NOTES = 20
_PARSED_NAMES = (".whl", ".tar.gz", ".zip")


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
            notes.add(f"{_quote(filename)}: {_why_not(exc)}: not read as a release")
    if project is not None and parsed_name not in (None, canonicalize_name(project)):
        kind, version, tags = FileKind.OTHER, None, frozenset()
        if notes is not None:
            notes.add(f"{_quote(filename)} is a file of {parsed_name!r}: not read as a release")
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


def _why_not(exc: ValueError) -> str:
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
    return int(major) if _is_number(major) else None


def _check_api_version(version: str) -> None:
    major = api_major(version)
    if major is None:
        raise SimpleParseError(f"api-version {_quote(version)} is not a version")
    if major > SUPPORTED_MAJOR:
        raise SimpleParseError(f"api-version {_quote(version)} is newer than this govern reads")


def _is_number(text: str) -> bool:
    """ASCII digits, few enough for int() ("²" is a digit to str.isdigit, not to int)."""
    return text.isascii() and text.isdigit() and len(text) <= 64


# -- PEP 691 JSON ------------------------------------------------------------------------------


def _expect(value: object, kind: type | tuple[type, ...], what: str) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) in kinds:  # the common case: exactly a type asked for
        return value
    if not _is(value, kinds):
        raise SimpleParseError(f"{what} is not a {_type_name(kinds)}")
    return value


def _is(value: object, kinds: tuple[type, ...]) -> bool:
    # bool is an int in Python, but JSON true is never a number here.
    return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)


def _type_name(kinds: tuple[type, ...]) -> str:
    names = {dict: "object", list: "list", str: "string", int: "number", bool: "boolean"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _field(
    item: Mapping[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    where: str,
    default: object = None,
) -> Any:
    """``item.get(key, default)`` checked by :func:`_expect` as ``<where>.<key>``."""
    value = item.get(key, default)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) in kinds:  # the common case, without building the message
        return value
    return _expect(value, kinds, f"{where}.{key}")


def _optional(
    item: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, notes: Notes
) -> Any:
    """``item[key]`` when it is of ``kind``; None when absent, null or of another type (noted)."""
    value = item.get(key)
    if value is None:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) in kinds or _is(value, kinds):
        return value
    notes.add(f"{where}.{key} is not a {_type_name(kinds)}: ignored")
    return None


def _upload_time(value: object, where: str, notes: Notes) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        notes.add(f"{where}.upload-time {_quote(value)} is not an ISO 8601 time: ignored")
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _hashes(item: Mapping[str, Any], where: str, notes: Notes) -> dict[str, str]:
    """PEP 691's ``hashes``: the entries that are a name and a hex digest as strings."""
    value = _optional(item, "hashes", dict, where, notes)
    if not value:
        return {}
    if all(type(v) is str for v in value.values()):  # JSON keys are always strings
        return cast("dict[str, str]", value)
    kept: dict[str, str] = {}
    for algo, digest in value.items():
        if isinstance(digest, str):
            kept[algo] = digest
        else:
            notes.add(f"{where}.hashes.{_quote(algo)} is not a string: ignored")
    return kept


def _json_file(
    entry: object, index: int, *, project: str, resolve: _Resolver, notes: Notes
) -> DistributionFile | None:
    where = f"files[{index}]"
    item: dict[str, Any] = _expect(entry, dict, where)
    filename: str = _field(item, "filename", str, where)
    url: str = _field(item, "url", str, where)
    try:
        absolute = resolve(url)
    except ValueError:  # e.g. a malformed IPv6 host: this file cannot be fetched, not a page
        notes.add(f"{where}.url {_quote(url)} is not a URL: file left out")
        return None
    yanked_value = _optional(item, "yanked", (bool, str), where, notes)
    size = _optional(item, "size", int, where, notes)
    if size is not None and size < 0:
        notes.add(f"{where}.size is negative: ignored")
        size = None
    return file_from(
        filename,
        absolute,
        project=project,
        requires_python=_optional(item, "requires-python", str, where, notes),
        yanked=yanked_value is True or isinstance(yanked_value, str),
        yanked_reason=yanked_value if isinstance(yanked_value, str) and yanked_value else None,
        upload_time=_upload_time(_optional(item, "upload-time", str, where, notes), where, notes),
        size=size,
        hashes=_hashes(item, where, notes),
        notes=notes,
    )


def _serial(meta: Mapping[str, Any], notes: Notes) -> int | None:
    """``meta._last-serial``, PyPI's private extension: a number, or a string of digits."""
    value = meta.get("_last-serial")
    if value is None:
        return None
    if type(value) is int and value >= 0:
        return value
    if isinstance(value, str) and _is_number(value.strip()):
        return int(value.strip())  # as the index pip uses answers it: "40603035"
    notes.add(f"meta._last-serial {_quote(value)} is not a serial number: ignored")
    return None


def _versions(root: Mapping[str, Any], notes: Notes) -> tuple[str, ...]:
    """PEP 700's ``versions`` (absent before api-version 1.1): those that are PEP 440."""
    value = _optional(root, "versions", list, "the page", notes)
    kept: list[str] = []
    for i, raw in enumerate(value or ()):
        if not isinstance(raw, str):
            notes.add(f"versions[{i}] is not a string: ignored")
        elif parse_version(raw) is None:
            reason = "not a PEP 440 version"
            try:
                Version(raw)
            except InvalidVersion:
                pass
            except ValueError as exc:
                reason = _why_not(exc)
            notes.add(f"versions[{i}] {_quote(raw)}: {reason}: ignored")
        else:
            kept.append(raw)
    return tuple(kept)


def parse_json(data: bytes, *, name: str, base_url: str) -> ProjectPage:
    """A PEP 691 project page (``application/vnd.pypi.simple.v1+json``) as a ProjectPage.

    ``base_url`` is the URL the page was read from (after redirects): relative file URLs
    are resolved against it. ``_last-serial`` (PyPI's ``meta`` extension, a number or a
    string of digits) and PEP 700's ``versions``, ``upload-time`` and ``size`` are read when
    present and usable; what is left out is in the page's ``ignored``.
    """
    project = canonicalize_name(name)
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nesting
        looks = " (the body looks like HTML)" if _looks_like_html(data) else ""
        raise SimpleParseError(f"not JSON ({type(exc).__name__}){looks}") from None
    root: dict[str, Any] = _expect(document, dict, "the page")
    meta: dict[str, Any] = _expect(root.get("meta", {}), dict, "meta")
    api_version = meta.get("api-version")
    if api_version is not None:
        _check_api_version(_expect(api_version, str, "meta.api-version"))
    notes = Notes()
    serial = _serial(meta, notes)
    page_name = root.get("name")
    if page_name is not None:
        _expect(page_name, str, "name")
        if canonicalize_name(page_name) != project:
            raise SimpleParseError(f"the page is for {_quote(page_name)}, not {project!r}")
    files_value: list[Any] = _expect(root.get("files"), list, "files")
    resolve = _Resolver(base_url)
    files = tuple(
        file
        for i, entry in enumerate(files_value)
        if (file := _json_file(entry, i, project=project, resolve=resolve, notes=notes)) is not None
    )
    return ProjectPage(
        name=project,
        files=files,
        versions=_versions(root, notes),
        last_serial=serial,
        api_version=api_version,
        format="json",
        ignored=notes.result(),
    )


def _looks_like_html(data: bytes) -> bool:
    """Whether a body starts as markup does (``<``, after white space and a BOM)."""
    return data[:512].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<")


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


# -- PEP 503 HTML ---------------------------------------------------------------------------


def parse_html(
    data: bytes, *, name: str, base_url: str, encoding: str | None = None
) -> ProjectPage:
    """A PEP 503 project page (``text/html`` or ``application/vnd.pypi.simple.v1+html``).

    Each anchor is a file: the filename is the last path segment of its URL, a
    ``#<algo>=<hex>`` fragment gives its hash, ``data-requires-python`` and ``data-yanked``
    (PEP 592) are read; metadata attributes are ignored. A ``<base href>`` is honoured.
    Hostile markup (scripts, deep nesting, odd entities) is parsed as text, never raised.
    """
    from govern.index.pep503 import parse_page  # html.parser: loaded for HTML pages only

    return parse_page(data, name=name, base_url=base_url, encoding=encoding)
