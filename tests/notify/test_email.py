"""The email channel against a real SMTP server on 127.0.0.1 (tests/fakes/smtp.py: aiosmtpd
with STARTTLS, RFC 3207, and AUTH, RFC 4954; a certificate from a throwaway CA)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path
from typing import Any

import pytest
from reminderworld import SMTP_PASSWORD, SMTP_USER

from fakes.smtp import SMTPServer
from govern.config import NotifyConfig, load_config
from govern.errors import ConfigError, NotifyAuthError, NotifyError, NotifyUnavailable
from govern.notify.base import Message
from govern.notify.email import EmailNotifier, message_id

MESSAGE = Message(
    key="remind:0123456789abcdef:14.1.1:email",
    kind="reminder",
    subject="cupy-cuda13x 14.1.1 passed verification",
    text="Candidate: cupy-cuda13x 14.1.1\n",
    markdown="",
)


def notifier(server: SMTPServer, **changes: Any) -> EmailNotifier:
    fields: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": server.port,
        "sender": "govern <govern@example.org>",
        "recipients": ["team@example.org", "Lead <lead@example.org>"],
        "user": SMTP_USER,
        "password": SMTP_PASSWORD,
        "cafile": str(server.ca),
    }
    fields.update(changes)
    return EmailNotifier(**fields)


def test_the_mail_goes_through_starttls_and_auth_with_its_headers(smtp: SMTPServer) -> None:
    answer = asyncio.run(notifier(smtp).send(MESSAGE))
    wanted = f"<govern.{hashlib.sha256(MESSAGE.key.encode()).hexdigest()[:32]}@example.org>"
    assert answer == {
        "message_id": wanted,
        "to": ["team@example.org", "Lead <lead@example.org>"],
    }
    (received,) = smtp.messages
    assert (received.tls, received.login) == (True, SMTP_USER)
    assert received.mail_from == "govern@example.org"
    assert received.rcpt_tos == ("team@example.org", "lead@example.org")
    mail = received.mail
    assert mail["Subject"] == "cupy-cuda13x 14.1.1 passed verification"
    assert mail["From"] == "govern <govern@example.org>"
    assert mail["To"] == "team@example.org, Lead <lead@example.org>"
    assert mail["Message-ID"] == wanted
    assert mail["Auto-Submitted"] == "auto-generated"
    body = mail.get_content().replace("\r\n", "\n")  # lines end in CRLF on the wire
    assert body == "Candidate: cupy-cuda13x 14.1.1\n"


def test_the_message_id_is_the_same_for_the_same_key() -> None:
    first = message_id("remind:a:1:email", "Govern <govern@mail.example.org>")
    assert first == message_id("remind:a:1:email", "other@mail.example.org")
    assert first != message_id("remind:a:2:email", "govern@mail.example.org")
    assert first.startswith("<govern.")
    assert first.endswith("@mail.example.org>")


def test_a_wrong_password_is_an_auth_error_that_does_not_say_it(
    smtp: SMTPServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(NotifyAuthError) as caught:
        asyncio.run(notifier(smtp, password="wrong-pa55word").send(MESSAGE))
    assert caught.value.message == (
        f"smtp 127.0.0.1:{smtp.port} refused the login of {SMTP_USER}: "
        "535 5.7.8 Authentication credentials invalid"
    )
    assert caught.value.status == 535
    assert "pa55" not in f"{caught.value.message} {caught.value.tip} {caplog.text}"
    assert smtp.messages == []
    assert {login for login, accepted in smtp.logins if not accepted} == {SMTP_USER}
    assert [accepted for _, accepted in smtp.logins if accepted] == []


def test_a_server_without_starttls_is_refused_before_anything_is_said(tmp_path: Path) -> None:
    with SMTPServer(
        tmp_path / "tls", user=SMTP_USER, password=SMTP_PASSWORD, offer_starttls=False
    ) as plain:
        with pytest.raises(NotifyError) as caught:
            asyncio.run(notifier(plain).send(MESSAGE))
        assert caught.value.message == (
            f"smtp 127.0.0.1:{plain.port} does not offer STARTTLS; nothing was sent"
        )
        assert (plain.messages, plain.logins) == ([], [])


def test_starttls_false_sends_in_clear_and_says_so(tmp_path: Path) -> None:
    with SMTPServer(
        tmp_path / "tls", user=SMTP_USER, password=SMTP_PASSWORD, offer_starttls=False
    ) as plain:
        email = notifier(plain, starttls=False)
        assert email.target(MESSAGE) == (
            "team@example.org, Lead <lead@example.org> (without TLS: starttls = false)"
        )
        answer = asyncio.run(email.send(MESSAGE))
        assert answer["warning"] == "without TLS: starttls = false"
        assert [(m.tls, m.login) for m in plain.messages] == [(False, SMTP_USER)]


def test_a_certificate_from_an_unknown_ca_is_refused(smtp: SMTPServer, tmp_path: Path) -> None:
    """The system's CAs do not know the throwaway one: nothing is sent without cafile."""
    with pytest.raises(NotifyError) as caught:
        asyncio.run(notifier(smtp, cafile=None).send(MESSAGE))
    assert caught.value.message == (
        f"smtp 127.0.0.1:{smtp.port}: the server's certificate is not trusted: "
        "unable to get local issuer certificate"
    )
    assert caught.value.tip == "Set cafile in [tool.govern.notify] to the CA that signed it."
    assert (smtp.messages, smtp.logins) == ([], [])
    with pytest.raises(NotifyError) as missing:
        asyncio.run(notifier(smtp, cafile=str(tmp_path / "nope.pem")).send(MESSAGE))
    assert missing.value.message.startswith(
        f"smtp 127.0.0.1:{smtp.port}: the CA file {tmp_path / 'nope.pem'} cannot be used: "
    )


