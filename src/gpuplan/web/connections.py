"""The server's connections: one that has not sent a whole request head within :data:`HEAD_TIMEOUT_S` of opening (or
of its last answer) is closed.

uvicorn counts every open connection against ``limit_concurrency`` (``gpuplan serve``'s 256) and answers 503 beyond
it, but it gives a new connection no time limit to send its request's head (its ``timeout_keep_alive`` starts only
after a response, and any byte stops it). So 256 connections left open with nothing sent, or with half a head,
made the page answer 503 to every other request for as long as they stayed (session 18's security audit: 260 idle
sockets, 503 for the 70 s measured). The request's body has its own bound (:class:`.guard.BoundedBody`).
"""

from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_S = 10.0  # as guard.BODY_TIMEOUT_S: a browser sends a head in one packet


class TimedHeads(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request head (``uvicorn.run(..., http=TimedHeads)``)."""

    _head = None  # the timer closing the connection unless a whole head arrives

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._disarm()  # the next head's time starts at this answer's end
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _follow(self) -> None:
        """Timed while h11 waits for a request's head (IDLE); not while a body comes in or the answer is made."""
        if self.conn.their_state is not h11.IDLE:
            self._disarm()
        elif self._head is None:
            self._arm()

    def _arm(self) -> None:
        self._head = self.loop.call_later(HEAD_TIMEOUT_S, self._late)

    def _disarm(self) -> None:
        if self._head is not None:
            self._head.cancel()
            self._head = None

    def _late(self) -> None:
        self._head = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()
