"""Parse Simple API project pages (PEP 691 JSON, PEP 503 HTML) into :class:`ProjectPage` values.

Pure functions, no I/O: the client hands over the body it read. A page comes from a server
govern does not control, so every field is type-checked; a page that does not follow the
spec raises :class:`SimpleParseError` (a ``ValueError``) with a short message, which the
caller records as a failed fetch. Nothing else is ever raised. Every stored URL is absolute
and has its credentials (``user:token@``) removed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

from packaging.tags import Tag
from packaging.utils import (
    NormalizedName,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

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
) -> DistributionFile:
    """One distribution file, its kind, version and tags read from the filename.

    Wheels and sdists (``.tar.gz``/``.zip``) that parse get a version; anything else, or a
    file of another project than ``project`` (when given), is :attr:`FileKind.OTHER` with
    no version: a name that does not parse is data to keep, never an error.
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
    except ValueError:  # InvalidWheelFilename, InvalidSdistFilename, InvalidVersion
        kind, version, tags = FileKind.OTHER, None, frozenset()
    if project is not None and parsed_name not in (None, canonicalize_name(project)):
        kind, version, tags = FileKind.OTHER, None, frozenset()
    return DistributionFile(
        filename=filename,
        url=strip_credentials(url),
        kind=kind,
        version=version,
        tags=frozenset(tags),
        requires_python=requires_python,
        yanked=yanked or yanked_reason is not None,
        yanked_reason=yanked_reason or None,
        upload_time=upload_time,
        size=size,
        hashes=dict(hashes or {}),
    )


def _check_api_version(version: str) -> None:
    major = version.split(".", 1)[0]
    if not major.isdigit():
        raise SimpleParseError(f"api-version {_quote(version)} is not a version")
    if int(major) > SUPPORTED_MAJOR:
        raise SimpleParseError(f"api-version {_quote(version)} is newer than this govern reads")


# -- PEP 691 JSON ------------------------------------------------------------------------------


def _expect(value: object, kind: type | tuple[type, ...], what: str) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) in kinds:  # the common case: exactly a type asked for
        return value
    # bool is an int in Python, but JSON true is never a number here.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise SimpleParseError(f"{what} is not a {_type_name(kinds)}")
    return value


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


def _upload_time(value: object, where: str) -> datetime | None:
    if value is None:
        return None
    what = f"{where}.upload-time"
    text = _expect(value, str, what)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SimpleParseError(f"{what} {_quote(text)} is not an ISO 8601 time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _json_file(entry: object, index: int, *, project: str, resolve: _Resolver) -> DistributionFile:
    where = f"files[{index}]"
    item: dict[str, Any] = _expect(entry, dict, where)
    filename: str = _field(item, "filename", str, where)
    url: str = _field(item, "url", str, where)
    hashes: dict[str, Any] = _field(item, "hashes", dict, where, {})
    for algo, digest in hashes.items():
        if type(algo) is not str or type(digest) is not str:
            _expect(algo, str, f"{where}.hashes key")
            _expect(digest, str, f"{where}.hashes.{algo}")
    requires_python = item.get("requires-python")
    if requires_python is not None:
        _field(item, "requires-python", str, where)
    yanked_value = _field(item, "yanked", (bool, str), where, False)
    yanked = bool(yanked_value) or isinstance(yanked_value, str)
    reason = yanked_value if isinstance(yanked_value, str) and yanked_value else None
    size = item.get("size")
    if size is not None and (_field(item, "size", int, where) < 0):
        raise SimpleParseError(f"{where}.size is negative")
    try:
        absolute = resolve(url)
    except ValueError:  # e.g. a malformed IPv6 host
        raise SimpleParseError(f"{where}.url {_quote(url)} is not a URL") from None
    return file_from(
        filename,
        absolute,
        project=project,
        requires_python=requires_python,
        yanked=yanked,
        yanked_reason=reason,
        upload_time=_upload_time(item.get("upload-time"), where),
        size=size,
        hashes=hashes,
    )


def parse_json(data: bytes, *, name: str, base_url: str) -> ProjectPage:
    """A PEP 691 project page (``application/vnd.pypi.simple.v1+json``) as a ProjectPage.

    ``base_url`` is the URL the page was read from (after redirects): relative file URLs
    are resolved against it. ``_last-serial`` (PyPI's ``meta`` extension) and PEP 700's
    ``versions``, ``upload-time`` and ``size`` are read when present.
    """
    project = canonicalize_name(name)
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nesting
        raise SimpleParseError(f"not JSON ({type(exc).__name__})") from None
    root: dict[str, Any] = _expect(document, dict, "the page")
    meta: dict[str, Any] = _expect(root.get("meta", {}), dict, "meta")
    api_version = meta.get("api-version")
    if api_version is not None:
        _check_api_version(_expect(api_version, str, "meta.api-version"))
    serial = meta.get("_last-serial")
    if serial is not None:
        _expect(serial, int, "meta._last-serial")
    page_name = root.get("name")
    if page_name is not None:
        _expect(page_name, str, "name")
        if canonicalize_name(page_name) != project:
            raise SimpleParseError(f"the page is for {_quote(page_name)}, not {project!r}")
    files_value: list[Any] = _expect(root.get("files"), list, "files")
    resolve = _Resolver(base_url)
    files = tuple(
        _json_file(entry, i, project=project, resolve=resolve)
        for i, entry in enumerate(files_value)
    )
    versions_value: list[Any] = _expect(root.get("versions", []), list, "versions")
    versions = tuple(
        v if type(v) is str else _expect(v, str, f"versions[{i}]")
        for i, v in enumerate(versions_value)
    )
    return ProjectPage(
        name=project,
        files=files,
        versions=versions,
        last_serial=serial,
        api_version=api_version,
        format="json",
    )


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
