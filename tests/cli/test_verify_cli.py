"""``govern verify`` on the command line: configured providers, errors, output.

The candidates are seeded in the store directly (the watcher's part is tested in
``tests/service/test_poll.py``; the whole loop with a real index in
``tests/service/test_verify_e2e.py``).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from clirun import run_cli as _run
from sqlmodel import select

from govern import application
from govern.config import Config
from govern.service.track import TrackOptions, track
from govern.service.verify import VerifyOptions, VerifyResult
from govern.store.db import Store
from govern.store.models import Candidate, StoredExclusion, StoredRelease, Verification

NOW = datetime(2026, 8, 1, tzinfo=UTC)
SAY = f"{sys.executable} -c \"print('govern-verify: installed demo==' + '{{version}}')\""


@pytest.fixture
def seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A repository pinning demo==1.0 with candidate 1.1 on the default profile."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text("demo==1.0  # 1.1 crashed on import\n")
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    with Store(db) as store:
        track(store, root, None, config=Config(), options=TrackOptions(now=NOW))
        with store.session(write=True) as session:
            release = StoredRelease(package="demo", version="1.1", first_seen_at=NOW)
            session.add(release)
            session.flush()
            exclusion = session.exec(select(StoredExclusion)).one()
            session.add(
                Candidate(
                    exclusion_id=exclusion.id or 0,
                    release_id=release.id or 0,
                    profile="default",
                    found_at=NOW,
                )
            )
    monkeypatch.chdir(root)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    return root, db


def test_without_a_provider_it_says_how_to_give_one(
    seeded: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = seeded
    code, _, err = _run(["verify", "--db", db], capsys)
    assert code == 2
    assert "no CI provider to verify with" in err
    assert "--command" in err


def test_a_configured_command_provider(
    seeded: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, db = seeded
    (root / ".govern.toml").write_text(
        f'verify-with = "local"\n[ci.local]\nprovider = "command"\ncommand = {json.dumps(SAY)}\n',
        encoding="utf-8",
    )
    code, out, err = _run(["verify", "demo", "--db", db], capsys)
    assert code == 0, err
    assert "passed     demo 1.1 on default (local, attempt 1, installed 1.1)" in out
    assert "1 run(s) started, 0 still running; 1 passed" in out
    code, out, _ = _run(["status", "--db", db, "--format", "json"], capsys)
    assert json.loads(out)["exclusions"][0]["state"] == "verified"


def test_a_failing_command_without_an_index_for_its_control_gives_no_verdict(
    seeded: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Twice failed, but the control (the pinned 1.0) cannot be found without an index: a
    # failure that nothing shows the check can tell is not a verdict.
    _, db = seeded
    command = f'{SAY[:-1]}; raise SystemExit(4)"'
    code, out, _ = _run(["verify", "--db", db, "--command", command, "-f", "json"], capsys)
    assert code == 0
    document = json.loads(out)
    assert document["concluded"]["failed"] == 2
    assert document["verdicts"] == {"passed": 0, "failed": 0, "errored": 1}
    assert document["runs"][0]["detail"] == "the command failed (exit status 4)"
    assert document["runs"][0]["verdict"] == "found"
    assert "installed demo==1.1" in document["runs"][0]["log_tail"]
    assert document["skipped"][0]["reason"].startswith("no control run: no index is configured")


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[ci.gh]\nprovider = "github-actions"\ntoken = "ghp_LEAKEDTOKEN0000"\n',
            "a token must never be committed",
        ),
        ('[ci.x]\nprovider = "jenkins"\n', "needs provider = one of"),
        ('verify-with = "nope"\n', "names CI 'nope', which is not defined"),
        ('[profiles.gpu]\nci = "gpu"\n', "profiles.gpu.ci names CI 'gpu'"),
        ("verify-attempts = 0\n", "verify-attempts must be a number from 1 to 20"),
    ],
)
def test_configuration_errors_exit_2(
    seeded: tuple[Path, str], capsys: pytest.CaptureFixture[str], toml: str, message: str
) -> None:
    root, db = seeded
    (root / ".govern.toml").write_text(toml, encoding="utf-8")
    code, out, err = _run(["verify", "--db", db], capsys)
    assert code == 2
    assert message in err
    assert "LEAKEDTOKEN" not in out + err


def test_a_hosted_provider_without_its_token_variable(
    seeded: tuple[Path, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, db = seeded
    _github_without_token(root, monkeypatch)
    code, _, err = _run(["verify", "--db", db], capsys)
    assert code == 2
    assert "GOVERN_TEST_GH_TOKEN" in err


def test_an_ad_hoc_command_does_not_need_the_configured_providers_tokens(
    seeded: tuple[Path, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, db = seeded
    _github_without_token(root, monkeypatch)
    code, out, err = _run(["verify", "--db", db, "--command", SAY], capsys)
    assert code == 0, err
    assert "passed     demo 1.1 on default (command, attempt 1, installed 1.1)" in out


def _github_without_token(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A configured GitHub provider whose token variable is not set."""
    monkeypatch.delenv("GOVERN_TEST_GH_TOKEN", raising=False)
    (root / ".govern.toml").write_text(
        'verify-with = "gh"\n[ci.gh]\nprovider = "github-actions"\n'
        'repository = "example/app"\nworkflow = "verify.yml"\n'
        'token-env = "GOVERN_TEST_GH_TOKEN"\n',
        encoding="utf-8",
    )


