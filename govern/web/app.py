"""``govern serve``: the dashboard application (FastAPI, Jinja2 rendered on the server).

Notes: docs/internals.md#web.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import date
from importlib import resources
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, Form, Query, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from sqlalchemy import text

from govern import __version__
from govern.exclusions.model import Kind
from govern.exclusions.states import State
from govern.forge.webhooks import ChangeEnded, merge_request_ended, pull_request_ended
from govern.store import history, queries
from govern.store.debt import debt as debt_series
from govern.store.location import SCHEMA_REVISION
from govern.store.outbox import troubled
from govern.store.pending import attention, relaxable
from govern.web import actions, api
from govern.web.charts import DebtPoint, age_histogram, debt_over_time
from govern.web.deps import SessionDep, StateDep, get_state, peer
from govern.web.limits import BodyLimit, LoneSurrogate, NotJson, RefuseNul, json_value
from govern.web.metrics import render
from govern.web.security import (
    CSRF_COOKIE,
    HEADERS,
    SESSION_COOKIE,
    SESSION_SECONDS,
    SecurityHeaders,
)
from govern.web.state import AppState
from govern.web.templating import environment

logger = logging.getLogger(__name__)

_STATIC = {"app.css": "text/css; charset=utf-8"}
STATES = tuple(State)  # in the order the list's filter shows them
KINDS = tuple(Kind)


def create_app(state: AppState) -> FastAPI:
    """The ASGI application over a store (and its secrets and CI providers)."""
    app = FastAPI(
        title="govern",
        version=__version__,
        summary="Pending relaxations of dependency exclusions, their evidence and history.",
        openapi_url="/api/v1/openapi.json",
        docs_url=None,  # the interactive docs load scripts from a CDN: not here
        redoc_url=None,
    )
    app.state.govern = state
    app.add_exception_handler(_Refused, _refusal)
    # Starlette answers an unexpected error outside every middleware: this handler gives
    # that 500 the security headers too.
    app.add_exception_handler(Exception, _crashed)
    app.include_router(api.router)
    _pages(app)
    _hooks(app)
    _operations(app)
    app.add_middleware(BodyLimit, limit=state.max_body)
    app.add_middleware(RefuseNul)
    app.add_middleware(SecurityHeaders)  # outermost: a 413 carries the headers too
    return app


def _render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    state = get_state(request)
    nonce = request.cookies.get(CSRF_COOKIE) or state.secrets.new_nonce()
    page = (
        environment()
        .get_template(template)
        .render(
            request_path=request.url.path,
            csrf=state.secrets.csrf_token(nonce),
            signed_in=state.secrets.session_ok(request.cookies.get(SESSION_COOKIE)),
            writable=state.secrets.writable,
            version=__version__,
            **context,
        )
    )
    response = HTMLResponse(page, status_code=status)
    if CSRF_COOKIE not in request.cookies:
        response.set_cookie(CSRF_COOKIE, nonce, httponly=True, samesite="strict", path="/")
    return response


def _pages(app: FastAPI) -> None:
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def front(request: Request, state: StateDep, session: SessionDep) -> HTMLResponse:
        now = state.clock()
        return _render(
            request,
            "index.html",
            pending=relaxable(session, now=now),
            attention=attention(session, now=now),
            deliveries=troubled(session),
            now=now,
        )

    @app.get("/exclusions", response_class=HTMLResponse, include_in_schema=False)
    def listing(
        request: Request,
        app_state: StateDep,
        session: SessionDep,
        repository: str | None = None,
        package: str | None = None,
        kind: str | None = None,
        state: str | None = None,
        owner: str | None = None,
        q: str | None = None,
        page: Annotated[int, Query(ge=1, le=100_000)] = 1,
        per_page: Annotated[int, Query(ge=1, le=queries.MAX_PER_PAGE)] = queries.PER_PAGE,
    ) -> HTMLResponse:
        filters = queries.Filters(
            repository=_field(repository),
            package=_field(package),
            kind=kind if kind in KINDS else None,
            state=state if state in STATES else None,
            owner=_field(owner),
            q=_field(q),
        )
        found = queries.browse(
            session, filters=filters, now=app_state.clock(), page=page, per_page=per_page
        )
        return _render(
            request,
            "exclusions.html",
            found=found,
            filters=filters,
            query=filters.as_query(),
            kinds=KINDS,
            states=STATES,
        )

    @app.get("/exclusions/{key}", response_class=HTMLResponse, include_in_schema=False)
    def one(
        request: Request, state: StateDep, session: SessionDep, key: str, done: str | None = None
    ) -> HTMLResponse:
        now = state.clock()
        shown = history.detail(session, key=key, now=now)
        if shown is None:
            return _render(request, "missing.html", status=404, key=key)
        return _render(
            request,
            "exclusion.html",
            x=shown.exclusion,
            events=shown.thread,
            candidates=shown.candidates,
            proposals=shown.proposals,
            done=done if done in _DONE else None,
            today=now.date(),
            proposable=actions.proposable(session, key),
            # What the repository's locks installed of the package, when (track --history).
            locks=history.lock_history(
                session, package=shown.exclusion.package, repository_name=shown.exclusion.repository
            ),
        )

    @app.get("/debt", response_class=HTMLResponse, include_in_schema=False)
    def debt(
        request: Request,
        state: StateDep,
        session: SessionDep,
        days: Annotated[int, Query(ge=7, le=1825)] = 180,
    ) -> HTMLResponse:
        series, ages = debt_series(session, now=state.clock(), days=days)
        points = [DebtPoint(d.day, d.count, d.median_age_days) for d in series]
        return _render(
            request,
            "debt.html",
            over_time=debt_over_time(points),
            histogram=age_histogram(ages),
            days=days,
            open_now=len(ages),
        )

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    def login_form(request: Request) -> HTMLResponse:
        return _render(request, "login.html")

    @app.post("/login", include_in_schema=False)
    def login(
        request: Request,
        state: FormDep,
        token: Annotated[str, Form(max_length=4096)] = "",
    ) -> Response:
        client = peer(request)
        wait = state.throttle.retry_after(client)
        if wait is not None:
            logger.warning("dashboard sign-in from %s throttled for %d s", client, wait)
            return _throttled(request, wait)
        if not state.secrets.token_ok(token):
            failures = state.throttle.failed(client)
            logger.warning(
                "dashboard sign-in refused from %s (%d failed in %g s)",
                client,
                failures,
                state.throttle.window,
            )
            return _render(request, "login.html", status=403, error="That is not the token.")
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            state.secrets.new_session(),
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return response

    @app.post("/logout", include_in_schema=False)
    def logout(request: Request, state: FormDep) -> Response:
        state.secrets.revoke(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    @app.post("/exclusions/{key}/{action}", include_in_schema=False)
    async def write(
        request: Request,
        state: FormWriterDep,
        key: str,
        action: str,
        until: Annotated[str, Form(max_length=32)] = "",
        owner: Annotated[str, Form(max_length=1024)] = "",
        version: Annotated[str, Form(max_length=128)] = "",
        reason: Annotated[str, Form(max_length=2000)] = "",
    ) -> Response:
        try:
            if action == "snooze":
                try:
                    when = date.fromisoformat(until)
                except ValueError:
                    return _refused(request, "give the date as YYYY-MM-DD", status=400)
                actions.snooze(state, key, when)
            elif action == "owner":
                actions.set_owner(state, key, owner)
            elif action == "acknowledge":
                actions.acknowledge(state, key)
            elif action == "propose":
                actions.propose_now(state, key)
            elif action == "forget":
                actions.forget(state, key, version, reason)
            else:
                actions.verify_now(state, key)
        except actions.ActionError as exc:
            return _refused(request, exc.message, status=exc.status)
        return RedirectResponse(f"/exclusions/{_quote(key)}?done={action}", status_code=303)

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in _STATIC:
            return PlainTextResponse("not found", status_code=404)
        data = resources.files("govern.web").joinpath("static", name).read_bytes()
        return Response(
            data, media_type=_STATIC[name], headers={"Cache-Control": "public, max-age=3600"}
        )


_DONE = ("snooze", "owner", "acknowledge", "verify", "propose", "forget")  # every form's action


class _Refused(Exception):
    """A form refused before its route runs; answered with the refusal page."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


