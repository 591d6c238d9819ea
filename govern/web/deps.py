"""The dependencies the dashboard's routes declare: the app's state, a store session, and
the write token (``SessionDep``, ``WriterDep``), instead of helpers each route calls."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Request
from sqlmodel import Session

from govern.web.state import AppState

logger = logging.getLogger(__name__)


def get_state(request: Request) -> AppState:
    """The app's shared state (:func:`govern.web.app.create_app` puts it there)."""
    state: AppState = request.app.state.govern
    return state


StateDep = Annotated[AppState, Depends(get_state)]


def get_session(state: StateDep) -> Iterator[Session]:
    """One store session for the request: committed at its end, rolled back on an error."""
    with state.store.session() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


def peer(request: Request) -> str:
    """The client's address, as the throttle and the logs name it."""
    return request.client.host if request.client else "unknown"


def write_auth(
    request: Request,
    state: StateDep,
    authorization: Annotated[str | None, Header()] = None,
) -> AppState:
    """The state, once the request carries the write token; else 403, 429 or 401.

    A client whose last tokens were wrong too often is refused before its token is looked
    at (429 with ``Retry-After``); a request without any Authorization is not a guess.
    """
    if not state.secrets.writable:
        raise HTTPException(403, "write actions are disabled: no token is configured")
    client = peer(request)
    wait = state.throttle.retry_after(client)
    if wait is not None:
        logger.warning("API bearer token from %s throttled for %d s", client, wait)
        raise HTTPException(
            429,
            f"too many wrong tokens from this address: try again in {wait} s",
            headers={"Retry-After": str(wait)},
        )
    if not state.secrets.bearer_ok(authorization):
        if authorization:
            failures = state.throttle.failed(client)
            logger.warning(
                "API bearer token refused from %s (%d failed in %g s)",
                client,
                failures,
                state.throttle.window,
            )
        raise HTTPException(
            401,
            "a write needs Authorization: Bearer <token>",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return state


WriterDep = Annotated[AppState, Depends(write_auth)]
