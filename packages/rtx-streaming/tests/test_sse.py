"""sse_stream against a real uvicorn server on a free loopback port, read with httpx (and a raw socket
for the slow reader), over fake text sources that count what they produced."""
import contextlib
import json
import socket
import threading
import time

import pytest

uvicorn = pytest.importorskip("uvicorn")
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from rtx.streaming import sse_stream  # noqa: E402


class Source:
    """A blocking text iterator that counts what it produced and notices being closed."""

    def __init__(self, n=10**9, delay=0.0, piece="tok ", fail_at=None, returns="length", first_delay=0.0):
        self.n, self.delay, self.piece, self.fail_at, self.returns = n, delay, piece, fail_at, returns
        self.first_delay = first_delay
        self.produced = 0
        self.closed = threading.Event()

    def __call__(self):
        try:
            time.sleep(self.first_delay)
            for i in range(self.n):
                if self.delay:
                    time.sleep(self.delay)
                if i == self.fail_at:
                    raise RuntimeError(f"model exploded at piece {i}")
                self.produced += 1
                yield self.piece if isinstance(self.piece, str) else self.piece(i)
            return self.returns
        finally:
            self.closed.set()


class StreamApp:
    """POST /stream answers sse_stream(request, self.source, **self.options); the responses are kept."""

    def __init__(self):
        self.source, self.options, self.responses = None, {}, []

        async def stream(request):
            try:
                response = sse_stream(request, self.source, **self.options)
            except (ValueError, TypeError) as e:
                return JSONResponse({"error": str(e)}, status_code=400)
            self.responses.append(response)
            return response

        self.app = Starlette(routes=[Route("/stream", stream, methods=["POST"])])


@contextlib.contextmanager
def serve(app):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", port
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def server():
    app = StreamApp()
    with serve(app.app) as (url, port):
        app.url, app.port = url, port
        yield app


def parse_events(lines):
    """The `data:` payloads of an SSE stream (JSON decoded, except [DONE]); comments skipped."""
    out = []
    for line in lines:
        if line.startswith("data: "):
            payload = line[len("data: "):]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def wait_stalled(source, quiet=0.3, timeout=10.0):
    """Wait until source.produced has not changed for `quiet` seconds; return it."""
    deadline = time.monotonic() + timeout
    last, since = source.produced, time.monotonic()
    while time.monotonic() - since < quiet:
        assert time.monotonic() < deadline, "the producer never stalled"
        time.sleep(0.02)
        if source.produced != last:
            last, since = source.produced, time.monotonic()
    return last


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


httpx = pytest.importorskip("httpx")


def post_stream(app, source, **options):
    """Run one stream to the end: (response, events)."""
    app.source, app.options = source, options
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", app.url + "/stream", json={}) as r:
            lines = list(r.iter_lines())
    return r, parse_events(lines)


def test_events_headers_and_final_text(server):
    pieces = ["Once", " upon", " a time,\n", ' "quoted"', " café ☕ 東京", ""]
    r, events = post_stream(server, Source(n=len(pieces), piece=lambda i: pieces[i], returns="length"))
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert r.headers["cache-control"] == "no-cache" and r.headers["x-accel-buffering"] == "no"
    assert events[:-2] == [{"index": i, "text": p} for i, p in enumerate(pieces)]
    assert events[-2] == {"finish_reason": "length", "text": "".join(pieces)}
    assert events[-1] == "[DONE]"


def test_finish_reason_defaults_to_stop_and_can_come_from_an_attribute(server):
    _, events = post_stream(server, Source(n=3, returns=None))
    assert events[-2] == {"finish_reason": "stop", "text": "tok tok tok "}

    class Pieces:
        finish_reason = "length"

        def __init__(self):
            self.left = ["a", "b"]

        def __iter__(self):
            return self

        def __next__(self):
            if not self.left:
                raise StopIteration
            return self.left.pop(0)

    _, events = post_stream(server, Pieces)
    assert events[-2] == {"finish_reason": "length", "text": "ab"}