async def _refusal(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, _Refused)
    return _refused(request, exc.message, status=exc.status)


async def _crashed(request: Request, exc: Exception) -> Response:
    """An unexpected error: a plain 500 with the security headers (and no detail of it)."""
    return PlainTextResponse("Internal Server Error", status_code=500, headers=HEADERS)


def _form(
    request: Request, state: StateDep, csrf: Annotated[str, Form(max_length=256)] = ""
) -> AppState:
    """The state, once the form carries this browser's CSRF token (else 403)."""
    if not state.secrets.csrf_ok(request.cookies.get(CSRF_COOKIE), csrf):
        raise _Refused("the form expired or came from another site; reload it")
    return state


def _form_writer(
    request: Request, action: str, state: StateDep, csrf: Annotated[str, Form(max_length=256)] = ""
) -> AppState:
    """The state, for a known action from a signed-in form (else 404, 403 or 401)."""
    if action not in _DONE:
        raise _Refused(f"no such action: {action}", 404)
    _form(request, state, csrf)
    if not state.secrets.session_ok(request.cookies.get(SESSION_COOKIE)):
        logger.warning("dashboard write %s refused (no session) from %s", action, peer(request))
        raise _Refused("sign in with the write token first", 401)
    return state


FormDep = Annotated[AppState, Depends(_form)]
FormWriterDep = Annotated[AppState, Depends(_form_writer)]


