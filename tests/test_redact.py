"""Tests for :mod:`govern.redact`: what every message, log line and page hides."""

from __future__ import annotations

import pytest

from govern.redact import ConfiguredSecrets, redact, redact_secret_params, scrub, secret_forms


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://user:tok3n@host/simple", "https://***@host/simple"),
        ("https://tok3n@main.test/simple/", "https://***@main.test/simple/"),
        ("git+https://tok3n@host/r.git#egg=x", "git+https://***@host/r.git#egg=x"),
        ("https://u:p@ss:w@rd@main.test/x", "https://***@main.test/x"),
        ("https://main.test/simple/?q=a@b", "https://main.test/simple/?q=a@b"),
        ("https://host/simple", "https://host/simple"),
        ("pkg @ https://host/p.whl", "pkg @ https://host/p.whl"),
        ("https://host/simple?token=tok3n&x=1", "https://host/simple?token=***&x=1"),
        (
            "https://main.test/simple/?access_token=s3cret",
            "https://main.test/simple/?access_token=***",
        ),
        (
            "https://h/p.whl?X-Amz-Signature=ab12#sha256=00",
            "https://h/p.whl?X-Amz-Signature=***#sha256=00",
        ),
        ("https://host/simple?page=2", "https://host/simple?page=2"),
        (
            "GET https://a:b@one.test/x failed, then https://c@two.test/y",
            "GET https://***@one.test/x failed, then https://***@two.test/y",
        ),
    ],
)
def test_redact_hides_url_credentials(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_secret_params_alone_keep_the_user_of_a_database_url() -> None:
    shown = redact_secret_params("postgresql://govern@db.test/g?password=s3cret&sslmode=require")
    assert shown == "postgresql://govern@db.test/g?password=***&sslmode=require"


def test_scrub_replaces_the_longest_secret_first() -> None:
    # A token that begins with another secret is hidden whole, not left with its tail showing.
    assert scrub("auth abc and abcdef", ("abc", "abcdef")) == "auth *** and ***"
    assert scrub("nothing to hide", ("", "x1y2")) == "nothing to hide"


def test_secret_forms_catch_a_secret_however_it_is_printed() -> None:
    """The value, percent-encoded, a PEM key's lines (repr prints them with \\n), a
    webhook URL's path (a request log prints it alone); short forms are left alone."""
    key = (
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
    )
    webhook = "https://hooks.chat.test/services/T01/B02/abcdefghijkl"
    forms = secret_forms([key, webhook, "p@ss word!", "tiny"])
    printed = "\n".join(
        [repr({"KEY": key}), "POST /services/T01/B02/abcdefghijkl", "login p%40ss%20word%21"]
    )
    shown = scrub(printed, forms)
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in shown
    assert "abcdefghijkl" not in shown
    assert "p%40ss%20word%21" not in shown
    assert "tiny" not in forms
    assert (
        ConfiguredSecrets(values=forms).hide(f"{webhook} https://u:pw@h/x") == "*** https://***@h/x"
    )
