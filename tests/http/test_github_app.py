"""Tests for :mod:`govern.http.github_app`: installation tokens from a JWT, against the
fake GitHub (tests/fakes/forge_github.py), following
https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app
and https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
"""

from __future__ import annotations

import base64
import json
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fakes.forge_github import FakeGitHubForge
from fakes.sleeps import Sleeps, run
from govern.config import Config, ProposeConfig, load_config
from govern.errors import FORGE_ERRORS, ConfigError, ForgeAuthError
from govern.exclusions.states import Via
from govern.forge.github import GitHubForge
from govern.forge.remote import forge_for
from govern.http.github_app import AppTokens, b64url

APP_ID = "123456"
INSTALLATION = 987


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@pytest.fixture
def fake(key: rsa.RSAPrivateKey) -> Iterator[FakeGitHubForge]:
    with FakeGitHubForge(token="not-issued-yet") as server:
        server.app = (APP_ID, INSTALLATION, key.public_key())
        yield server


def tokens(
    client: httpx.AsyncClient, fake: FakeGitHubForge, key: rsa.RSAPrivateKey, **options: object
) -> AppTokens:
    return AppTokens(
        app_id=APP_ID,
        installation_id=INSTALLATION,
        private_key=pem(key),
        client=client,
        api_url=fake.url,
        key_source="$GITHUB_APP_KEY",
        errors=FORGE_ERRORS,
        **options,  # type: ignore[arg-type]
    )


def test_the_forge_works_with_an_installation_token_cached_until_it_expires(
    fake: FakeGitHubForge, key: rsa.RSAPrivateKey
) -> None:
    number = fake.add_pull("govern/a", "b")

    async def main() -> None:
        async with httpx.AsyncClient(timeout=5) as client:
            app = tokens(client, fake, key)
            forge = GitHubForge(fake.repository, client, api_url=fake.url, app=app, sleep=Sleeps())
            for _ in range(3):
                assert (await forge.get_change(number)).number == number

    run(main())
    assert len(fake.issued) == 1
    assert len(fake.sent("POST", f"/app/installations/{INSTALLATION}/access_tokens")) == 1
    pulls = fake.sent("GET")
    assert {r.headers["authorization"] for r in pulls} == {f"Bearer {fake.issued[0]}"}


def test_a_token_near_its_expiry_is_renewed(fake: FakeGitHubForge, key: rsa.RSAPrivateKey) -> None:
    fake.token_lifetime = timedelta(seconds=30)  # inside the renewal margin

    async def main() -> None:
        async with httpx.AsyncClient(timeout=5) as client:
            app = tokens(client, fake, key)
            first = await app.token()
            second = await app.token()
            assert first != second

    run(main())
    assert len(fake.issued) == 2


def test_the_jwt_is_rs256_from_the_app_and_short_lived(key: rsa.RSAPrivateKey) -> None:
    moment = datetime(2026, 6, 2, 10, 0, tzinfo=UTC)

    async def main() -> str:
        async with httpx.AsyncClient() as client:
            app = AppTokens(
                app_id=APP_ID,
                installation_id=1,
                private_key=pem(key),
                client=client,
                api_url="http://127.0.0.1:9",
                key_source="$K",
                errors=FORGE_ERRORS,
                clock=lambda: moment,
            )
            return app.jwt()

    header, payload, _ = run(main()).split(".")
    assert header == b64url(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    claims = json.loads(b64url_decode(payload))
    stamp = int(moment.timestamp())
    assert claims == {"iat": stamp - 60, "exp": stamp + 540, "iss": APP_ID}


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_a_wrong_key_is_refused_without_showing_the_jwt(fake: FakeGitHubForge) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    async def main() -> None:
        async with httpx.AsyncClient(timeout=5) as client:
            await tokens(client, fake, other).token()

    with pytest.raises(ForgeAuthError) as caught:
        run(main())
    jwt = fake.sent()[0].headers["authorization"].removeprefix("Bearer ")
    assert jwt not in f"{caught.value} {caught.value.tip}"
    assert "GITHUB_APP_KEY" in f"{caught.value} {caught.value.tip}"
    assert fake.issued == []


def test_a_key_that_is_not_pem_is_an_auth_error() -> None:
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            AppTokens(
                app_id=APP_ID,
                installation_id=1,
                private_key="-----BEGIN nothing",
                client=client,
                api_url="http://127.0.0.1:9",
                key_source="$GITHUB_APP_KEY",
                errors=FORGE_ERRORS,
            )

    with pytest.raises(ForgeAuthError, match=r"\$GITHUB_APP_KEY does not hold a PEM"):
        run(main())


def test_the_configured_app_is_what_forge_for_authenticates_with(
    fake: FakeGitHubForge, key: rsa.RSAPrivateKey
) -> None:

    number = fake.add_pull("govern/a", "b")
    secret = pem(key)

    async def main(settings: Config) -> int:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = forge_for(
                Via.GITHUB,
                f"{fake.url}/{fake.repository}.git",
                settings=settings.propose,
                client=client,
                environ={"GOVERN_APP_KEY": secret},
            )
            return (await forge.get_change(number)).number

    with tempfile.TemporaryDirectory() as where:
        root = Path(where)
        (root / ".govern.toml").write_text(
            f'[propose]\nvia = "github"\napi-url = "{fake.url}"\napp-id = {APP_ID}\n'
            f'installation-id = {INSTALLATION}\nprivate-key-env = "GOVERN_APP_KEY"\n',
            encoding="utf-8",
        )
        settings = load_config(root)
    assert (settings.propose.app_id, settings.propose.installation_id) == (APP_ID, INSTALLATION)
    assert run(main(settings)) == number
    assert len(fake.issued) == 1
    assert {r.headers["authorization"] for r in fake.sent("GET")} == {f"Bearer {fake.issued[0]}"}
    assert Config().propose.app_id is None


@pytest.mark.parametrize(
    ("table", "wanted"),
    [
        ("app-id = 1\n", "needs app-id, installation-id (numbers) and private-key-env together"),
        (
            'app-id = "x1"\ninstallation-id = 2\nprivate-key-env = "K"\n',
            "needs app-id, installation-id (numbers) and private-key-env together",
        ),
        (
            'app-id = 1\ninstallation-id = 2\nprivate-key-env = "-----BEGIN"\n',
            "private-key-env must name an environment variable",
        ),
    ],
)
def test_an_incomplete_or_secret_app_configuration_is_refused(table: str, wanted: str) -> None:

    with tempfile.TemporaryDirectory() as where:
        root = Path(where)
        (root / ".govern.toml").write_text(f'[propose]\nvia = "github"\n{table}', "utf-8")
        with pytest.raises(ConfigError) as caught:
            load_config(root)
    assert wanted in caught.value.message


def test_an_empty_key_variable_is_an_auth_error_naming_it() -> None:

    settings = ProposeConfig(via=Via.GITHUB, app_id="1", installation_id=2, private_key_env="K")

    async def main() -> None:
        async with httpx.AsyncClient() as client:
            forge_for(
                Via.GITHUB,
                "git@forge.example:o/r.git",
                settings=settings,
                client=client,
                environ={},
            )

    with pytest.raises(ForgeAuthError) as caught:
        run(main())
    assert caught.value.message == "$K is empty: the GitHub App's private key is read from it"
