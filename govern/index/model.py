"""What the package index says about a project, as frozen values.

Notes: docs/internals.md#index.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from packaging.tags import Tag
from packaging.version import Version


class FileKind(enum.StrEnum):
    """What a distribution file is."""

    WHEEL = "wheel"
    SDIST = "sdist"
    OTHER = "other"  # eggs, .exe installers, names that do not parse


@dataclass(frozen=True, slots=True)
class DistributionFile:
    """One file of a project on the index (PEP 691 ``files`` / a PEP 503 anchor)."""

    filename: str
    url: str  # absolute, credentials removed
    kind: FileKind
    version: Version | None  # from the filename; None when it does not parse
    tags: frozenset[Tag] = frozenset()  # wheels only
    requires_python: str | None = None
    yanked: bool = False
    yanked_reason: str | None = None
    upload_time: datetime | None = None  # PEP 700
    size: int | None = None
    hashes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ProjectPage:
    """A project's page, with what is needed to ask for it again cheaply."""

    name: str  # canonical (PEP 503)
    files: tuple[DistributionFile, ...]
    versions: tuple[str, ...] = ()  # PEP 700 ``versions`` (JSON only; may list file-less ones)
    last_serial: int | None = None  # ``meta._last-serial`` or ``X-PyPI-Last-Serial``
    etag: str | None = None
    last_modified: str | None = None
    api_version: str | None = None
    format: str = "json"  # "json" (PEP 691) or "html" (PEP 503)
    index_url: str = ""  # the index it came from (credentials removed)
    # What the parser left out (an unusable optional field, a file whose name does not
    # parse), each with its reason: the page itself stays readable (bounded, see simple).
    ignored: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Validators:
    """What the store remembers of the last page, for a conditional request."""

    etag: str | None = None
    last_modified: str | None = None
    last_serial: int | None = None


@dataclass(frozen=True, slots=True)
class Fetched:
    """A page that was fetched and parsed."""

    page: ProjectPage
    requests: int = 1  # attempts made (retries included)
    fresh_for: float = 0.0  # seconds the answer stays fresh (Cache-Control); 0: ask again


@dataclass(frozen=True, slots=True)
class NotModified:
    """The stored page still holds: the index answered 304, or was not asked at all
    (``requests`` 0) because its last answer is still fresh."""

    name: str
    requests: int = 1
    fresh_for: float = 0.0  # as in Fetched: a 304 renews the stored answer's freshness


@dataclass(frozen=True, slots=True)
class FetchFailed:
    """A project that could not be fetched this time, and why (no credentials in it)."""

    name: str
    reason: str  # "HTTP 500 after 3 attempts", "body over 20 MB", "stale page (serial 9 < 12)"
    status: int | None = None
    retryable: bool = True
    requests: int = 1


FetchResult = Fetched | NotModified | FetchFailed


@dataclass(frozen=True, slots=True)
class Release:
    """The files of one version, and what holds for the version as a whole."""

    version: Version
    files: tuple[DistributionFile, ...]

    @property
    def yanked(self) -> bool:
        """PEP 592: a release is yanked when all of its files are."""
        return bool(self.files) and all(f.yanked for f in self.files)

    @property
    def yanked_reason(self) -> str | None:
        """The first reason given by a yanked file."""
        return next((f.yanked_reason for f in self.files if f.yanked and f.yanked_reason), None)

    @property
    def upload_time(self) -> datetime | None:
        """When the first file of the release was uploaded (the release's age)."""
        times = [f.upload_time for f in self.files if f.upload_time is not None]
        return min(times) if times else None


def releases(files: Iterable[DistributionFile]) -> list[Release]:
    """Files grouped by version, oldest version first (files without a version are left out)."""
    by_version: dict[Version, list[DistributionFile]] = defaultdict(list)
    for file in files:
        if file.version is not None:
            by_version[file.version].append(file)
    return [Release(version, tuple(by_version[version])) for version in sorted(by_version)]
