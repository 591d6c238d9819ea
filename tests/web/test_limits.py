"""What a client may send the dashboard: body size (on a real uvicorn server), token attempts.

The body tests talk HTTP/1.1 over a socket to uvicorn on 127.0.0.1, as a hostile client
would: a ``Content-Length`` far over the limit, and a chunked body that never ends.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from govern.store.db import Store
from govern.web.app import create_app
from govern.web.security import Secrets
from govern.web.state import AppState

SECRET = "whsec-limits-0123456789"
LIMIT = 64 * 1024


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[int, AppState]]:
    """The dashboard on uvicorn, on a free port of 127.0.0.1, with a 64 KiB body limit."""
    with Store(f"sqlite:///{tmp_path / 'govern.db'}") as store:
        state = AppState(store=store, secrets=Secrets(github_webhook_secret=SECRET), max_body=LIMIT)
        config = uvicorn.Config(
            create_app(state), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
        )
        running = uvicorn.Server(config)
        thread = threading.Thread(target=running.run, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while not running.started:
                assert time.monotonic() < deadline, "uvicorn did not start"
                time.sleep(0.01)
            port = running.servers[0].sockets[0].getsockname()[1]
            yield port, state
        finally:
            running.should_exit = True
            thread.join(10)


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _read_answer(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_a_declared_length_over_the_limit_is_413_before_any_byte_is_read(
    server: tuple[int, AppState],
) -> None:
    port, _ = server
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 300000000\r\n\r\n"
        )
        answer = _read_answer(sock)  # no body sent at all: the server must not wait for it
    assert _status(answer) == 413
    assert b"content-security-policy" in answer.lower()


def test_a_chunked_body_is_cut_at_the_limit_with_413(server: tuple[int, AppState]) -> None:
    port, _ = server
    chunk = b"x" * 65536
    framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    budget = 256 * 1024 * 1024  # what a client may try to push: far more than the limit
    sent = 0
    answer = b""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        sock.setblocking(False)
        while sent < budget:
            readable, writable, _ = select.select([sock], [sock], [], 5)
            if readable:
                break
            if not writable:
                continue
            try:
                sent += sock.send(framed)
            except (BlockingIOError, InterruptedError):
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
        sock.setblocking(True)
        sock.settimeout(10)
        answer = _read_answer(sock)
    elapsed = time.monotonic() - started
    assert answer, f"no answer after {sent} bytes"
    assert _status(answer) == 413
    # The server stopped reading at the limit: what the client got through is the limit
    # plus the sockets' buffers, never the whole body (the old server read it all, then 401).
    assert sent < 32 * 1024 * 1024, sent
    assert elapsed < 10
