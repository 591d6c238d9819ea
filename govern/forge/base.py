"""What a proposal needs from where the code lives: branches, change requests, comments.

Notes: docs/internals.md#forge.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar

import httpx

from govern.errors import ForgeError, ForgeUnavailable

__all__ = [
    "ChangeRequest",
    "ChangeState",
    "Comment",
    "Forge",
    "Issue",
    "IssueRef",
    "Marker",
    "Opening",
    "Seal",
    "answer_field",
    "answer_items",
    "answer_labels",
    "answer_object",
    "answer_text",
    "closing_markers",
    "create_once",
    "may_have_applied",
    "own_marker",
    "safe_key",
    "split_reviewers",
    "with_markers",
]


class ChangeState(StrEnum):
    """A change request's state as govern records it."""

    OPEN = "open"
    CLOSED = "closed"  # closed without merging: declined
    MERGED = "merged"


@dataclass(frozen=True, slots=True)
class ChangeRequest:
    """A pull or merge request as the forge reports it."""

    number: int  # GitHub's number, GitLab's iid
    url: str  # the page a person opens
    state: ChangeState
    branch: str  # the head (source) branch
    base: str  # the base (target) branch
    title: str = ""
    body: str = ""
    draft: bool = False
    head_sha: str | None = None


@dataclass(frozen=True, slots=True)
class Opening:
    """What govern asks for when it opens (or updates) a change request."""

    branch: str
    base: str
    title: str
    body: str  # ends with govern's markers (:class:`Marker`)
    labels: tuple[str, ...] = ()
    reviewers: tuple[str, ...] = ()  # user logins
    team_reviewers: tuple[str, ...] = ()  # team slugs (``@org/team`` owners)
    assignees: tuple[str, ...] = ()
    draft: bool = False


@dataclass(frozen=True, slots=True)
class IssueRef:
    """An issue on the forge: ``owner/repo#123`` (GitHub) or ``group/project#123`` (GitLab)."""

    repository: str
    number: int

    def __str__(self) -> str:
        return f"{self.repository}#{self.number}"


@dataclass(frozen=True, slots=True)
class Comment:
    """A comment on an issue or change request."""

    id: int
    url: str
    body: str = ""


@dataclass(frozen=True, slots=True)
class Issue:
    """An issue govern keeps up to date (the repository's "Pending relaxations")."""

    number: int
    url: str
    title: str
    body: str = ""
    state: str = "open"
    labels: tuple[str, ...] = field(default_factory=tuple)


class Forge(Protocol):
    """A repository's change requests and issues on GitHub or GitLab.

    Every method raises :class:`ForgeError` (or a subclass) and nothing else; none
    retries a request that may have had an effect without first looking for the effect.
    """

    name: str  # "github", "gitlab"
    repository: str  # owner/repo or group/project

    async def default_branch(self) -> str:
        """The branch change requests target when none is configured."""
        ...

    async def find_change(self, *, branch: str, marker: Marker) -> ChangeRequest | None:
        """The change request from ``branch`` whose body ends with ``marker`` (signed, or
        unsigned from before signing), open or not (the newest when several), or None."""
        ...

    async def get_change(self, number: int) -> ChangeRequest:
        """One change request by number."""
        ...

    async def open_change(self, opening: Opening) -> ChangeRequest:
        """Open a change request (what its create request carries; the rest is
        :meth:`label_change`'s, a delivery step of its own)."""
        ...

    async def label_change(self, number: int, opening: Opening) -> None:
        """Apply the opening's labels, reviewers and assignees to a change request; each
        is added to what is there, so a second call changes nothing."""
        ...

    async def changes_on(self, branch: str) -> list[ChangeRequest]:
        """The open change requests from ``branch`` of this repository, whoever opened them."""
        ...

    async def comment_change(self, number: int, body: str) -> Comment:
        """Comment on a change request once: a comment holding the body's marker is it."""
        ...

    async def update_change(self, number: int, *, title: str, body: str) -> ChangeRequest:
        """Replace the title and body of an open change request."""
        ...

    async def close_change(self, number: int, *, comment: str) -> ChangeRequest:
        """Comment on a change request, then close it unmerged."""
        ...

    async def find_comment(self, issue: IssueRef, marker: Marker) -> Comment | None:
        """The comment on ``issue`` (or a change request) ending with ``marker``, or None."""
        ...

    async def comment(self, issue: IssueRef, body: str) -> Comment:
        """Add a comment to an issue (or a change request)."""
        ...

    async def find_issue(self, marker: Marker) -> Issue | None:
        """The issue of this repository whose body ends with ``marker`` (open or closed)."""
        ...

    async def open_issue(self, *, title: str, body: str, labels: Sequence[str] = ()) -> Issue:
        """Open an issue."""
        ...

    async def update_issue(self, number: int, *, title: str, body: str) -> Issue:
        """Replace an issue's title and body (and reopen it if it was closed)."""
        ...


