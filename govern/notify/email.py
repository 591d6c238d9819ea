"""Reminders and digests by email: SMTP with STARTTLS (RFC 3207) or implicit TLS
(RFC 8314, port 465), and AUTH (RFC 4954).

Notes: docs/internals.md#notify.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import smtplib
import socket
import ssl
import threading
from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, parseaddr
from typing import TYPE_CHECKING, Any

from govern.errors import NotifyAuthError, NotifyError, NotifyUnavailable
from govern.notify.base import Message, Skipped
from govern.redact import scrub

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["EmailNotifier", "message_id"]

PLAINTEXT_WARNING = "without TLS: starttls = false"


class _Line:
    """The SMTP connection as the event loop sees it, so that a deadline can end it.

    smtplib's timeout bounds each socket operation, and a server trickling a byte at a
    time holds a conversation for ever. When the deadline passes, :meth:`abandon` shuts
    the connection down (a blocked read in the thread returns at once), and from then on
    the thread says nothing more to the server.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None  # a duplicate: shut down, it ends the TCP link
        self._abandoned = False
        self.sending = False  # the mail is going out: a broken line may come after it was taken

    def watch(self, sock: socket.socket | None) -> None:
        """Called before each reply is read: the connection to end at the deadline."""
        with self._lock:
            if self._socket is None and sock is not None:
                self._socket = socket.socket(fileno=os.dup(sock.fileno()))
            self._check()

    def check(self) -> None:
        """Called before each command is sent: nothing more once abandoned."""
        with self._lock:
            self._check()

    def begin_sending(self) -> None:
        """The mail is about to go: refused once abandoned, else marked as going."""
        with self._lock:
            self._check()
            self.sending = True

    def _check(self) -> None:
        if self._abandoned:
            if self._socket is not None:
                self._end()
            raise smtplib.SMTPServerDisconnected("the deadline passed")

    def abandon(self) -> bool:
        """End the conversation (the deadline passed); whether the mail was going out."""
        with self._lock:
            self._abandoned = True
            self._end()
            return self.sending

    def _end(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(OSError):  # closed already
                self._socket.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Close the duplicate (the thread is done with the connection)."""
        with self._lock:
            if self._socket is not None:
                self._socket.close()
                self._socket = None


class _Watched(smtplib.SMTP):
    """What both clients below share: every reply and every send is first checked against
    the :class:`_Line`'s deadline (smtplib's own timeout is per operation)."""

    line: _Line

    def getreply(self) -> tuple[int, bytes]:
        """The next reply, unless the deadline passed."""
        self.line.watch(self.sock)
        return super().getreply()

    def send(self, s: ReadableBuffer | str) -> None:
        """Send ``s``, unless the deadline passed."""
        self.line.check()
        super().send(s)


class _SMTP(_Watched):
    """smtplib's client that lets its :class:`_Line` end it."""

    def __init__(self, line: _Line, host: str, port: int, *, timeout: float) -> None:
        self.line = line
        super().__init__(host, port, timeout=timeout)


class _SMTPSSL(_Watched, smtplib.SMTP_SSL):
    """smtplib's implicit-TLS client that lets its :class:`_Line` end it."""

    def __init__(
        self, line: _Line, host: str, port: int, *, timeout: float, context: ssl.SSLContext
    ) -> None:
        self.line = line
        smtplib.SMTP_SSL.__init__(self, host, port, timeout=timeout, context=context)


def message_id(key: str, sender: str) -> str:
    """``<govern.{hash of key}@{the sender's domain}>``: the same key, the same id."""
    domain = parseaddr(sender)[1].rpartition("@")[2] or "govern.invalid"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    return f"<govern.{digest}@{domain}>"


