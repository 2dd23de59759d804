"""Running the web app under uvicorn with every connection bounded.

uvicorn closes a kept-alive connection that stays idle, but holds a connection for as long as its
client takes to send a request: 3,000 clients sending one header byte a minute held 3,000
connections, and 600 sending a body one byte at a time held theirs for 70 s. :class:`HeaderTimeoutProtocol`
closes a connection whose request (line, headers and body) has not all arrived within
``LIMITS["header_timeout_s"]`` seconds of its opening (or of the first byte of its next request);
``LIMITS["keep_alive_s"]`` closes idle ones and past ``LIMITS["connections"]`` open connections
uvicorn answers 503. :func:`run_server` binds the socket itself, so ``--port 0`` can say which port it got.

Example:
    >>> run_server(create_app("storage"), "127.0.0.1", 8000)
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from defsentflow.limits import LIMITS

__all__ = ["HeaderTimeoutProtocol", "run_server", "server_config"]


_ARRIVING = (h11.IDLE, h11.SEND_BODY)  # the client's side while a request's head or body is on its way


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request (head and body) is not complete in time."""

    header_timeout: float = float(LIMITS["header_timeout_s"])

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._head_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.conn.their_state in _ARRIVING and not self.transport.is_closing():
            self.transport.close()  # the request never completed: nothing to answer

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:  # a request head is arriving (its first byte, or more of it)
            self._arm()
        super().data_received(data)
        if self.conn.their_state not in _ARRIVING:  # the whole request is in: the app answers it
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def server_config(app: Any, host: str, port: int, **kwargs: Any) -> uvicorn.Config:
    """uvicorn's config for ``app`` with the bounded protocol, keep-alive and connection limits."""
    return uvicorn.Config(app, host=host, port=port, log_level="warning", http=HeaderTimeoutProtocol,
                          timeout_keep_alive=LIMITS["keep_alive_s"], limit_concurrency=LIMITS["connections"], **kwargs)


def run_server(app: Any, host: str, port: int, on_listening: Callable[[int], None] | None = None) -> None:
    """Serve ``app`` until interrupted (Ctrl-C, SIGTERM). The socket is bound here first (a busy port is
    an ``OSError`` before anything is printed); ``on_listening(port)`` then gets the port bound, the
    one the system chose for port 0."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror} (choose another --port)") from None
    sock.set_inheritable(True)
    if on_listening is not None:
        on_listening(sock.getsockname()[1])
    uvicorn.Server(server_config(app, host, sock.getsockname()[1])).run(sockets=[sock])