def _field(value: str | None) -> str | None:
    """A filter from a query string: trimmed, bounded, None when empty."""
    return (value.strip()[:256] or None) if value else None


def _quote(key: str) -> str:
    return quote(key, safe="")


def _refused(request: Request, message: str, *, status: int = 403) -> HTMLResponse:
    return _render(request, "refused.html", status=status, message=message)


def _throttled(request: Request, wait: int) -> HTMLResponse:
    message = f"too many failed sign-ins from this address: try again in {wait} s"
    response = _refused(request, message, status=429)
    response.headers["Retry-After"] = str(wait)
    return response


# -- webhooks -------------------------------------------------------------------------------


def _change_ended(state: AppState, ended: ChangeEnded | None) -> int:
    """Record the proposal whose change request a webhook says merged or closed: found by
    branch and number, and kept only when the event's repository is the proposal's."""
    from govern.service.propose import record_closed
    from govern.store.proposals import by_change

    if ended is None:
        return 0
    with state.store.session() as session:
        rows = by_change(session, branch=ended.branch, number=ended.number)
        ids = [
            row.id for row in rows if row.id is not None and ended.names(via=row.via, url=row.url)
        ]
    for proposal_id in ids:
        record_closed(state.store, proposal_id=proposal_id, state=ended.state, now=state.clock())
    return len(ids)


def _hooks(app: FastAPI) -> None:
    @app.post("/webhooks/github", include_in_schema=False)
    async def github(request: Request, state: StateDep) -> Response:
        """GitHub: ``workflow_run`` / ``check_suite`` events, signed with the shared secret."""
        body = await request.body()
        signature = request.headers.get("X-Hub-Signature-256")
        if not state.secrets.github_signature_ok(body, signature):
            why = "unsigned" if not signature else "wrongly signed"
            return _hook_refused(request, state, "GitHub", why)
        event = request.headers.get("X-GitHub-Event", "")
        try:
            payload = _json(body)
        except NotJson as exc:
            return _bad_json(request, "GitHub", exc)
        if event == "ping":
            return JSONResponse({"ok": True})
        runs: list[str] = []
        if event == "workflow_run" and isinstance(payload.get("workflow_run"), Mapping):
            run = payload["workflow_run"]
            if run.get("status") == "completed" and isinstance(run.get("id"), int):
                runs.append(str(run["id"]))
        elif event == "check_suite" and isinstance(payload.get("check_suite"), Mapping):
            suite = payload["check_suite"]
            for ref in (suite.get("head_sha"), suite.get("head_branch")):
                if isinstance(ref, str) and ref:
                    runs.append(f"checks:{ref}")
        if event == "pull_request":
            closed = _change_ended(state, pull_request_ended(payload))
            return JSONResponse({"ok": True, "event": _echo(event), "closed": closed})
        updated = await _refresh(state, "github-actions", runs)
        return JSONResponse({"ok": True, "event": _echo(event), "updated": updated})

    @app.post("/webhooks/gitlab", include_in_schema=False)
    async def gitlab(request: Request, state: StateDep) -> Response:
        """GitLab: merge request events (a proposal merged or closed), with the webhook's
        secret token header."""
        body = await request.body()
        if not state.secrets.gitlab_token_ok(request.headers.get("X-Gitlab-Token")):
            return _hook_refused(request, state, "GitLab", "missing or wrong token")
        try:
            payload = _json(body)
        except NotJson as exc:
            return _bad_json(request, "GitLab", exc)
        closed = _change_ended(state, merge_request_ended(payload))
        event = _echo(payload.get("object_kind"))
        return JSONResponse({"ok": True, "event": event, "closed": closed})

    @app.post("/webhooks/buildkite", include_in_schema=False)
    async def buildkite(request: Request, state: StateDep) -> Response:
        """Buildkite: ``build.finished`` events, with the webhook's token header."""
        token = request.headers.get("X-Buildkite-Token")
        if not state.secrets.buildkite_token_ok(token):
            why = "unsigned" if not token else "wrong token"
            return _hook_refused(request, state, "Buildkite", why)
        try:
            payload = _json(await request.body())
        except NotJson as exc:
            return _bad_json(request, "Buildkite", exc)
        runs: list[str] = []
        build = payload.get("build")
        if payload.get("event") == "build.finished" and isinstance(build, Mapping):
            number = build.get("number")
            if isinstance(number, int):
                runs.append(str(number))
        updated = await _refresh(state, "buildkite", runs)
        event = _echo(payload.get("event"))
        return JSONResponse({"ok": True, "event": event, "updated": updated})


