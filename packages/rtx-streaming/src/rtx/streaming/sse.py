"""sse_stream: a blocking iterator of text pieces served as Server-Sent Events.

The iterator (a model generating tokens) runs in its own thread; the event loop only sends. Between
them a window of `queue_size` pieces gives backpressure: the producer blocks once it is that many
pieces ahead of what has been handed to the server, so a slow client slows generation down instead
of piling text up in memory. When the client goes away (the server cancels the response, or a send
fails) the producer is told to stop: it checks before every next piece, so generation ends within
one token and its thread exits, closing the iterator (a generator's `finally` runs).

Events, one `data:` line each (JSON, UTF-8):
    data: {"index": 0, "text": "Once"}
    ...
    data: {"finish_reason": "stop" | "length" | "cancelled" | "error", "text": "<all the text>"}
    data: [DONE]
An error raised by the iterator becomes the final event (finish_reason "error", plus "error": the
message), since the response status (200) has already been sent. While no piece comes for
`ping_interval` seconds, an SSE comment (`: ping`) keeps proxies from closing the idle connection.
"""
from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from starlette.responses import StreamingResponse

from rtx.streaming.generators import finish_reason_of

__all__ = ["sse_stream", "SSEResponse", "FINISH_REASONS"]

FINISH_REASONS = ("stop", "length", "cancelled", "error")
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no-buffering hint for nginx
_log = logging.getLogger("rtx.streaming")


def sse_stream(request, make_iterator: Callable[[], Iterable[str]] | Iterable[str], *, queue_size: int = 8,
               ping_interval: float = 15.0, timeout: float | None = None) -> SSEResponse:
    """A Starlette response streaming the pieces of `make_iterator()` as Server-Sent Events.

    request: the Starlette Request (used to notice a client that has gone while the producer is slow).
    make_iterator: a callable returning an iterator of str pieces (or the iterable itself). It is
        called here, at once, so a ValueError/TypeError for bad parameters raises from sse_stream
        before any byte is sent (answer it with a 400); the iteration runs in a worker thread.
        The iterator may say why it ended: a generator's return value ("stop" or "length"), or a
        `finish_reason` attribute on the iterator; default "stop".
    queue_size: how many pieces the producer may run ahead of the sender (>= 1).
    timeout: seconds after which generation is stopped and the stream ends with finish_reason
        "cancelled" (None: no limit)."""
    if not callable(getattr(request, "is_disconnected", None)):  # used mid-stream: fail now, not at a ping
        raise TypeError(f"sse_stream: request must be the Starlette Request, got {type(request).__name__}")
    if isinstance(queue_size, bool) or not isinstance(queue_size, int) or queue_size < 1:
        raise ValueError(f"sse_stream: queue_size must be an int >= 1, got {queue_size!r}")
    if not _seconds(ping_interval):
        raise ValueError(f"sse_stream: ping_interval must be a number > 0 (seconds), got {ping_interval!r}")
    if timeout is not None and not _seconds(timeout):
        raise ValueError(f"sse_stream: timeout must be None or a number > 0 (seconds), got {timeout!r}")
    source = make_iterator() if callable(make_iterator) else make_iterator
    if isinstance(source, (str, bytes)) or not isinstance(source, Iterable):
        raise TypeError(f"sse_stream: make_iterator must return an iterator of str pieces, got "
                        f"{type(source).__name__}")
    return SSEResponse(request, iter(source), queue_size, ping_interval, timeout)