_KIND = r"[a-z-]+"
_KEY = r"[A-Za-z0-9._:/@+-]+"
SIGNATURE_LENGTH = 32  # hex digits of the HMAC-SHA256 kept: 128 bits
_SIGNED = re.compile(rf"<!-- govern:({_KIND})=({_KEY}) sig=([0-9a-f]{{{SIGNATURE_LENGTH}}}) -->")
_UNSIGNED = re.compile(rf"<!-- govern:({_KIND})=({_KEY}) -->")


@dataclass(frozen=True, slots=True)
class Marker:
    """The hidden line that names what a body is for, signed:
    ``<!-- govern:proposal=KEY sig=HEX -->`` (made by :meth:`Seal.marker`)."""

    kind: str
    key: str
    signature: str

    def __str__(self) -> str:
        return f"<!-- govern:{self.kind}={self.key} sig={self.signature} -->"

    @property
    def unsigned(self) -> str:
        """The form written before markers were signed: ``<!-- govern:KIND=KEY -->``."""
        return f"<!-- govern:{self.kind}={self.key} -->"

    def ends(self, body: str | None, *, unsigned: bool = False) -> bool:
        """Whether ``body`` ends with this marker among its closing lines
        (:func:`closing_markers`); with ``unsigned``, its unsigned form counts too (a change
        request opened before markers were signed)."""
        lines = closing_markers(body)
        return str(self) in lines or (unsigned and self.unsigned in lines)


@dataclass(frozen=True, slots=True)
class Seal:
    """The store's secret that signs markers; it is never shown (not even by ``repr``)."""

    secret: bytes = field(repr=False)

    def marker(self, kind: str, key: str) -> Marker:
        """The marker of ``kind`` and ``key``, signed: nobody without the secret can write it."""
        if not re.fullmatch(_KIND, kind) or not re.fullmatch(_KEY, key):
            raise ValueError(f"a marker takes a plain kind and key, not {kind!r}={key!r}")
        mac = hmac.new(self.secret, f"{kind}\0{key}".encode(), hashlib.sha256)
        return Marker(kind, key, mac.hexdigest()[:SIGNATURE_LENGTH])


_UNSAFE = re.compile(r"[^A-Za-z0-9._:/@+-]")


def safe_key(text: str) -> str:
    """``text`` with every character a marker or a header cannot carry replaced by ``-``."""
    return _UNSAFE.sub("-", text)


def closing_markers(body: str | None) -> tuple[str, ...]:
    """The marker lines that end ``body`` (trailing blank lines aside), last first: the one
    place govern's markers count. A marker anywhere else (quoted text, a person's line
    after it) is not govern's."""
    found: list[str] = []
    for line in reversed((body or "").rstrip().splitlines()):
        text = line.strip()
        if not (_SIGNED.fullmatch(text) or _UNSIGNED.fullmatch(text)):
            break
        found.append(text)
    return tuple(found)


