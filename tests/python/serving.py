"""Helpers of the deg serve tests (test_server*.py, test_limits.py): a free
loopback port, waiting for /health, a deg.server.Server run on a uvicorn thread
for a module's tests, a POST on a raw socket (a client the test can hang up),
and the in-process greedy reference an HTTP chat answer must equal."""
import contextlib
import json
import socket
import threading
import time


def free_port():
    """A TCP port on 127.0.0.1 nothing listens on (as the kernel hands them out)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raw_post(url, path, body):
    """POST the JSON `body` to url + path on a raw socket and return the socket,
    its answer unread: close() it to make the client go away."""
    payload = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])))
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % (path.encode(), len(payload)) + payload)
    return sock


def wait_up(url, seconds, proc=None):
    """Return once GET url/health answers 200; AssertionError after `seconds`, or as
    soon as the server subprocess `proc` (if given) has exited (with its stderr)."""
    import httpx
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        assert proc is None or proc.poll() is None, proc.stderr.read().decode()
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not come up in {seconds} s")


@contextlib.contextmanager
def running(srv, seconds=60):
    """Serve the deg.server.Server `srv` on a free loopback port from a uvicorn thread;
    yields srv with srv.url set. On exit: uvicorn stopped, its thread joined, srv
    closed."""
    import uvicorn
    port = free_port()
    us = uvicorn.Server(uvicorn.Config(srv.app, host="127.0.0.1", port=port,
                                       log_level="warning"))
    th = threading.Thread(target=us.run, daemon=True)
    th.start()
    srv.url = f"http://127.0.0.1:{port}"
    try:
        wait_up(srv.url, seconds)
        yield srv
    finally:
        us.should_exit = True
        th.join(60)
        srv.close()


def reference_chat(model, messages, max_tokens, cartridge_trunk=None):
    """Greedy text from a fork of the same trunk, in-process (deg_forks_generate)."""
    from deg.selfstudy import chat_ids
    trunk = cartridge_trunk or model.trunk()
    f = trunk.fork()
    f.feed(chat_ids(model, messages))
    g = f.generate(max_tokens=max_tokens)
    f.close()
    if cartridge_trunk is None:
        trunk.close()
    return g.text
