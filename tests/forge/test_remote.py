"""Tests for :mod:`govern.forge.remote`: the repository a git remote names, and the forge
built for it (talking to a fake GitHub on 127.0.0.1, tests/fakes/forge_github.py)."""

from __future__ import annotations

import sys

import httpx
import pytest

from fakes.forge_github import FakeGitHubForge
from fakes.sleeps import run
from govern.config import ProposeConfig
from govern.errors import ForgeAuthError, ForgeError
from govern.exclusions.states import Via
from govern.forge.github import GitHubForge
from govern.forge.remote import Remote, forge_for, parse_remote
from govern.http.github import github_api_url

TOKEN = "ghp_" + "remote-test-token-42"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("git@github.com:octo-org/app.git", Remote("github.com", "octo-org/app")),
        ("git@github.com:octo-org/app", Remote("github.com", "octo-org/app")),
        ("https://github.com/octo-org/app.git", Remote("github.com", "octo-org/app")),
        ("https://github.com/octo-org/app/", Remote("github.com", "octo-org/app")),
        ("https://user:pass@GitHub.com/octo-org/app", Remote("github.com", "octo-org/app")),
        (
            "ssh://git@gitlab.example.org:2222/group/sub/project.git",
            Remote("gitlab.example.org", "group/sub/project"),
        ),
        ("gitlab.example.org:group/project.git", Remote("gitlab.example.org", "group/project")),
    ],
)
def test_remote_urls_name_host_and_repository(url: str, expected: Remote) -> None:
    assert parse_remote(url) == expected


@pytest.mark.parametrize(
    "url", ["", "/srv/git/app.git", "https://github.com/only-owner", "git@host:/abs", "nonsense"]
)
def test_urls_without_a_repository_are_refused(url: str) -> None:
    with pytest.raises(ForgeError, match="not a git remote URL"):
        parse_remote(url)


def test_credentials_never_show_in_the_message() -> None:
    with pytest.raises(ForgeError) as caught:
        parse_remote("https://x-access-token:s3cr3t@github.com/")
    assert "s3cr3t" not in str(caught.value)


def test_api_urls() -> None:
    assert github_api_url("github.com") == "https://api.github.com"
    assert github_api_url("ghe.example.com") == "https://ghe.example.com/api/v3"


def test_forge_for_github_uses_the_remote_api_url_and_token_env() -> None:
    with FakeGitHubForge(token=TOKEN, owner="acme", repo="widgets") as fake:
        settings = ProposeConfig(via=Via.GITHUB, api_url=fake.url, token_env="MY_FORGE_TOKEN")

        async def main(environ: dict[str, str]) -> str:
            async with httpx.AsyncClient(timeout=5) as client:
                forge = forge_for(
                    Via.GITHUB,
                    "git@github.com:acme/widgets.git",
                    settings=settings,
                    client=client,
                    environ=environ,
                )
                assert isinstance(forge, GitHubForge)
                assert forge.repository == "acme/widgets"
                return await forge.default_branch()

        assert run(main({"MY_FORGE_TOKEN": TOKEN})) == "main"
        with pytest.raises(ForgeAuthError, match=r"\$MY_FORGE_TOKEN"):
            run(main({"GITHUB_TOKEN": TOKEN}))


def test_the_configured_forge_url_wins_over_the_remote() -> None:
    settings = ProposeConfig(via=Via.GITHUB, forge="https://github.com/acme/real")

    async def main() -> str:
        async with httpx.AsyncClient() as client:
            forge = forge_for(
                Via.GITHUB,
                "git@github.com:acme/fork.git",
                settings=settings,
                client=client,
                environ={},
            )
            return forge.repository

    assert run(main()) == "acme/real"


@pytest.mark.parametrize(
    ("via", "remote", "match"),
    [
        (Via.GITHUB, None, "needs the repository"),
        (Via.GITHUB, "ssh://git@host/group/sub/project.git", "owner/repo"),
    ],
)
def test_forge_for_refuses_what_it_cannot_build(via: Via, remote: str | None, match: str) -> None:
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            forge_for(via, remote, settings=ProposeConfig(via=via), client=client, environ={})

    with pytest.raises(ForgeError, match=match):
        run(main())


def test_a_github_app_without_cryptography_installed_says_which_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "govern.http.github_app", None)  # import fails
    settings = ProposeConfig(via=Via.GITHUB, app_id="1", installation_id=2)

    async def main() -> None:
        async with httpx.AsyncClient() as client:
            forge_for(
                Via.GITHUB,
                "git@github.com:acme/widgets.git",
                settings=settings,
                client=client,
                environ={"GOVERN_APP_KEY": "not used"},
            )

    with pytest.raises(ForgeError, match="cryptography") as refused:
        run(main())
    assert refused.value.tip is not None
    assert "govern[github-app]" in refused.value.tip