def test_producer_error_becomes_the_final_event(server):
    source = Source(n=10, fail_at=3)
    r, events = post_stream(server, source)
    assert r.status_code == 200                   # the status went out with the first byte
    assert events[:3] == [{"index": i, "text": "tok "} for i in range(3)]
    assert events[3] == {"finish_reason": "error", "error": "RuntimeError: model exploded at piece 3",
                         "text": "tok " * 3}
    assert events[4] == "[DONE]" and len(events) == 5
    assert source.closed.is_set()


@pytest.mark.parametrize("bad, message", [
    (lambda: iter([b"bytes"]), "yielded bytes, expected str pieces"),
    (Source(n=2, returns="eos"), "finish_reason 'eos'; expected 'stop' or 'length'")])
def test_bad_pieces_and_reasons_are_reported(server, bad, message):
    _, events = post_stream(server, bad)
    assert events[-2]["finish_reason"] == "error" and message in events[-2]["error"]


def test_bad_arguments_raise_before_streaming(server):
    def refuse():
        raise ValueError("temperature must be >= 0, got -1")

    for source, options, message in [(refuse, {}, "temperature must be >= 0"),
                                     (Source(n=1), {"queue_size": 0}, "queue_size must be an int >= 1, got 0"),
                                     (lambda: "a string", {}, "iterator of str pieces, got str"),
                                     (lambda: 42, {}, "iterator of str pieces, got int"),
                                     (Source(n=1), {"timeout": -1}, "timeout must be None or a number > 0")]:
        server.source, server.options = source, options
        r = httpx.post(server.url + "/stream", json={}, timeout=10)
        assert r.status_code == 400 and message in r.json()["error"], (r.status_code, r.text)


def test_client_disconnect_stops_the_producer_within_a_token(server):
    source = Source(delay=0.01)                  # endless, a token every 10 ms
    server.source, server.options = source, {}
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", server.url + "/stream", json={}) as r:
            lines = r.iter_lines()
            got = [line for line, _ in zip(lines, range(10))]
            assert sum(line.startswith("data: ") for line in got) >= 4
    # the client closed the connection: generation must stop and its thread end
    assert source.closed.wait(5), "the producer was not stopped after the client disconnected"
    response = server.responses[-1]
    response.producer.join(5)
    assert not response.producer.is_alive() and response.stopped
    stopped_at = source.produced
    time.sleep(0.2)                              # 20 tokens' worth: none may come
    assert source.produced == stopped_at