def test_a_server_that_is_not_there_is_transient() -> None:
    email = EmailNotifier(
        host="127.0.0.1", port=9, sender="govern@example.org", recipients=["t@example.org"]
    )
    with pytest.raises(NotifyUnavailable) as caught:
        asyncio.run(email.send(MESSAGE))
    assert caught.value.message == "smtp 127.0.0.1:9 could not be reached: Connection refused"
    assert repr(email) == "EmailNotifier('127.0.0.1:9')"


@pytest.mark.parametrize(
    ("changes", "wanted"),
    [
        ({"sender": "govern <govern@example.org>\nBcc: all@example.org"}, "cannot be written"),
        ({"host": "smtp..example.org"}, "the host name cannot be used"),
    ],
)
def test_a_mail_that_cannot_be_written_or_a_host_that_cannot_be_named_is_an_error(
    smtp: SMTPServer, changes: dict[str, Any], wanted: str
) -> None:
    """Never an exception the outbox cannot read (it once left the row ``sending``)."""
    with pytest.raises(NotifyError) as caught:
        asyncio.run(notifier(smtp, **changes).send(MESSAGE))
    assert wanted in caught.value.message
    assert caught.value.maybe_sent is False
    assert smtp.messages == []


def test_implicit_tls_sends_over_tls_from_the_first_byte(tmp_path: Path) -> None:
    with SMTPServer(
        tmp_path / "tls", user=SMTP_USER, password=SMTP_PASSWORD, implicit_tls=True
    ) as server:
        answer = asyncio.run(notifier(server, implicit_tls=True).send(MESSAGE))
        (received,) = server.messages
        assert received.tls
        assert received.login == SMTP_USER
        assert "warning" not in answer
        # The same server spoken to in clear first (STARTTLS) is no SMTP conversation.
        with pytest.raises(NotifyUnavailable):  # each side waits for the other: timed out
            asyncio.run(notifier(server, timeout=1.0).send(MESSAGE))
        assert len(server.messages) == 1


def test_port_465_means_implicit_tls_unless_configured_otherwise(tmp_path: Path) -> None:
    def read(table: str) -> NotifyConfig:
        (tmp_path / ".govern.toml").write_text(f"[notify]\n{table}\n", encoding="utf-8")
        return load_config(tmp_path).notify

    assert read("smtp-port = 465").smtp_tls == "implicit"
    assert read("smtp-port = 587").smtp_tls == "starttls"
    assert read('smtp-port = 465\nsmtp-tls = "starttls"').smtp_tls == "starttls"
    with pytest.raises(ConfigError, match="smtp-tls"):
        read('smtp-tls = "ssl"')


def test_implicit_tls_against_a_server_that_starts_in_clear_says_which_setting(
    smtp: SMTPServer,
) -> None:
    with pytest.raises(NotifyError) as caught:
        asyncio.run(notifier(smtp, implicit_tls=True).send(MESSAGE))
    assert caught.value.message.startswith(f"smtp 127.0.0.1:{smtp.port}: TLS failed")
    assert caught.value.tip is not None
    assert 'smtp-tls = "starttls"' in caught.value.tip
    assert smtp.messages == []