def with_markers(text: str, *markers: Marker) -> str:
    """``text`` ended by ``markers``, one a line, in the one place they count."""
    return f"{text.rstrip()}\n\n" + "".join(f"{marker}\n" for marker in markers)


def own_marker(body: str) -> Marker | None:
    """The first signed marker of the lines that end ``body``, as govern wrote it there
    (what a create whose answer was lost is looked for by)."""
    for line in reversed(closing_markers(body)):
        if found := _SIGNED.fullmatch(line):
            return Marker(found.group(1), found.group(2), found.group(3))
    return None


def may_have_applied(error: ForgeError) -> bool:
    """Whether a create may have been applied though its answer did not say so (the
    connection broke, or a 5xx came back): look for it by its marker before sending again."""
    return isinstance(error, ForgeUnavailable) and (error.status is None or error.status >= 500)


_T = TypeVar("_T")


async def create_once(
    send: Awaitable[Any],
    read: Callable[[Any], _T],
    find: Callable[[Marker], Awaitable[_T | None]],
    body: str,
) -> _T:
    """``read`` of the answer to a create sent once; when that answer may have been lost
    (:func:`may_have_applied`), what ``find`` finds by the marker of ``body`` is it."""
    try:
        return read(await send)
    except ForgeError as error:
        mark = own_marker(body)
        found = await find(mark) if mark and may_have_applied(error) else None
        if found is None:
            raise
        return found


def answer_field(forge: str, document: Any, key: str, kind: type) -> Any:
    """``document[key]`` of a forge's JSON answer, of type ``kind``; anything else is an
    answer that cannot be read (:class:`ForgeUnavailable`, tried again), never a guess."""
    value = document.get(key) if isinstance(document, dict) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ForgeUnavailable(f"{forge}: unexpected answer: {key} is not a {kind.__name__}")
    return value


def answer_object(forge: str, document: Any, what: str) -> dict[str, Any]:
    """A forge answer that must be a JSON object: an empty body (None), a list or a scalar
    is an answer that cannot be read (:class:`ForgeUnavailable`), never an AttributeError."""
    if not isinstance(document, dict):
        got = "an empty body" if document is None else f"a {type(document).__name__}"
        raise ForgeUnavailable(f"{forge}: unexpected answer: {what} expected, got {got}")
    return document


def answer_items(forge: str, response: httpx.Response) -> list[dict[str, Any]]:
    """The objects of one page of a forge's listing; a page that is not a JSON list is an
    answer that cannot be read (:class:`ForgeUnavailable`)."""
    try:
        items = response.json()
    except (ValueError, UnicodeDecodeError):
        raise ForgeUnavailable(f"{forge}: a listing answered with invalid JSON") from None
    if not isinstance(items, list):
        raise ForgeUnavailable(f"{forge}: unexpected answer: a listing is not a list")
    return [item for item in items if isinstance(item, dict)]


def answer_labels(document: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of an answer's labels (names, or objects with a ``name``)."""
    labels = document.get("labels")
    names = (
        label.get("name") if isinstance(label, dict) else label
        for label in (labels if isinstance(labels, list) else [])
    )
    return tuple(name for name in names if isinstance(name, str))


def answer_text(document: Mapping[str, Any], key: str) -> str:
    """A text field of a forge's answer ("" when it is missing or not text)."""
    value = document.get(key)
    return value if isinstance(value, str) else ""


def split_reviewers(reviewers: Sequence[str]) -> tuple[list[str], list[str]]:
    """CODEOWNERS-style owners split into user logins and team slugs: ``@org/team`` is
    the team ``team``, ``@user`` or ``user`` the user."""
    users: list[str] = []
    teams: list[str] = []
    for owner in reviewers:
        name = owner.removeprefix("@")
        if "/" in name:
            teams.append(name.split("/", 1)[1])
        elif name:
            users.append(name)
    return users, teams