def test_disconnect_while_the_producer_is_blocked_on_a_full_queue(server):
    # a stalled reader fills the socket buffers and the window; a disconnect must still wake the producer
    source = Source(piece="x" * 65536)
    server.source, server.options = source, {"queue_size": 2}
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(b"POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        assert wait_until(lambda: source.produced > 0)
        wait_stalled(source)
        window = server.responses[-1]._window
        assert wait_until(lambda: window._free == 0), "the window never filled"   # the producer waits in acquire()
        assert not source.closed.is_set()
    assert source.closed.wait(5), "the blocked producer was not released by the disconnect"
    server.responses[-1].producer.join(5)
    assert not server.responses[-1].producer.is_alive()


def test_backpressure_the_producer_waits_for_a_slow_reader(server):
    piece_bytes = 256 * 1024
    queue_size = 4
    source = Source(n=200, piece=lambda i: f"{i:08d}" + "y" * (piece_bytes - 8))
    server.source, server.options = source, {"queue_size": queue_size}
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        assert wait_until(lambda: source.produced > 0)
        stalled = wait_stalled(source, quiet=0.5)  # the reader reads nothing: buffers fill, then the producer waits
        # ahead by the window plus what the kernel's socket buffers hold (a few MB on loopback), far from all 200
        assert stalled <= queue_size + 1 + (8 << 20) // piece_bytes, stalled
        # now read everything: the stall was backpressure, not a deadlock, and nothing was lost or reordered
        s.settimeout(30)
        data = bytearray()
        while chunk := s.recv(1 << 20):
            data += chunk
    body = data.split(b"\r\n\r\n", 1)[1].decode()
    events = parse_events(line for line in body.splitlines() if line.startswith("data: "))
    assert [e["index"] for e in events[:-2]] == list(range(200))
    assert [int(e["text"][:8]) for e in events[:-2]] == list(range(200))
    assert events[-2]["finish_reason"] == "length" and events[-1] == "[DONE]"


@pytest.mark.parametrize("delay", [0.02, 0.0])
def test_timeout_cancels_generation(server, delay):
    source = Source(delay=delay)                 # endless: slow, or never leaving the queue empty
    start = time.monotonic()
    r, events = post_stream(server, source, timeout=0.3)
    assert time.monotonic() - start < 10
    assert events[-2]["finish_reason"] == "cancelled" and events[-1] == "[DONE]"
    assert events[-2]["text"] == "tok " * (len(events) - 2)
    assert source.closed.wait(5)


def test_idle_stream_sends_pings(server):
    server.source, server.options = Source(n=2, first_delay=0.4), {"ping_interval": 0.05}
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", server.url + "/stream", json={}) as r:
            lines = list(r.iter_lines())
    assert lines.count(": ping") >= 3
    assert parse_events(lines)[-2] == {"finish_reason": "length", "text": "tok tok "}


def test_concurrent_streams_are_independent(server):
    import concurrent.futures

    def tagged(k):
        return lambda i: f"{k}:{i} "

    sources = [Source(n=20, delay=0.005, piece=tagged(k)) for k in range(4)]
    taken = iter(sources)
    lock = threading.Lock()

    def make():                                  # each request gets the next source
        with lock:
            return next(taken)()

    server.source, server.options = make, {}

    def read(_):
        with httpx.Client(timeout=30) as client:
            with client.stream("POST", server.url + "/stream", json={}) as r:
                return parse_events(list(r.iter_lines()))

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(read, range(4)))
    finals = sorted(events[-2]["text"] for events in results)
    assert finals == sorted("".join(f"{k}:{i} " for i in range(20)) for k in range(4))


def run_asgi(response, on_body):
    """Drive `response` as an ASGI server would, without a network: `await on_body(n, disconnect)` runs
    before each body chunk is accepted (n: the pieces accepted so far; a chunk may carry several),
    so the test decides how slow the "client" is; disconnect() makes receive() report
    http.disconnect. Returns the body accepted."""
    import asyncio

    chunks = []

    async def main():
        disconnected = asyncio.Event()

        async def receive():
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            if message["type"] == "http.response.body":
                await on_body(sum(c.count(b'data: {"index"') for c in chunks), disconnected.set)
                chunks.append(message["body"])

        await response({"type": "http", "asgi": {"spec_version": "2.3"}, "method": "POST", "path": "/stream",
                        "headers": []}, receive, send)

    asyncio.run(main())
    return b"".join(chunks)


def test_disconnect_stops_generation_within_one_token():
    import asyncio

    from starlette.requests import Request

    source = Source(delay=0.03)                  # endless, slow: the window (8) never fills
    response = sse_stream(Request({"type": "http", "headers": []}), source, queue_size=8)
    at_disconnect = []

    async def client(sent, disconnect):
        if sent >= 5 and not at_disconnect:
            at_disconnect.append(source.produced)
            disconnect()                         # the client is gone: this send never completes
            await asyncio.sleep(3600)

    run_asgi(response, client)                   # returns once the disconnect cancelled the response
    assert response.stopped
    response.producer.join(5)
    assert not response.producer.is_alive() and source.closed.is_set()
    assert source.produced <= at_disconnect[0] + 1, (at_disconnect, source.produced)