def _hook_refused(request: Request, state: AppState, source: str, why: str) -> JSONResponse:
    """A delivery without its signature or token: 401, and counted per address as a wrong
    token is; past the limit 429 with ``Retry-After``, without a log line per request.

    The signature is checked before the throttle: a forge's deliveries of many hooks share
    its addresses, so one hook with a wrong secret must not hold back the right ones.
    """
    client = peer(request)
    wait = state.throttle.retry_after(client)
    if wait is not None:
        message = f"too many refused deliveries from this address: try again in {wait} s"
        return JSONResponse({"error": message}, status_code=429, headers={"Retry-After": str(wait)})
    failures = state.throttle.failed(client)
    logger.warning(
        "%s webhook refused (%s) from %s (%d refused in %g s)",
        source,
        why,
        client,
        failures,
        state.throttle.window,
    )
    return JSONResponse({"error": f"{why} request"}, status_code=401)


def _json(body: bytes) -> dict[str, Any]:
    """The delivery's JSON object; :class:`NotJson` for anything else."""
    value = json_value(body)
    if not isinstance(value, dict):
        raise NotJson("not a JSON object")
    return value


def _bad_json(request: Request, source: str, exc: NotJson) -> JSONResponse:
    shown = str(exc) if isinstance(exc, LoneSurrogate) else "the body is not a JSON object"
    logger.warning("%s webhook refused (%s) from %s", source, shown, peer(request))
    return JSONResponse({"error": shown}, status_code=400)


def _echo(value: Any) -> str | None:
    """An event's name from a delivery, echoed in the answer only when short text."""
    return value if isinstance(value, str) and len(value) <= 64 else None


async def _refresh(state: AppState, kind: str, runs: list[str]) -> int:
    """Conclude the verifications of these runs on the providers of this kind."""
    if not runs or state.ci is None:
        return 0
    verifier = state.verifier()
    updated = 0
    for name, provider in state.ci.by_name.items():
        if provider.kind == kind:
            updated += await verifier.refresh(name, runs)
    return updated


# -- operations -----------------------------------------------------------------------------


def _operations(app: FastAPI) -> None:
    @app.get("/healthz", include_in_schema=False)
    def healthz(state: StateDep) -> Response:
        try:
            with state.store.session() as session:  # reachable, and at this govern's schema
                revision = session.execute(text("SELECT version_num FROM alembic_version")).one()[0]
        except Exception as exc:  # the answer is the health: never a traceback
            return JSONResponse({"status": "error", "error": type(exc).__name__}, status_code=503)
        if revision != SCHEMA_REVISION:
            return JSONResponse(
                {"status": "error", "error": f"schema {revision}, needs {SCHEMA_REVISION}"},
                status_code=503,
            )
        return JSONResponse({"status": "ok", "version": __version__})

    @app.get("/metrics", include_in_schema=False)
    def metrics(state: StateDep, session: SessionDep) -> Response:
        text = render(session, now=state.clock())
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")