class SSEResponse(StreamingResponse):
    """The response sse_stream returns. `producer` is the generation thread (None until streaming
    starts); `stopped` is set once the producer has been told to stop or has finished."""

    def __init__(self, request, iterator: Iterator[str], queue_size: int, ping_interval: float,
                 timeout: float | None):
        self._request, self._iterator, self._ping, self._timeout = request, iterator, ping_interval, timeout
        self._window = _Window(queue_size)
        self.producer: threading.Thread | None = None
        super().__init__(self._events(), media_type="text/event-stream", headers=SSE_HEADERS)

    @property
    def stopped(self) -> bool:
        return self._window.stopped

    async def __call__(self, scope, receive, send):
        try:
            await super().__call__(scope, receive, send)
        finally:
            # Whatever ended the response (done, client gone and the send cancelled, a failed send,
            # server shutdown), the producer must not run on: stop it here, deterministically,
            # rather than when the suspended body generator happens to be finalised.
            self._window.stop()
            if self.producer is None:
                _close(self._iterator)  # never started: still release what the iterator holds

    async def _events(self):
        loop = asyncio.get_running_loop()
        items: deque = deque()     # filled by the producer thread; bounded by the window
        ready = asyncio.Event()    # set (on the loop) after each append

        def push(item):  # from the producer thread
            items.append(item)
            try:
                loop.call_soon_threadsafe(ready.set)
            except RuntimeError:  # the loop is closed (server shut down): nobody is listening
                self._window.stop()

        self.producer = threading.Thread(target=_produce, args=(self._iterator, self._window, push),
                                         name="rtx-sse-producer", daemon=True)
        self.producer.start()
        deadline = None if self._timeout is None else loop.time() + self._timeout
        pieces: list[str] = []
        final = None
        try:
            while final is None:
                if deadline is not None and loop.time() >= deadline:  # also when pieces never stop coming
                    final = {"finish_reason": "cancelled"}
                    break
                ready.clear()
                if not items:  # checked after clear(): an append after this check sets `ready` again
                    wait = self._ping if deadline is None else max(0.0, min(self._ping, deadline - loop.time()))
                    try:
                        await asyncio.wait_for(ready.wait(), wait)
                    except TimeoutError:
                        if deadline is None or loop.time() < deadline:
                            if await self._request.is_disconnected():
                                return
                            yield b": ping\n\n"
                    continue
                # everything queued goes out in one send: fewer writes when the producer is fast
                chunk = []
                while items and final is None:
                    kind, payload = items.popleft()
                    if kind == "piece":
                        chunk.append(_event({"index": len(pieces), "text": payload}))
                        pieces.append(payload)
                    elif kind == "end":
                        final = {"finish_reason": payload}
                    else:
                        final = {"finish_reason": "error", "error": payload}
                if chunk:
                    yield b"".join(chunk)
                    self._window.release(len(chunk))  # sent: the producer may run that much further
            self._window.stop()
            yield _event({**final, "text": "".join(pieces)})
            yield b"data: [DONE]\n\n"
        finally:
            self._window.stop()


class _Window:
    """How many pieces the producer may still put out before the sender catches up; stop() wakes a
    blocked producer at once."""

    def __init__(self, size: int):
        self._cond = threading.Condition()
        self._free = size
        self.stopped = False

    def acquire(self) -> bool:
        """Wait for a free slot; False once stopped."""
        with self._cond:
            while self._free == 0 and not self.stopped:
                self._cond.wait()
            if self.stopped:
                return False
            self._free -= 1
            return True

    def release(self, n: int = 1) -> None:
        with self._cond:
            self._free += n
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self.stopped = True
            self._cond.notify_all()


def _produce(iterator: Iterator[str], window: _Window, push) -> None:
    """The producer thread: pull pieces until the iterator ends, fails, or the window is stopped."""
    try:
        while not window.stopped:
            try:
                piece = next(iterator)
            except StopIteration as end:
                push(("end", finish_reason_of(end.value, iterator)))
                return
            if not isinstance(piece, str):
                raise TypeError(f"the text iterator yielded {type(piece).__name__}, expected str pieces")
            if not window.acquire():
                return
            push(("piece", _valid_utf8(piece)))
    except Exception as e:  # the stream has started: report it in the final event, not as a 500
        _log.exception("sse_stream: the text iterator failed")
        push(("error", f"{type(e).__name__}: {e}"))
    except BaseException as e:  # noqa: BLE001 - this thread ends here either way
        # SystemExit, KeyboardInterrupt, a stray asyncio.CancelledError: without a final item the
        # sender would wait (and ping) forever. Re-raising would only print it (a worker thread).
        _log.exception("sse_stream: the text iterator raised %s", type(e).__name__)
        push(("error", f"{type(e).__name__}: {e}"))
    finally:
        window.stop()
        _close(iterator)


def _valid_utf8(piece: str) -> str:
    # A lone surrogate (a tokenizer decoding half a character with errors="surrogateescape") cannot
    # be encoded as UTF-8: it would crash the sender mid-stream. Replace it, as errors="replace" does.
    try:
        piece.encode("utf-8")
        return piece
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in piece)


def _seconds(value) -> bool:
    """True for a number of seconds > 0 (not a bool, not NaN)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _close(iterator) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # closing is best effort: the stream is over either way
            _log.exception("sse_stream: closing the text iterator failed")


def _event(obj) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"
