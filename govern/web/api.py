"""The JSON API under ``/api/v1``: read-only by default; writes need the bearer token.

The OpenAPI description is at ``/api/v1/openapi.json``. Response bodies are described by
the models below, so a client (and schemathesis) can check every answer against them.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from govern.exclusions.model import Kind
from govern.exclusions.states import State
from govern.web import actions, views
from govern.web.deps import SessionDep, StateDep, WriterDep

router = APIRouter(
    prefix="/api/v1",
    tags=["api"],
    responses={
        400: {"description": "A NUL byte in the path or the query"},
        413: {"description": "A request body over the limit"},
    },
)

# No text govern stores holds a NUL byte; one in a path or a query is a 400 (limits.py).
NO_NUL = r"^[^\x00]*$"
Key = Annotated[str, Path(pattern=NO_NUL)]


class ExclusionOut(BaseModel):
    """An exclusion with its state and current annotation."""

    id: str
    repository: str
    source: str
    line: int
    package: str
    clause: str
    requirement: str
    marker: str | None
    kind: str
    sub_kind: str
    state: str
    first_seen: str
    removed: str | None
    age_days: int
    reason: str | None
    links: list[str]
    owner: str | None
    review_by: str | None
    commit: str | None
    pull_request: int | None


class EvidenceOut(BaseModel):
    """The latest verification of a candidate."""

    conclusion: str | None
    provider: str
    profile: str
    installed: str | None
    run_url: str | None
    finished: str | None
    detail: str | None


class ChangeOut(BaseModel):
    """The line before and after the narrow relaxation (``after`` null: none computed)."""

    before: str
    after: str | None
    note: str


class PendingOut(BaseModel):
    """An exclusion that could be relaxed, with its candidate and evidence."""

    exclusion: ExclusionOut
    candidate: str
    profiles: list[str]
    verified: bool
    evidence: EvidenceOut | None
    change: ChangeOut
    proposal_url: str | None


class PendingPage(BaseModel):
    """The pending relaxations (the front page), verified first."""

    items: list[PendingOut]
    total: int


class ExclusionPage(BaseModel):
    """One page of exclusions."""

    items: list[ExclusionOut]
    total: int
    page: int
    per_page: int
    pages: int


class CandidateOut(BaseModel):
    """A release considered for the exclusion on a profile, with its verifications."""

    version: str
    profile: str
    role: str
    eligible: bool
    reason: str | None
    status: str
    found: str
    verifications: list[dict[str, Any]]


class ExclusionDetail(BaseModel):
    """One exclusion: itself, its thread, candidates and proposals."""

    exclusion: ExclusionOut
    thread: list[dict[str, Any]]
    candidates: list[CandidateOut]
    proposals: list[dict[str, Any]]


class DebtDayOut(BaseModel):
    """Open exclusions on a day."""

    day: date
    count: int
    median_age_days: float | None


class DebtOut(BaseModel):
    """Held-back debt over time, and the ages of the exclusions open now."""

    series: list[DebtDayOut]
    ages_days: list[float]


class SnoozeIn(BaseModel):
    """Hide from the pending view until a date (in the future, at most five years ahead)."""

    model_config = ConfigDict(extra="forbid")

    until: date


class OwnerIn(BaseModel):
    """Assign an owner (empty: the annotation's again)."""

    model_config = ConfigDict(extra="forbid")

    owner: str = Field(max_length=256, pattern=actions.OWNER_PATTERN)


class ActionOut(BaseModel):
    """What a write did."""

    id: str
    action: str
    value: str | None


def _action(call: Any) -> Any:
    try:
        return call()
    except actions.ActionError as exc:
        raise HTTPException(exc.status, exc.message) from None


@router.get("/pending", response_model=PendingPage)
def pending(
    app: StateDep, session: SessionDep, limit: Annotated[int, Query(ge=1, le=200)] = 50
) -> dict[str, Any]:
    """Exclusions with a candidate or a verified release, and the change that would be made."""
    page = views.pending(session, now=app.clock(), limit=limit)
    return {"items": [item.as_dict() for item in page.items], "total": page.total}


@router.get("/exclusions", response_model=ExclusionPage)
def exclusions(
    app: StateDep,
    session: SessionDep,
    repository: Annotated[str | None, Query(max_length=256, pattern=NO_NUL)] = None,
    package: Annotated[str | None, Query(max_length=256, pattern=NO_NUL)] = None,
    kind: Kind | None = None,
    state: State | None = None,
    owner: Annotated[str | None, Query(max_length=256, pattern=NO_NUL)] = None,
    q: Annotated[str | None, Query(max_length=256, pattern=NO_NUL)] = None,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
    per_page: Annotated[int, Query(ge=1, le=views.MAX_PER_PAGE)] = views.PER_PAGE,
) -> dict[str, Any]:
    """All exclusions, filtered, searched (package, line, file, reason) and paginated."""
    filters = views.Filters(repository, package, kind, state, owner, q)
    found = views.browse(session, filters, now=app.clock(), page=page, per_page=per_page)
    return {
        "items": [item.as_dict() for item in found.items],
        "total": found.total,
        "page": found.page,
        "per_page": found.per_page,
        "pages": found.pages,
    }


@router.get(
    "/exclusions/{key}",
    response_model=ExclusionDetail,
    responses={404: {"description": "No exclusion with this id"}},
)
def exclusion(app: StateDep, session: SessionDep, key: Key) -> dict[str, Any]:
    """One exclusion: its governance thread, candidates with verifications, proposals."""
    shown = views.detail(session, key, now=app.clock())
    if shown is None:
        raise HTTPException(404, f"no exclusion with id {key!r}")
    return {
        "exclusion": shown.exclusion.as_dict(),
        "thread": [e.as_dict() for e in shown.events],
        "candidates": [c.as_dict() for c in shown.candidates],
        "proposals": shown.proposals,
    }


@router.get("/debt", response_model=DebtOut)
def debt(
    app: StateDep, session: SessionDep, days: Annotated[int, Query(ge=1, le=1825)] = 180
) -> dict[str, Any]:
    """Open exclusions and their median age per day; the ages of those open now."""
    series, ages = views.debt(session, now=app.clock(), days=days)
    return {
        "series": [
            {"day": d.day, "count": d.count, "median_age_days": d.median_age_days} for d in series
        ],
        "ages_days": [round(a, 1) for a in ages],
    }


_WRITE: dict[int | str, dict[str, Any]] = {
    401: {"description": "No or a wrong token"},
    403: {"description": "Writes disabled"},
    429: {"description": "Too many wrong tokens from this address (see Retry-After)"},
}
_WRITE_404: dict[int | str, dict[str, Any]] = {
    **_WRITE,
    400: {"description": "The action cannot be done (e.g. a snooze date in the past)"},
    404: {"description": "No exclusion with this id"},
}


@router.post("/exclusions/{key}/snooze", response_model=ActionOut, responses=_WRITE_404)
def snooze(state: WriterDep, key: Key, body: SnoozeIn) -> dict[str, Any]:
    """Hide an exclusion from the pending view until a date (needs the token)."""
    until = _action(lambda: actions.snooze(state, key, body.until))
    return {"id": key, "action": "snooze", "value": until.isoformat()}


@router.post("/exclusions/{key}/owner", response_model=ActionOut, responses=_WRITE_404)
def owner(state: WriterDep, key: Key, body: OwnerIn) -> dict[str, Any]:
    """Assign an owner (needs the token)."""
    value = _action(lambda: actions.set_owner(state, key, body.owner))
    return {"id": key, "action": "owner", "value": value}


@router.post("/exclusions/{key}/acknowledge", response_model=ActionOut, responses=_WRITE_404)
def acknowledge(state: WriterDep, key: Key) -> dict[str, Any]:
    """Record that a person has seen the exclusion (needs the token)."""
    when = _action(lambda: actions.acknowledge(state, key))
    return {"id": key, "action": "acknowledge", "value": when.isoformat()}


@router.post(
    "/exclusions/{key}/verify",
    response_model=ActionOut,
    status_code=202,
    responses={**_WRITE_404, 409: {"description": "No CI provider configured"}},
)
async def verify(state: WriterDep, key: Key) -> dict[str, Any]:
    """Start verification of the exclusion's candidates now (needs the token)."""
    started = _action(lambda: actions.verify_now(state, key))
    return {"id": key, "action": "verify", "value": started}
