"""``govern dashboard`` and ``govern report`` over a seeded store (``govern serve`` runs
for real in ``tests/web/test_browser.py``, and here to be stopped with SIGTERM)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from clirun import run_cli as _run
from webseed import seed

from govern.store.db import Store
from govern.web.report import md
from govern.web.templating import safe_url


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'govern.db'}"
    with Store(url) as store:
        seed(store, tmp_path, generated=40)
    return url


def test_dashboard_in_the_terminal(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["dashboard", "--db", db], capsys)
    assert code == 0
    assert "cupy-cuda13x <14.1.0 -> 14.1.1 (passed on cuda13, installed 14.1.1)" in out
    assert "+ cupy-cuda13x != 14.1.0" in out
    code, out, _ = _run(["dashboard", "--db", db, "--format", "json"], capsys)
    document = json.loads(out)
    assert document["schema"] == "govern.dashboard/1"
    assert document["pending_total"] >= 1


def test_report_as_markdown_and_html(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(["report", "--db", db, "--format", "markdown"], capsys)
    assert code == 0
    assert out.startswith("## Pending relaxations")
    assert "+ cupy\\-cuda13x \\!= 14.1.0" in out
    target = tmp_path / "report.html"
    code, _, err = _run(["report", "--db", db, "--format", "html", "-o", str(target)], capsys)
    assert code == 0, err
    page = target.read_text(encoding="utf-8")
    assert "cupy-cuda13x" in page
    assert "<script" not in page.lower()
    assert 'a[aria-current="page"]' in page  # the inlined stylesheet is CSS, not escaped text


def test_the_html_report_renders_without_the_web_server(db: str, tmp_path: Path) -> None:
    # `govern report` is a command for CI and cron: it must not load FastAPI/Starlette.
    target = tmp_path / "report.html"
    probe = (
        "import sys\n"
        "from govern.cli import main\n"
        "try:\n"
        f"    main(['report', '--db', {db!r}, '--format', 'html', '-o', {str(target)!r}])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'starlette')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert done.stdout.strip() == "[]", done.stderr
    assert "cupy-cuda13x" in target.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("https://ci.example/run/1", "https://ci.example/run/1"),
        (" HTTP://ci.example/ ", "HTTP://ci.example/"),
        ("javascript:alert(1)", "#"),
        ("data:text/html,x", "#"),
        (None, "#"),
    ],
)
def test_links_are_http_or_nothing(value: object, shown: str) -> None:
    assert safe_url(value) == shown


def test_markdown_cells_cannot_inject_markup() -> None:
    assert md("<script>x</script> | [a](javascript:1) *b*") == (
        "&lt;script&gt;x&lt;/script&gt; \\| \\[a\\]\\(javascript:1\\) \\*b\\*"
    )
    assert md("line\nbreak") == "line break"


def _serve_state(db: str, root: Path, toml: str) -> Any:
    """The dashboard's state as ``govern serve`` builds it from ``root``'s configuration."""
    import httpx

    from govern.cli.web import _state
    from govern.config import load_config

    (root / ".govern.toml").write_text(toml, encoding="utf-8")
    with Store(db) as store:
        return _state(store, load_config(root), httpx.AsyncClient())


def test_serve_starts_without_ci_when_a_provider_token_is_missing(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOVERN_TEST_GH_TOKEN", raising=False)
    state = _serve_state(
        db,
        tmp_path,
        '[ci.gh]\nprovider = "github-actions"\nrepository = "example/app"\n'
        'workflow = "verify.yml"\ntoken-env = "GOVERN_TEST_GH_TOKEN"\n',
    )
    assert state.ci is None
    err = capsys.readouterr().err
    assert "CI providers are off" in err
    assert "GOVERN_TEST_GH_TOKEN" in err


def test_the_dashboard_verifies_with_the_providers_and_attempts_the_cli_would(
    db: str, tmp_path: Path
) -> None:
    state = _serve_state(
        db,
        tmp_path,
        'verify-with = "local"\nverify-attempts = 5\n'
        '[ci.local]\nprovider = "command"\ncommand = ["true"]\n',
    )
    verifier = state.verifier()
    assert state.ci is not None
    assert sorted(verifier.providers) == ["local"]
    local = verifier.provider_for("any-profile")
    assert local is not None
    assert local.name == "local"
    assert verifier.attempts == 5


def test_a_missing_web_extra_is_an_error_with_a_tip() -> None:
    from govern.cli.web import require_web_stack
    from govern.errors import GovernError

    require_web_stack("jinja2")  # installed with the test extras: no error
    with pytest.raises(GovernError, match=r"web extra \(govern_no_such_module is missing\)") as e:
        require_web_stack("jinja2", "govern_no_such_module")
    assert e.value.tip == "pip install 'govern[web]'"


def test_serve_takes_the_body_limit_and_the_failed_attempts_allowed(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **_options: served.append(app))
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(["serve", "--db", db, "--max-body", "4096", "--auth-failures", "3"], capsys)
    assert code == 0, err
    state = served[0].state.govern
    assert state.max_body == 4096
    assert state.throttle.failures == 3


def test_the_terminal_dashboard_shows_bidi_controls_and_escapes_visibly(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from sqlmodel import select

    from govern.store.models import Repository, StoredExclusion

    with Store(db) as store, store.session(write=True) as session:
        cupy = session.exec(
            select(StoredExclusion).where(StoredExclusion.package == "cupy-cuda13x")
        ).one()
        cupy.assigned_owner = "@gpu\u202eevil\x1b[31m"
        repository = session.get(Repository, cupy.repository_id)
        assert repository is not None
        repository.name = "github.com/\u2067vllm\u2069/vllm"
    code, out, _ = _run(["dashboard", "--db", db], capsys)
    assert code == 0
    assert "owner @gpu<U+202E>evil<U+001B>[31m" in out
    assert "github.com/<U+2067>vllm<U+2069>/vllm" in out
    assert not set(out) & {"\u202e", "\x1b", "\u2067", "\u2069"}
    code, out, _ = _run(["report", "--db", db, "--format", "markdown"], capsys)
    assert code == 0
    assert "@gpu&lt;U\\+202E&gt;evil&lt;U\\+001B&gt;\\[31m" in out
    code, out, _ = _run(["report", "--db", db, "--format", "html"], capsys)
    assert code == 0
    assert "@gpu&lt;U+202E&gt;evil&lt;U+001B&gt;[31m" in out
    assert not set(out) & {"\u202e", "\x1b"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_serve_shuts_down_on_sigterm_with_code_0(db: str, tmp_path: Path) -> None:
    """A supervisor's stop (systemd, Kubernetes, docker stop) is SIGTERM: the server shuts
    down gracefully and says it ended well (it ended with -15, the signal's own death)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOVERN_", "PYTEST_"))}
    env["XDG_DATA_HOME"] = str(tmp_path / "data-home")
    log = tmp_path / "serve.log"
    for _attempt in range(3):
        port = _free_port()
        with log.open("wb") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "govern", "serve", "--port", str(port), "--db", db],
                cwd=tmp_path,  # no configuration of the checkout applies
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + 30
            healthy = False
            while not healthy and process.poll() is None and time.monotonic() < deadline:
                try:
                    url = f"http://127.0.0.1:{port}/healthz"
                    healthy = httpx.get(url, timeout=2.0).status_code == 200
                except httpx.TransportError:
                    time.sleep(0.1)
            if not healthy:
                said = log.read_text(encoding="utf-8", errors="replace")
                if "address already in use" in said.lower():
                    continue  # another test took the port: try another
                pytest.fail(f"govern serve did not start:\n{said}")
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        said = log.read_text(encoding="utf-8", errors="replace")
        assert code == 0, said
        assert "govern: stopped" in said
        assert "Traceback" not in said
        return
    pytest.fail("govern serve found no free port in three attempts")