@pytest.mark.parametrize("queue_size", [1, 3, 8])
def test_backpressure_exactly_queue_size_ahead_of_the_sender(queue_size):
    import asyncio

    from starlette.requests import Request

    source = Source(n=40)
    response = sse_stream(Request({"type": "http", "headers": []}), source, queue_size=queue_size)
    lead = []

    async def slow_client(sent, disconnect):
        await asyncio.sleep(0.05 if len(lead) % 3 == 0 else 0.002)   # now and then a long pause: the producer
        # catches up and blocks
        lead.append(source.produced - sent)

    body = run_asgi(response, slow_client)
    # produced but not yet accepted by the client: the window, plus the one piece in the producer's hand
    assert max(lead) == queue_size + 1, (queue_size, lead)
    events = parse_events(body.decode().splitlines())
    assert [e["index"] for e in events[:-2]] == list(range(40)) and events[-1] == "[DONE]"


# --- regressions found in review ----------------------------------------------------------------

def test_empty_and_immediately_failing_iterators(server):
    def empty():
        return
        yield

    def fails_at_once():
        raise RuntimeError("no model")
        yield

    _, events = post_stream(server, empty)
    assert events == [{"finish_reason": "stop", "text": ""}, "[DONE]"]
    _, events = post_stream(server, fails_at_once)
    assert events == [{"finish_reason": "error", "error": "RuntimeError: no model", "text": ""}, "[DONE]"]


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt(), __import__("asyncio").CancelledError()])
def test_a_base_exception_in_the_producer_ends_the_stream(server, exc):
    # Only Exception was caught: with a BaseException no final item came and the sender pinged forever.
    def source():
        yield "a"
        raise exc

    server.options = {"ping_interval": 0.05}
    start = time.monotonic()
    _, events = post_stream(server, source, ping_interval=0.05)
    assert time.monotonic() - start < 10
    assert events[0] == {"index": 0, "text": "a"} and events[-1] == "[DONE]"
    assert events[-2]["finish_reason"] == "error" and events[-2]["error"].startswith(type(exc).__name__)


def test_lone_surrogates_are_replaced_not_a_crash_mid_stream(server):
    # "bad\udcff".encode() raised UnicodeEncodeError on the event loop: the connection just dropped.
    r, events = post_stream(server, lambda: iter(["ok", "bad\udcff", "end"]))
    assert [e["text"] for e in events[:3]] == ["ok", "bad\ufffd", "end"]
    assert events[3] == {"finish_reason": "stop", "text": "okbad\ufffdend"} and events[4] == "[DONE]"


@pytest.mark.parametrize("options, message", [
    ({"ping_interval": "5"}, "ping_interval must be a number > 0"),
    ({"timeout": True}, "timeout must be None or a number"),
    ({"timeout": "1"}, "timeout must be None or a number"),
    ({"ping_interval": float("nan")}, "ping_interval")])
def test_timing_arguments_must_be_numbers(options, message):
    from starlette.requests import Request

    with pytest.raises(ValueError, match=message):
        sse_stream(Request({"type": "http", "headers": []}), lambda: iter(["a"]), **options)


def test_request_must_be_a_request():
    # it was only used at the first ping, so a wrong one broke the stream after ping_interval seconds
    with pytest.raises(TypeError, match="request must be the Starlette Request, got NoneType"):
        sse_stream(None, lambda: iter(["a"]))


def test_many_concurrent_streams_with_disconnects_leave_no_threads(server):
    import concurrent.futures

    n = 24
    sources = [Source(delay=0.002) for _ in range(n)]   # endless
    taken = iter(sources)
    lock = threading.Lock()

    def make():
        with lock:
            return next(taken)()

    server.source, server.options = make, {"queue_size": 2}
    before = len(server.responses)

    def read_then_leave(k):
        with httpx.Client(timeout=30) as client:
            with client.stream("POST", server.url + "/stream", json={}) as r:
                got = 0
                for line in r.iter_lines():
                    got += line.startswith("data: ")
                    if got >= 3 + k % 5:
                        break
        return got

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert all(g >= 3 for g in pool.map(read_then_leave, range(n)))
    responses = server.responses[before:]
    assert len(responses) == n
    assert all(s.closed.wait(10) for s in sources), "a producer was not stopped"
    for response in responses:
        response.producer.join(5)
        assert not response.producer.is_alive()
    assert not any(t.name == "rtx-sse-producer" for t in threading.enumerate())
