"""A real SMTP server on 127.0.0.1 (aiosmtpd) with STARTTLS and AUTH, for the email tests.

:class:`SMTPServer` runs aiosmtpd (https://aiosmtpd.aio-libs.org/) in its thread, the
way a mail submission service works: SMTP (RFC 5321), STARTTLS required before MAIL
(RFC 3207), and AUTH (RFC 4954) accepted only over TLS and only for the configured user
and password (535 otherwise). Its certificate is issued for 127.0.0.1 by a throwaway CA
made with ``cryptography`` (:func:`throwaway_ca`); the client trusts that CA through its
``cafile``. Every message accepted is recorded (:class:`Received`), and
:attr:`SMTPServer.on_message` is called right after, before the 250 is answered.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Self

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["Received", "SMTPServer", "throwaway_ca"]


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def throwaway_ca(where: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 it signed, valid for a day:
    (the CA's certificate, the server's certificate, the server's key), as PEM files."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("govern test CA")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    where.mkdir(parents=True, exist_ok=True)
    ca_pem, cert_pem, key_pem = where / "ca.pem", where / "server.pem", where / "server.key"
    ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_pem.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_pem, cert_pem, key_pem


@dataclass(frozen=True)
class Received:
    """One message the server accepted: the envelope, the mail, how the session was."""

    mail_from: str
    rcpt_tos: tuple[str, ...]
    raw: bytes
    tls: bool
    login: str | None

    @property
    def mail(self) -> EmailMessage:
        """The message parsed (headers and body)."""
        parsed = message_from_bytes(self.raw, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed


class _Session(Session):
    """aiosmtpd's session without its deprecated ``login_data`` alias, which it sets (and
    warns about) at every login."""

    login_data: Any = None


class _SMTP(SMTP):
    def _create_session(self) -> Session:
        return _Session(self.loop)


class _Controller(Controller):
    """aiosmtpd's controller on port 0 (the port is read once the socket is bound)."""

    def factory(self) -> SMTP:
        return _SMTP(self.handler, **self.SMTP_kwargs)

    def _trigger_server(self) -> None:
        assert isinstance(self.server, asyncio.Server)
        self.port = int(self.server.sockets[0].getsockname()[1])
        super()._trigger_server()  # type: ignore[no-untyped-call]  # aiosmtpd leaves it untyped


class SMTPServer:
    """A mail submission server on a free port of 127.0.0.1 (a context manager)."""

    def __init__(
        self,
        tls_dir: Path,
        *,
        user: str,
        password: str,
        offer_starttls: bool = True,
        implicit_tls: bool = False,
    ) -> None:
        self.user = user
        self.password = password
        self.messages: list[Received] = []
        self.logins: list[tuple[str, bool]] = []  # (login tried, accepted)
        self.on_message: Callable[[Received], None] | None = None
        self._saved_level = logging.NOTSET
        self.ca, cert, key = throwaway_ca(tls_dir)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        tls: dict[str, Any] = (
            {"ssl_context": context}  # TLS from the first byte (RFC 8314), as on port 465
            if implicit_tls
            else {"tls_context": context, "require_starttls": True}
            if offer_starttls
            else {}
        )
        self._controller = _Controller(
            self,
            hostname="127.0.0.1",
            port=0,
            server_hostname="smtp.govern.test",
            authenticator=self._authenticate,
            # Without STARTTLS, AUTH is offered in clear but not required (aiosmtpd warns
            # against requiring it there); with it, required, and only after STARTTLS.
            # Over implicit TLS, AUTH is offered (the link is TLS) but not required: aiosmtpd's
            # "require" knows STARTTLS only.
            auth_required=offer_starttls and not implicit_tls,
            auth_require_tls=offer_starttls and not implicit_tls,
            **tls,
        )

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self._controller.port)

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        if not isinstance(data, LoginPassword):
            return AuthResult(success=False, handled=False)
        login = data.login.decode("utf-8", "replace")
        accepted = login == self.user and data.password == self.password.encode()
        self.logins.append((login, accepted))
        return AuthResult(success=accepted, handled=False, auth_data=login)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """aiosmtpd's hook: record the message, call :attr:`on_message`, accept it."""
        content = envelope.original_content or b""
        received = Received(
            mail_from=str(envelope.mail_from),
            rcpt_tos=tuple(envelope.rcpt_tos),
            raw=content,
            tls=server.transport is not None
            and server.transport.get_extra_info("ssl_object") is not None,
            login=str(session.auth_data) if session.authenticated else None,
        )
        self.messages.append(received)
        if self.on_message is not None:
            self.on_message(received)
        return "250 Message accepted for delivery"

    def __enter__(self) -> Self:
        # aiosmtpd logs every line it reads at DEBUG (an AUTH line among them): the tests
        # look at what govern logs, not at what this server says.
        server_log = logging.getLogger("mail.log")
        self._saved_level = server_log.level
        server_log.setLevel(logging.WARNING)
        self._controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._controller.stop()
        finally:
            logging.getLogger("mail.log").setLevel(self._saved_level)
