"""The dashboard in a real browser: ``govern serve`` in a subprocess, Debian's chromium.

One server (over a seeded SQLite store) and one browser per module (per xdist worker); a
fresh browser context per test, so cookies never leak between tests. Playwright drives
``/usr/bin/chromium``: no browser is ever downloaded, and the module is skipped where that
binary is missing (``.ci/run`` installs it).

A full-page screenshot of every page visited is kept in ``$GOVERN_TEST_ARTIFACTS`` (else
``artifacts/screenshots/`` at the top of the checkout).

The pages declare an empty icon (``data:,``), so Chromium asks for no ``/favicon.ico``: a
404 for it would be a console error like any other.

In-process tests of the same pages (Starlette's TestClient) are in ``test_app.py``.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Dialog,
    Page,
    Response,
    Route,
    sync_playwright,
)
from webseed import HOSTILE, RUN_URL, seed

from govern.store.db import Store

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        "the browser tests drive Debian's chromium at /usr/bin/chromium, which is not "
        "installed here (apt-get install chromium; .ci/run does it)",
        allow_module_level=True,
    )

TOKEN = "govern-browser-TOKEN-0123456789"
GENERATED = 200
REPO = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 30.0
# The stylesheet's colours (govern/web/static/app.css): proof that it loaded under the CSP.
SOFT = "rgb(244, 246, 248)"  # --soft, the header's background
OK = "rgb(26, 127, 55)"  # --ok, a passed verification


def _artifacts() -> Path:
    configured = os.environ.get("GOVERN_TEST_ARTIFACTS")
    folder = Path(configured) if configured else REPO / "artifacts" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _shot(page: Page, name: str) -> Path:
    """A full-page screenshot of what the browser shows now, kept as a test artifact."""
    path = _artifacts() / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# -- the server -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Served:
    """A running ``govern serve`` and what the seed put in its store."""

    url: str
    cupy: str  # the CuPy exclusion's id

    def api(self, path: str, **params: Any) -> Any:
        """A JSON answer of the server's API (outside the browser)."""
        answer = httpx.get(f"{self.url}{path}", params=params, timeout=10.0)
        answer.raise_for_status()
        return answer.json()

    def thread(self, key: str) -> list[str]:
        """The kinds of the events in an exclusion's thread."""
        return [event["kind"] for event in self.api(f"/api/v1/exclusions/{key}")["thread"]]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> bool:
    """Wait for /healthz; False when the port was taken (try another), fail on anything else."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = log.read_text(encoding="utf-8", errors="replace")
            if "address already in use" in output.lower():
                return False
            pytest.fail(f"govern serve exited with {process.returncode}:\n{output}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2.0).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    output = log.read_text(encoding="utf-8", errors="replace")
    pytest.fail(f"govern serve did not answer /healthz within {STARTUP_SECONDS:.0f} s:\n{output}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``govern serve`` on a free port of 127.0.0.1 over a seeded SQLite store."""
    root = tmp_path_factory.mktemp("browser")
    database = f"sqlite:///{root / 'govern.db'}"
    with Store(database) as store:
        cupy = seed(store, root / "seed", generated=GENERATED)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("GOVERN_", "PYTEST_", "COV_"))
    }
    env.update(
        GOVERN_WEB_TOKEN=TOKEN,
        PYTHONDONTWRITEBYTECODE="1",
        XDG_DATA_HOME=str(root / "data-home"),
        NO_COLOR="1",
    )
    for attempt in range(3):
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        log = root / f"serve-{attempt}.log"
        command = [sys.executable, "-m", "govern", "serve", "--host", "127.0.0.1"]
        with log.open("wb") as output:
            process = subprocess.Popen(
                [*command, "--port", str(port), "--db", database],
                cwd=root,  # no .govern.toml or pyproject.toml of the checkout applies
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            if _healthy(process, url, log):
                yield Served(url=url, cupy=cupy)
                return
        finally:
            _stop(process)
    pytest.fail("govern serve found no free port in three attempts")


# -- the browser ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's headless chromium (never a downloaded one)."""
    args = [
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-gpu",
        "--disable-dev-shm-usage",
    ]
    if os.geteuid() == 0:
        args.insert(0, "--no-sandbox")  # chromium refuses to sandbox itself as root
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=args
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Tab:
    """A page in a fresh browser context, and what it reported while the test ran."""

    page: Page
    context: BrowserContext
    base: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # subresources that did not load

    def open(self, path: str, status: int = 200) -> Response:
        """Go to a page of the dashboard and check its status."""
        response = self.page.goto(path)
        assert response is not None
        assert response.status == status, f"{path}: {response.status}"
        return response

    def submit(self, click: str, status: int = 200) -> Response:
        """Click a submit button and wait for the page the form leads to."""
        with self.page.expect_navigation() as navigation:
            self.page.click(click)
        response = navigation.value
        assert response is not None
        assert response.status == status, f"{response.url}: {response.status}"
        return response

    def errors(self, *, statuses: tuple[int, ...] = ()) -> list[str]:
        """The console errors, but for Chromium's notes on pages answered with ``statuses``."""
        expected = tuple(f"status of {status} " for status in statuses)
        return [
            error for error in self.console_errors if not any(note in error for note in expected)
        ]

    def problems(self, *, statuses: tuple[int, ...] = ()) -> list[str]:
        """Everything that went wrong in the browser: console errors, CSP, failed loads."""
        return self.errors(statuses=statuses) + self.page_errors + self.dialogs + self.failed


@pytest.fixture
def tab(browser: Browser, served: Served) -> Iterator[Tab]:
    """A page in a new context (no cookies), recording console errors and dialogs."""
    context = browser.new_context(base_url=served.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    opened = Tab(page=page, context=context, base=served.url)

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            source = message.location.get("url") or page.url
            opened.console_errors.append(f"{source}: {message.text}")

    def dialog(shown: Dialog) -> None:
        opened.dialogs.append(f"{page.url}: {shown.type} dialog {shown.message!r}")
        shown.dismiss()

    def response(answer: Response) -> None:
        if answer.request.resource_type != "document" and answer.status >= 400:
            opened.failed.append(f"{answer.url}: {answer.status}")

    page.on("console", console)
    page.on("pageerror", lambda error: opened.page_errors.append(f"{page.url}: {error}"))
    page.on("dialog", dialog)
    page.on("response", response)
    page.on("requestfailed", lambda request: opened.failed.append(f"{request.url}: failed"))
    try:
        yield opened
    finally:
        context.close()


def _rows(page: Page) -> int:
    """The rows of the exclusions table (zero when it says that none matches)."""
    if page.locator("#exclusions td.empty").count():
        return 0
    return page.locator("#exclusions tbody tr").count()


def _total(page: Page) -> int:
    return int(page.locator("#total").inner_text())


def _column(page: Page, number: int) -> list[str]:
    """The texts of one column of the exclusions table (1-based)."""
    cells = page.locator(f"#exclusions tbody tr td:nth-child({number})")
    return [text.strip() for text in cells.all_inner_texts()]


def _color(page: Page, selector: str, prop: str = "color") -> str:
    value: str = page.locator(selector).first.evaluate(
        f"element => getComputedStyle(element).{prop}"
    )
    return value


# -- the tests ------------------------------------------------------------------------------


def test_the_front_page_shows_cupy_with_its_verified_candidate(tab: Tab) -> None:
    page = tab.page
    tab.open("/")
    assert page.title() == "Pending relaxations · govern"
    row = page.locator('#pending tr[data-package="cupy-cuda13x"]')
    assert row.count() == 1
    assert row.get_attribute("class") == "verified"
    assert row.locator("td").first.inner_text().startswith("cupy-cuda13x <14.1.0")
    assert row.locator(".candidate-version").inner_text().split()[0] == "14.1.1"
    evidence = row.locator(".evidence")
    assert evidence.locator(".state").inner_text() == "passed"
    assert "installed 14.1.1" in evidence.inner_text()
    run = evidence.get_by_role("link", name="run")
    assert run.get_attribute("href") == RUN_URL
    assert run.get_attribute("rel") == "noopener noreferrer"
    assert row.locator(".diff .del").inner_text() == "- cupy-cuda13x < 14.1.0"
    assert row.locator(".diff .add").inner_text() == "+ cupy-cuda13x != 14.1.0"
    # The stylesheet applied (same origin, allowed by the CSP): the diff and verdict colours.
    assert _color(page, '#pending tr[data-package="cupy-cuda13x"] .evidence .state') == OK
    assert _color(page, '#pending tr[data-package="cupy-cuda13x"] .diff .add') == OK
    assert _color(page, "header.top", "backgroundColor") == SOFT
    assert page.locator("header.top").get_by_role("link", name="Sign in").is_visible()
    _shot(page, "front")
    assert tab.problems() == []


def test_filters_and_pages_narrow_the_list(tab: Tab, served: Served) -> None:
    page = tab.page
    tab.open("/exclusions")
    everything = _total(page)
    assert everything == GENERATED + 1
    assert _rows(page) == 50
    assert page.locator(".pager span").inner_text() == "page 1 of 5"
    first_page = _column(page, 1)
    _shot(page, "list")

    # The pager: "next" leads to the second page, other rows, "previous" appears.
    with page.expect_navigation():
        page.get_by_role("link", name="next").click()
    assert re.search(r"[?&]page=2\b", page.url)
    assert page.locator(".pager span").inner_text() == "page 2 of 5"
    assert _rows(page) == 50
    assert not set(_column(page, 1)) & set(first_page)
    assert page.get_by_role("link", name="previous").count() == 1

    # Kind: every row is a cap, fewer than all, and the form remembers the choice.
    page.locator("form.filters select[name=kind]").select_option("cap")
    tab.submit("form.filters button[type=submit]")
    caps = _total(page)
    assert 0 < caps < everything
    assert re.search(r"[?&]kind=cap\b", page.url)
    assert re.search(r"[?&]page=", page.url) is None  # a new filter starts at page one
    assert set(_column(page, 2)) == {"cap"}
    assert page.locator("form.filters select[name=kind]").input_value() == "cap"
    _shot(page, "list-filtered")
    # The next page keeps the filter (a third of the generated exclusions are caps).
    assert caps > 50
    with page.expect_navigation():
        page.get_by_role("link", name="next").click()
    assert re.search(r"[?&]kind=cap\b", page.url)
    assert re.search(r"[?&]page=2\b", page.url)
    assert set(_column(page, 2)) == {"cap"}
    assert _total(page) == caps

    # Kind and state together (the state "held" is test_the_held_filter_excludes_overdue's).
    page.locator("form.filters select[name=state]").select_option("overdue")
    tab.submit("form.filters button[type=submit]")
    overdue_caps = _total(page)
    assert 0 < overdue_caps < caps
    assert set(_column(page, 2)) == {"cap"}
    assert set(_column(page, 3)) == {"overdue"}

    # One package: exactly the CuPy row.
    page.locator("form.filters select[name=kind]").select_option("")
    page.locator("form.filters select[name=state]").select_option("")
    page.get_by_label("Package").fill("cupy-cuda13x")
    tab.submit("form.filters button[type=submit]")
    assert _total(page) == 1
    assert _rows(page) == 1
    assert page.locator("#exclusions tbody tr").get_attribute("data-package") == "cupy-cuda13x"
    assert page.locator(".pager span").inner_text() == "page 1 of 1"
    assert page.get_by_role("link", name="next").count() == 0

    # The search box (submitted with Enter): package names and reasons are searched.
    page.get_by_label("Package").fill("")
    search = page.get_by_label("Search")
    search.fill("pkg-0001")
    with page.expect_navigation():
        search.press("Enter")
    packages = page.locator("#exclusions tbody tr").evaluate_all(
        "rows => rows.map(row => row.dataset.package)"
    )
    assert _total(page) == len(packages) == 10  # pkg-00010 ... pkg-00019
    assert all(name.startswith("pkg-0001") for name in packages)
    page.get_by_label("Search").fill("imports pytest")
    tab.submit("form.filters button[type=submit]")
    assert _total(page) == 1
    assert page.locator("#exclusions tbody tr a").get_attribute("href") == (
        f"/exclusions/{served.cupy}"
    )

    # Nothing matches: an empty table that says so.
    page.get_by_label("Search").fill("no-such-package-anywhere")
    tab.submit("form.filters button[type=submit]")
    assert _total(page) == 0
    assert page.locator("#exclusions td.empty").inner_text() == "No exclusion matches."
    assert tab.problems() == []


def test_the_cupy_page_shows_its_timeline_and_reason(tab: Tab, served: Served) -> None:
    page = tab.page
    tab.open("/")
    with page.expect_navigation():
        page.locator('#pending tr[data-package="cupy-cuda13x"] td').first.get_by_role(
            "link"
        ).click()
    assert page.url == f"{served.url}/exclusions/{served.cupy}"
    assert page.locator("h1").inner_text().startswith("cupy-cuda13x <14.1.0")
    kinds = page.locator("#timeline li strong").all_inner_texts()
    for kind in ("added", "candidate-found", "verification-passed"):
        assert kind in kinds, kinds
    assert (
        kinds.index("added") < kinds.index("candidate-found") < kinds.index("verification-passed")
    )
    passed = page.locator("#timeline li").filter(has_text="verification-passed")
    assert "14.1.1 on cuda13" in passed.inner_text()
    assert passed.get_by_role("link", name="run").get_attribute("href") == RUN_URL
    reason = page.locator("#reason").inner_text()
    assert "imports pytest from cupy.testing._random" in reason
    assert "https://github.com/vllm-project/vllm/issues/43512" in reason
    # The candidate's verification: folded, and its log shows when unfolded.
    candidate = page.locator("#candidates tbody tr").filter(has_text="14.1.1")
    assert candidate.count() == 1
    summary = candidate.locator("details summary")
    assert "installed 14.1.1" in summary.inner_text()
    log = candidate.locator("pre.log")
    assert not log.is_visible()
    summary.click()
    assert log.is_visible()
    assert "installed cupy-cuda13x==14.1.1" in log.inner_text()
    assert candidate.get_by_role("link", name=RUN_URL).is_visible()
    _shot(page, "exclusion")
    assert tab.problems() == []


def test_a_hostile_reason_is_shown_as_text(tab: Tab) -> None:
    page = tab.page
    tab.open("/exclusions")
    page.get_by_label("Search").fill("owned")
    tab.submit("form.filters button[type=submit]")
    assert _total(page) > 0
    reasons = page.locator("#exclusions tbody td.reason").all_inner_texts()
    assert reasons
    assert all(text == HOSTILE for text in reasons)
    assert page.locator("#exclusions script, #exclusions b").count() == 0
    with page.expect_navigation():
        page.locator("#exclusions tbody tr a").first.click()
    reason = page.locator("#reason")
    assert reason.inner_text() == HOSTILE
    assert "<script>alert('owned')</script>" in reason.inner_text()
    assert reason.locator("script").count() == 0
    assert reason.locator("b").count() == 0
    assert page.locator("script").count() == 0  # none anywhere: the pages have no JavaScript
    assert tab.dialogs == []
    _shot(page, "exclusion-hostile-reason")
    assert tab.problems() == []


def test_a_write_needs_the_token(tab: Tab, served: Served) -> None:
    page = tab.page
    key = served.api("/api/v1/exclusions", package="pkg-00002")["items"][0]["id"]
    assert "acknowledged" not in served.thread(key)

    # Not signed in: the form is refused and nothing is written.
    tab.open(f"/exclusions/{key}")
    assert page.get_by_text("Sign in with the write token to act.").is_visible()
    tab.submit("#acknowledge", status=401)
    assert page.locator("h1").inner_text() == "Refused"
    assert "sign in with the write token" in page.locator("#refused").inner_text().lower()
    _shot(page, "refused")
    assert "acknowledged" not in served.thread(key)

    # A wrong token is refused at sign-in.
    with page.expect_navigation():
        page.locator("main").get_by_role("link", name="Sign in").click()
    assert page.url == f"{served.url}/login"
    _shot(page, "login")
    page.get_by_label("Write token").fill("not-the-token")
    tab.submit("form.login button[type=submit]", status=403)
    assert page.get_by_role("alert").inner_text() == "That is not the token."
    assert not [c for c in tab.context.cookies() if c["name"] == "govern_session"]
    _shot(page, "login-refused")

    # The right token: a session cookie (HttpOnly, SameSite=Strict), back to the front page.
    page.get_by_label("Write token").fill(TOKEN)
    tab.submit("form.login button[type=submit]")
    assert page.url == f"{served.url}/"
    session = [c for c in tab.context.cookies() if c["name"] == "govern_session"]
    assert len(session) == 1
    assert session[0].get("httpOnly") is True
    assert session[0].get("sameSite") == "Strict"
    assert TOKEN not in session[0].get("value", "")
    assert page.locator("header.top").get_by_role("button", name="Sign out").is_visible()

    tab.open(f"/exclusions/{key}")
    assert page.get_by_text("Sign in with the write token to act.").count() == 0
    tab.submit("#acknowledge")
    assert page.url == f"{served.url}/exclusions/{key}?done=acknowledge"
    assert page.get_by_role("status").inner_text() == "Done: acknowledge."
    assert served.thread(key).count("acknowledged") == 1
    assert "acknowledged" in page.locator("#timeline li strong").all_inner_texts()
    _shot(page, "exclusion-acknowledged")

    # Signing out ends the session: the next write is refused again.
    tab.submit("header.top form button[type=submit]")
    tab.open(f"/exclusions/{key}")
    tab.submit("#acknowledge", status=401)
    assert served.thread(key).count("acknowledged") == 1
    # The only console errors are Chromium's notes on the refused pages' statuses.
    assert tab.problems(statuses=(401, 403)) == []


def test_the_held_filter_excludes_overdue(tab: Tab) -> None:
    page = tab.page
    tab.open("/exclusions?state=held&per_page=200")
    assert _total(page) > 0
    assert set(_column(page, 3)) == {"held"}


PAGES = {
    "front": "/",
    "list": "/exclusions",
    "list-page-2": "/exclusions?kind=not-equal&state=held&page=2&per_page=10",
    "debt": "/debt",
    "debt-2y": "/debt?days=730",
    "login": "/login",
}


def test_no_page_breaks_the_csp_or_logs_an_error(tab: Tab, served: Served) -> None:
    page = tab.page
    for name, path in {**PAGES, "exclusion": f"/exclusions/{served.cupy}"}.items():
        response = tab.open(path)
        assert "default-src 'none'" in (response.header_value("content-security-policy") or "")
        assert _color(page, "header.top", "backgroundColor") == SOFT, f"{path}: no stylesheet"
        if name == "debt":
            assert page.locator("#debt-over-time svg").count() == 1
            assert page.locator("#age-histogram svg").count() == 1
            _shot(page, "debt")
    assert tab.problems() == []
    tab.open("/exclusions/no-such-id", status=404)
    assert page.locator("h1").inner_text() == "Not found"
    assert tab.problems(statuses=(404,)) == []


def test_the_csp_blocks_an_injected_inline_script(tab: Tab) -> None:
    """The control for the test above: a violation is reported, and no script runs."""
    page = tab.page

    def inject(route: Route) -> None:
        answer = route.fetch()
        body = answer.text().replace(
            "</main>", "<script>alert('owned')</script><p class=x style='color:red'>x</p></main>"
        )
        route.fulfill(response=answer, body=body)

    page.route("**/debt", inject)
    tab.open("/debt")
    assert page.locator("main script").count() == 1  # it is in the page, and blocked
    assert tab.dialogs == []
    assert any("Content Security Policy" in e for e in tab.console_errors), tab.console_errors
    assert _color(page, "p.x") != "rgb(255, 0, 0)"


def test_the_propose_now_button_is_accepted(tab: Tab, served: Served) -> None:
    """The button posts a form the dashboard knows (it answered 404, "no such action")."""
    page = tab.page
    tab.open("/login")
    page.get_by_label("Write token").fill(TOKEN)
    tab.submit("form.login button[type=submit]")
    tab.open(f"/exclusions/{served.cupy}")
    assert page.locator("#propose-now").is_visible()
    tab.submit("#propose-now")
    assert page.url == f"{served.url}/exclusions/{served.cupy}?done=propose"
    assert page.get_by_role("status").inner_text() == "Done: propose."
    _shot(page, "exclusion-proposed")
    assert tab.problems() == []