class EmailNotifier:
    """Mails ``recipients`` from ``sender`` through ``host:port``; ``user`` and ``password``
    (from the environment) log in after STARTTLS."""

    name = "email"

    def __init__(
        self,
        *,
        host: str,
        port: int,
        sender: str,
        recipients: Sequence[str],
        user: str | None = None,
        password: str | None = None,
        starttls: bool = True,
        implicit_tls: bool = False,
        cafile: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.host = host
        self.port = port
        self.sender = sender
        self.recipients = tuple(recipients)
        self.user = user
        self._password = password
        self.implicit_tls = implicit_tls
        self.starttls = starttls or implicit_tls
        self.cafile = cafile
        self.timeout = timeout

    def __repr__(self) -> str:
        """``EmailNotifier('smtp.example.org:587')``: never the password."""
        return f"EmailNotifier({f'{self.host}:{self.port}'!r})"

    def target(self, message: Message) -> str | Skipped:
        """The recipients (and, without STARTTLS, a warning that says so)."""
        shown = ", ".join(self.recipients)
        return shown if self.starttls else f"{shown} ({PLAINTEXT_WARNING})"

    def compose(self, message: Message) -> EmailMessage:
        """The mail: Subject, From, To, a Message-ID from the key, the text as its body."""
        mail = EmailMessage()
        mail["Subject"] = message.subject
        mail["From"] = self.sender
        mail["To"] = ", ".join(self.recipients)
        mail["Date"] = formatdate(usegmt=True)
        mail["Message-ID"] = message_id(message.key, self.sender)
        mail["Auto-Submitted"] = "auto-generated"  # RFC 3834: no auto-replies to it
        mail.set_content(message.text)
        return mail

    async def send(self, message: Message) -> dict[str, Any]:
        """Send the mail; the Message-ID, and the recipients the server refused (if some)."""
        try:
            mail = self.compose(message)
        except (ValueError, TypeError) as exc:  # a header that cannot be written (CR, LF)
            raise NotifyError(
                f"{self._where()}: the mail cannot be written: {type(exc).__name__}",
                tip="Check smtp-from and smtp-to in [tool.govern.notify]: one address each, "
                "on one line.",
            ) from None
        refused = await self._converse(mail)
        answer: dict[str, Any] = {
            "message_id": mail["Message-ID"],
            "to": list(self.recipients),
        }
        if refused:
            answer["refused"] = sorted(refused)
        if not self.starttls:
            answer["warning"] = PLAINTEXT_WARNING
        return answer

    async def _converse(self, mail: EmailMessage) -> dict[str, Any]:
        """The conversation in a thread, ended at the deadline (``timeout`` in all)."""
        line = _Line()
        job = asyncio.ensure_future(asyncio.to_thread(self._deliver, mail, line))
        try:
            async with asyncio.timeout(self.timeout):
                return await asyncio.shield(job)
        except TimeoutError:
            was_sending = line.abandon()
            # The thread's blocked read ends with the connection: wait for it, briefly
            # (a TLS handshake may hold it up to one socket timeout more).
            await asyncio.wait({job}, timeout=1.0)
            job.add_done_callback(_retrieved)
            if job.done() and not job.cancelled() and job.exception() is None:
                return job.result()  # it did end, just in time
            raise NotifyUnavailable(
                f"{self._where()}: no answer within {self.timeout:g} s",
                maybe_sent=was_sending,
            ) from None
        finally:
            if job.done():
                line.close()
            else:
                job.add_done_callback(lambda _: line.close())

    def _where(self) -> str:
        return f"smtp {self.host}:{self.port}"

    def _scrub(self, text: str) -> str:
        return scrub(text, (self._password or "",))

    def _deliver(self, mail: EmailMessage, line: _Line) -> dict[str, Any]:
        """The SMTP conversation (blocking; ``line`` ends it at the deadline); errors
        translated to the notifier's."""
        where = self._where()
        try:
            context = ssl.create_default_context(cafile=self.cafile)
        except OSError as exc:  # the cafile is missing or not PEM
            raise NotifyError(
                f"{where}: the CA file {self.cafile} cannot be used: {exc.strerror or exc}",
                tip="Point cafile at a PEM file with the CA that signed the server's certificate.",
            ) from None
        try:
            connect = (
                _SMTPSSL(line, self.host, self.port, timeout=self.timeout, context=context)
                if self.implicit_tls
                else _SMTP(line, self.host, self.port, timeout=self.timeout)
            )
            with connect as smtp:
                smtp.ehlo()
                if self.starttls and not self.implicit_tls:
                    if not smtp.has_extn("starttls"):
                        raise NotifyError(
                            f"{where} does not offer STARTTLS; nothing was sent",
                            tip="Use a server that offers STARTTLS, or (on a trusted network "
                            "only) set starttls = false in [tool.govern.notify].",
                        )
                    smtp.starttls(context=context)
                    smtp.ehlo()
                if self.user is not None:
                    smtp.login(self.user, self._password or "")
                line.begin_sending()  # from here a broken line may come after it was taken
                refused: dict[str, Any] = smtp.send_message(
                    mail, from_addr=parseaddr(self.sender)[1], to_addrs=self._addresses()
                )
                return refused
        except smtplib.SMTPAuthenticationError as exc:
            raise NotifyAuthError(
                f"{where} refused the login of {self.user}: {self._reply(exc)}",
                tip="Check the user and password the smtp-user-env and smtp-password-env "
                "variables hold.",
                status=exc.smtp_code,
            ) from None
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            said = "; ".join(
                f"{rcpt}: {code} {self._text(reply)}"
                for rcpt, (code, reply) in exc.recipients.items()
            )
            cls = NotifyUnavailable if any(400 <= c < 500 for c in codes) else NotifyError
            raise cls(f"{where} refused every recipient: {said}") from None
        except smtplib.SMTPResponseException as exc:
            cls = NotifyUnavailable if 400 <= exc.smtp_code < 500 else NotifyError
            raise cls(f"{where} answered {self._reply(exc)}", status=exc.smtp_code) from None
        except smtplib.SMTPNotSupportedError as exc:
            raise NotifyError(f"{where}: {self._scrub(str(exc))}") from None
        except smtplib.SMTPException as exc:  # disconnected, or an answer that is not SMTP
            said = self._scrub(str(exc)) or type(exc).__name__
            raise NotifyUnavailable(f"{where}: {said}", maybe_sent=line.sending) from None
        except ssl.SSLCertVerificationError as exc:
            raise NotifyError(
                f"{where}: the server's certificate is not trusted: {exc.verify_message}",
                tip="Set cafile in [tool.govern.notify] to the CA that signed it.",
            ) from None
        except ssl.SSLError as exc:
            tip = (
                'smtp-tls = "implicit" expects TLS from the first byte (port 465); a server '
                'that starts in clear and offers STARTTLS (port 587) wants smtp-tls = "starttls".'
                if self.implicit_tls
                else None
            )
            raise NotifyError(f"{where}: TLS failed: {exc.reason or exc}", tip=tip) from None
        except OSError as exc:  # refused, unreachable, timed out, a name that does not resolve
            said = exc.strerror or str(exc) or type(exc).__name__
            if line.sending:
                raise NotifyUnavailable(
                    f"{where}: the line broke while sending: {said}", maybe_sent=True
                ) from None
            raise NotifyUnavailable(f"{where} could not be reached: {said}") from None
        except UnicodeError:  # a host name IDNA cannot encode
            raise NotifyError(
                f"{where}: the host name cannot be used",
                tip="Check smtp-host in [tool.govern.notify].",
            ) from None

    def _addresses(self) -> list[str]:
        return [address for _, address in getaddresses(list(self.recipients)) if address]

    def _text(self, reply: bytes | str) -> str:
        text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else reply
        return self._scrub(" ".join(text.split()))[:300]

    def _reply(self, exc: smtplib.SMTPResponseException) -> str:
        return f"{exc.smtp_code} {self._text(exc.smtp_error)}"


def _retrieved(job: asyncio.Future[Any]) -> None:
    """Take a late thread's outcome, so that asyncio does not log it as never retrieved."""
    if not job.cancelled():
        job.exception()
