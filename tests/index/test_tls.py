"""HTTPS indexes: certificates verified, from the bundle the environment names or certifi's.

The server is :class:`fakes.index.StaticIndex` with a self-signed certificate for
127.0.0.1 made by ``openssl`` (Debian's; nothing is downloaded).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.index import IndexFile, StaticIndex
from govern.index.client import IndexClient, http_client, tls_context
from govern.index.model import Fetched, FetchFailed, FetchResult
from govern.index.pipconfig import IndexSettings

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture
def https_index(tmp_path: Path, certificate: tuple[Path, Path]) -> Iterator[StaticIndex]:
    cert, key = certificate
    served = StaticIndex(tmp_path / "index", {"demo": [IndexFile("demo-1.0-py3-none-any.whl")]})
    served.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.tls.load_cert_chain(cert, key)
    with served:
        yield served


def _fetch(url: str) -> FetchResult:
    async def go() -> FetchResult:
        async with http_client() as http:
            client = IndexClient(http, IndexSettings(url, source="test"), attempts=1)
            return await client.fetch("demo")

    return asyncio.run(go())


def test_an_index_whose_certificate_is_trusted(
    https_index: StaticIndex, certificate: tuple[Path, Path]
) -> None:
    os.environ["SSL_CERT_FILE"] = str(certificate[0])  # restored by tests/conftest.py
    result = _fetch(https_index.url)
    assert https_index.url.startswith("https://")
    assert isinstance(result, Fetched), result
    assert [f.filename for f in result.page.files] == ["demo-1.0-py3-none-any.whl"]


def test_an_untrusted_certificate_is_a_failure_not_a_page(https_index: StaticIndex) -> None:
    os.environ.pop("SSL_CERT_FILE", None)
    os.environ.pop("SSL_CERT_DIR", None)
    result = _fetch(https_index.url)  # certifi's bundle does not know this certificate
    assert isinstance(result, FetchFailed)
    assert "CERTIFICATE_VERIFY_FAILED" in result.reason or "certificate" in result.reason


def test_the_context_is_set_up_as_python_s_default_client_context() -> None:
    ours, default = tls_context(), ssl.create_default_context()
    assert ours.verify_mode == default.verify_mode
    assert ours.check_hostname == default.check_hostname
    assert ours.verify_flags == default.verify_flags
    assert ours.options == default.options
    assert ours.minimum_version == default.minimum_version


def test_a_named_bundle_must_exist_and_hold_certificates(tmp_path: Path) -> None:
    from govern.errors import ConfigError

    os.environ["SSL_CERT_FILE"] = str(tmp_path / "missing.pem")
    with pytest.raises(ConfigError) as missing:
        tls_context()
    assert "SSL_CERT_FILE=" in missing.value.message
    assert missing.value.tip
    os.environ.pop("SSL_CERT_FILE")
    os.environ["SSL_CERT_DIR"] = str(tmp_path / "missing")
    with pytest.raises(ConfigError):
        tls_context()
    os.environ.pop("SSL_CERT_DIR")
    (tmp_path / "garbage.pem").write_text("not a certificate\n", encoding="utf-8")
    os.environ["SSL_CERT_FILE"] = str(tmp_path / "garbage.pem")
    with pytest.raises(ConfigError, match=r"garbage\.pem: no certificate in it"):
        tls_context()  # never a page fetched without verification


def test_the_environment_is_ignored_when_not_trusted(
    https_index: StaticIndex, certificate: tuple[Path, Path], tmp_path: Path
) -> None:
    os.environ["SSL_CERT_FILE"] = str(tmp_path / "missing.pem")
    assert tls_context(trust_env=False).cert_store_stats()["x509_ca"] > 50  # certifi's
    os.environ["SSL_CERT_FILE"] = str(certificate[0])

    async def go() -> FetchResult:
        async with http_client(trust_env=False) as http:
            settings = IndexSettings(https_index.url, source="test")
            return await IndexClient(http, settings, attempts=1).fetch("demo")

    assert isinstance(asyncio.run(go()), FetchFailed)  # the named bundle is not read


def test_one_context_serves_every_poll_until_the_bundle_changes(
    certificate: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle.pem"
    shutil.copy(certificate[0], bundle)
    os.environ["SSL_CERT_FILE"] = str(bundle)
    first = tls_context()
    assert tls_context() is first  # the bundle is not read again for each poll
    assert tls_context(trust_env=False) is not first
    with bundle.open("a", encoding="utf-8") as more:  # a bundle rotated in place
        more.write(certificate[0].read_text(encoding="utf-8"))
    second = tls_context()
    assert second is not first
    # Replaced by a copy of the same size and times (cp -p, rsync -a): read again too.
    copy = tmp_path / "copy.pem"
    shutil.copy2(bundle, copy)
    os.replace(copy, bundle)
    assert tls_context() is not second
