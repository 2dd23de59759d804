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
import errno
import socket
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from defsentflow.limits import LIMITS

__all__ = ["HeaderTimeoutProtocol", "PortInUseError", "listen", "run_server", "server_config"]


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


class PortInUseError(OSError):
    """The address to listen on is taken (another server on the port)."""


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``(host, port)`` and listening, as uvicorn makes one (``port`` 0: a free
    port), so a port in use is known before anything says it serves.

    Raises:
        PortInUseError: the port is taken; one line naming it and ``--port``.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(exc.errno, f"port {port} on {host} is in use (another server?): stop it, or "
                                            f"choose another port with --port N (--port 0: any free port)") from None
        raise
    sock.listen(2048)  # uvicorn's backlog: a client that connects before the app has started waits, not refused
    return sock


def run_server(app: Any, host: str, port: int, sock: socket.socket | None = None) -> None:
    """Serve ``app`` until interrupted (Ctrl-C, SIGTERM), on ``sock`` when given (:func:`listen`)."""
    uvicorn.Server(server_config(app, host, port)).run(sockets=[sock] if sock is not None else None)