def test_a_configured_provider_named_like_the_ad_hoc_one_is_refused(
    seeded: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, db = seeded
    (root / ".govern.toml").write_text(
        f'[ci.command]\nprovider = "command"\ncommand = {json.dumps(SAY)}\n', encoding="utf-8"
    )
    code, _, err = _run(["verify", "--db", db, "--command", SAY], capsys)
    assert code == 2
    assert "named 'command'" in err


def test_the_options_reach_the_verification_call_as_one_frozen_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[VerifyOptions] = []

    async def fake_verify_once(
        store: Store, config: Config, settings: object, options: VerifyOptions
    ) -> VerifyResult:
        seen.append(options)
        return VerifyResult()

    monkeypatch.setattr(application, "verify_once", fake_verify_once)
    monkeypatch.chdir(tmp_path)
    argv = ["verify", "numpy", "--profile", "a", "--profile", "b", "--command", "pytest -x"]
    argv += ["--timeout", "60", "--wait", "--wait-timeout", "5", "--poll-interval", "0"]
    code, _, err = _run([*argv, "--db", f"sqlite:///{tmp_path / 'g.db'}"], capsys)
    assert code == 0, err
    assert seen == [
        VerifyOptions(
            query="numpy",
            profiles=("a", "b"),
            command="pytest -x",
            timeout=60.0,
            wait=True,
            wait_timeout=5.0,
            poll_interval=0.0,
        )
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen[0].wait = False  # type: ignore[misc]


# -- secrets: withheld from the command, scrubbed by value from what is stored and shown ------

WEBHOOK = "https://hooks.chat.test/services/T0001/B0002/zyxwvutsrqponmlk"
FORGE_TOKEN = "forge-pat-0123456789abcdefghij"
INDEX_PASSWORD = "index-pass-9876543210"
SECRET_CONFIG = """\
[propose]
via = "github"
token-env = "FORGE_PAT"

[notify]
channels = ["webhook"]
webhook-url-env = "SLACK_WEBHOOK_URL"
"""
# Writes its environment to argv[1], prints it, prints what argv[2] holds, then the evidence.
DUMP = (
    "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w')); "
    "print(repr(dict(os.environ))); print(open(sys.argv[2]).read()); "
    "print('govern-verify: installed demo==' + sys.argv[3])"
)


def test_configured_secrets_never_reach_the_command_nor_any_page(
    seeded: tuple[Path, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The webhook's URL sits in SLACK_WEBHOOK_URL and the forge's token in FORGE_PAT (names
    no pattern knows): the command gets neither, and when it prints them anyway (read from
    a file), the stored log, the dashboard and the API show them scrubbed, as the index's
    password."""
    from fastapi.testclient import TestClient

    from govern.web.app import create_app
    from govern.web.security import Secrets
    from govern.web.state import AppState

    root, db = seeded
    (root / ".govern.toml").write_text(SECRET_CONFIG, encoding="utf-8")
    monkeypatch.setenv("SLACK_WEBHOOK_URL", WEBHOOK)
    monkeypatch.setenv("FORGE_PAT", FORGE_TOKEN)
    leaked = tmp_path / "leaked.txt"
    leaked.write_text(f"{WEBHOOK}\n{FORGE_TOKEN}\n{INDEX_PASSWORD}\n", encoding="utf-8")
    seen = tmp_path / "environment.json"
    command = shlex.join([sys.executable, "-c", DUMP, str(seen), str(leaked), "{version}"])
    index = f"http://reader:{INDEX_PASSWORD}@127.0.0.1:9/simple/"
    code, out, err = _run(
        ["verify", "--db", db, "--command", command, "--index-url", index], capsys
    )
    assert code == 0, err
    environment = json.loads(seen.read_text(encoding="utf-8"))
    assert "SLACK_WEBHOOK_URL" not in environment
    assert "FORGE_PAT" not in environment
    assert not {WEBHOOK, FORGE_TOKEN} & set(environment.values())

    with Store(db) as store:
        with store.session() as session:
            key = session.exec(select(StoredExclusion)).one().key
            run = session.exec(select(Verification)).one()
        log = run.log_excerpt or ""
        assert log.count("***") >= 3, log  # the three lines printed, each scrubbed
        state = AppState(store=store, secrets=Secrets())  # no token: anyone can read it
        with TestClient(create_app(state)) as client:
            page = client.get(f"/exclusions/{key}")
            api = client.get(f"/api/v1/exclusions/{key}")
        assert page.status_code == api.status_code == 200
        assert "***" in page.text
        for shown in (log, run.detail or "", page.text, api.text, out, err):
            for secret in (WEBHOOK, FORGE_TOKEN, INDEX_PASSWORD, "zyxwvutsrqponmlk"):
                assert secret not in shown
