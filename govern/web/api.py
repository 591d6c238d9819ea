"""The JSON API under ``/api/v1``: read-only by default; writes need the bearer token.

The OpenAPI description is at ``/api/v1/openapi.json``. Response bodies are the store's
public views (:mod:`govern.store.views`), in their JSON form (``as_json``), so a client (and
schemathesis) can check every answer against them.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from govern.exclusions.model import Kind
from govern.exclusions.states import State
from govern.store import history, queries
from govern.store.debt import debt as debt_series
from govern.store.pending import relaxable
from govern.store.views import DebtPublic, ExclusionDetail, ExclusionPage, PendingPage, as_json
from govern.web import actions
from govern.web.deps import SessionDep, StateDep, WriterDep
from govern.web.limits import StrictJsonRoute

router = APIRouter(
    prefix="/api/v1",
    tags=["api"],
    route_class=StrictJsonRoute,  # a lone surrogate in a body is a 400, never a 500
    responses={
        400: {"description": "A NUL byte in the path or the query, or a body that is not text"},
        413: {"description": "A request body over the limit"},
    },
)

# No text govern stores holds a NUL byte; one in a path or a query is a 400 (limits.py).
NO_NUL = r"^[^\x00]*$"
Key = Annotated[str, Path(pattern=NO_NUL)]


class SnoozeIn(BaseModel):
    """Hide from the pending view until a date (in the future, at most five years ahead)."""

    model_config = ConfigDict(extra="forbid")

    until: date


class ForgetIn(BaseModel):
    """Take back a recorded verdict: the version, and why (kept in the thread)."""

    model_config = ConfigDict(extra="forbid")

    version: str = Field(max_length=128)
    reason: str = Field(min_length=1, max_length=2000)


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


def _answer(view: object) -> JSONResponse:
    """A read answer in the contracts' JSON form (views.as_json); ``response_model`` on each
    route describes it in the OpenAPI document."""
    return JSONResponse(as_json(view))


@router.get("/pending", response_model=PendingPage)
def pending(
    app: StateDep, session: SessionDep, limit: Annotated[int, Query(ge=1, le=200)] = 50
) -> Any:
    """Exclusions with a candidate or a verified release, and the change that would be made."""
    return _answer(relaxable(session, now=app.clock(), limit=limit))


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
    per_page: Annotated[int, Query(ge=1, le=queries.MAX_PER_PAGE)] = queries.PER_PAGE,
) -> Any:
    """All exclusions, filtered, searched (package, line, file, reason) and paginated."""
    filters = queries.Filters(repository, package, kind, state, owner, q)
    return _answer(
        queries.browse(session, filters=filters, now=app.clock(), page=page, per_page=per_page)
    )


@router.get(
    "/exclusions/{key}",
    response_model=ExclusionDetail,
    responses={404: {"description": "No exclusion with this id"}},
)
def exclusion(app: StateDep, session: SessionDep, key: Key) -> Any:
    """One exclusion: its governance thread, candidates with verifications, proposals."""
    shown = history.detail(session, key=key, now=app.clock())
    if shown is None:
        raise HTTPException(404, f"no exclusion with id {key!r}")
    return _answer(shown)


@router.get("/debt", response_model=DebtPublic)
def debt(
    app: StateDep, session: SessionDep, days: Annotated[int, Query(ge=1, le=1825)] = 180
) -> Any:
    """Open exclusions and their median age per day; the ages of those open now."""
    series, ages = debt_series(session, now=app.clock(), days=days)
    return _answer(DebtPublic(series=series, ages_days=[round(a, 1) for a in ages]))


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


@router.post("/exclusions/{key}/forget", response_model=ActionOut, responses=_WRITE_404)
def forget(state: WriterDep, key: Key, body: ForgetIn) -> dict[str, Any]:
    """Take back the verdict on a version: a candidate again (needs the token)."""
    version = _action(lambda: actions.forget(state, key, body.version, body.reason))
    return {"id": key, "action": "forget", "value": version}


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


@router.post(
    "/exclusions/{key}/propose",
    response_model=ActionOut,
    status_code=202,
    responses={**_WRITE_404, 409: {"description": "The exclusion is not verified"}},
)
async def propose(state: WriterDep, key: Key) -> dict[str, Any]:
    """Propose the exclusion's verified relaxation now, exactly once (needs the token)."""
    started = _action(lambda: actions.propose_now(state, key))
    return {"id": key, "action": "propose", "value": started}
