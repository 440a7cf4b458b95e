"""The HTTP layer of deg serve (Starlette on uvicorn): routes, request bodies,
authentication, error shapes. Every model call goes to the Engine: its fill
workers or its chat thread.

Error shapes per route (§9, §9.1): one shape, OpenAI's
  {"error": {message, type, param, code}}, on every route but Jev's:
  /v1/fill             422/500 add "deg_error" (SchemaError, RequestError,
                       FillError, LimitError, ...) and "errors" [{loc, msg}]
                       (code = deg_error in snake case, param = the first loc)
  401, 413, 429        code invalid_api_key, request_too_large, rate_limit_exceeded
  /v1/systemone        Jev: 400 {"detail": ...}, 422 {"detail": [{type, loc, msg,
                       input}]}, 403 {"detail": "Not authenticated"} without a key
With an API key set, every route but /health needs `Authorization: Bearer KEY`
(401; 403 on /v1/systemone). A body over the limit is 413; more than
max_pending queued jobs is 429 with Retry-After.
"""
import asyncio
import contextlib
import hmac
import json
import re
import time

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .. import api as deg_api
from ..api import openai_decisions as api_decisions
from ..api import jev as api_systemone
from ..api.questions import ApiError
from ..errors import DegError, FillError, RequestError, SchemaError
from . import chat as chat_api
from .engine import ChatError, ChatJob, Overloaded

__all__ = ["build_app"]

class _Gone(Exception):
    """The client disconnected while its job waited (its work was cancelled)."""


_INPUT_ERRORS = deg_api.INPUT_ERRORS  # caused by the request's content: 4xx, others 500


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _fill_error(status, cls, message, errors):
    """A /v1/fill failure in the one error shape: code = deg's class in snake case
    (schema_error, request_error, fill_error, limit_error, ...), deg_error = the
    class name (deg.Client raises that class), errors = its [{loc, msg}] list
    (loc: RFC 6901 pointer into the request, as in-process deg.fill reports it),
    param = the first loc."""
    param = errors[0].get("loc") if errors and isinstance(errors[0], dict) else None
    return chat_api.openai_error(message, param or None, _snake(cls), status,
                                 "invalid_request_error" if status < 500 else "server_error",
                                 deg_error=cls, errors=list(errors))


_ETYPES = {401: "invalid_request_error", 413: "invalid_request_error",
           429: "rate_limit_error", 503: "server_error"}


def _shape(route):
    """(error constructor for 401/413/429 messages) per route: Jev's {"detail"} on
    /v1/systemone (§9.1), the OpenAI shape on every other route."""
    if route == "systemone":
        return lambda status, msg, code: ApiError(status, {"detail": msg})
    return lambda status, msg, code: chat_api.openai_error(msg, None, code, status,
                                                           _ETYPES.get(status, "server_error"))


class _Ctx:
    def __init__(self, engine, names, chat_targets, api_key, max_body):
        self.engine, self.names, self.chat_targets = engine, names, chat_targets
        self.api_key, self.max_body = api_key, max_body
        self.started = time.time()


def _check_auth(ctx, request, route):
    if not ctx.api_key:
        return
    h = request.headers.get("authorization", "")
    ok = h[:7].lower() == "bearer " and hmac.compare_digest(h[7:].strip().encode(),
                                                            ctx.api_key.encode())
    if ok:
        return
    if route == "systemone":
        raise ApiError(403, {"detail": "Not authenticated"})
    raise _shape(route)(401, "Incorrect or missing API key: send Authorization: Bearer <key>",
                        "invalid_api_key")


async def _body(ctx, request, route):
    """The JSON body, read up to the limit (413 beyond it)."""
    too_big = _shape(route)(413, f"request body exceeds {ctx.max_body} bytes",
                            "request_too_large")
    cl = request.headers.get("content-length")
    if cl and cl.isdigit() and int(cl) > ctx.max_body:
        raise too_big
    data = bytearray()
    async for part in request.stream():
        data += part
        if len(data) > ctx.max_body:
            raise too_big
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        msg = f"request body is not JSON: {e}"
        if route == "fill":
            raise _fill_error(422, "RequestError", msg, [{"loc": "", "msg": msg}])
        if route == "systemone":
            raise ApiError(422, {"detail": [{"type": "json_invalid", "loc": ["body", 0],
                                             "msg": "JSON decode error", "input": {}}]})
        raise chat_api.openai_error(msg)


async def _watch_disconnect(request):
    """Return once the client has gone away (the ASGI http.disconnect message;
    the body has been read, so receive() has nothing else to deliver)."""
    while True:
        msg = await request.receive()
        if msg.get("type") == "http.disconnect":
            return


async def _await_job(job, request, cancel):
    """Wait for a concurrent Future; cancel the job the moment the client goes away."""
    fut = asyncio.wrap_future(job.future)
    gone = asyncio.ensure_future(_watch_disconnect(request))
    try:
        done, _ = await asyncio.wait({fut, gone}, return_when=asyncio.FIRST_COMPLETED)
        if fut in done:
            return fut.result()
        cancel()
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved
        raise _Gone()
    finally:
        gone.cancel()


def _submit_fill(ctx, req, route):
    try:
        return ctx.engine.submit_fill(req)
    except Overloaded as e:
        err = _shape(route)(429, f"server busy: more than {ctx.engine.max_pending} jobs queued",
                            "rate_limit_exceeded")
        err.headers = {"Retry-After": str(e.retry_after)}
        raise err


def _handler(route, fn):
    async def endpoint(request):
        ctx = request.app.state.ctx
        try:
            _check_auth(ctx, request, route)
            return await fn(ctx, request)
        except ApiError as e:
            return JSONResponse(e.body, status_code=e.http_status, headers=e.headers)
        except _Gone:  # nobody reads it (499: nginx's "client closed request")
            return Response(status_code=499)
    return endpoint


async def fill_route(ctx, request):
    body = await _body(ctx, request, "fill")
    if isinstance(body, dict) and "model" in body and body["model"] not in ctx.names.aliases:
        msg = f"unknown model {body['model']!r} (accepted: {', '.join(ctx.names.aliases)})"
        raise _fill_error(422, "RequestError", msg, [{"loc": "/model", "msg": msg}])
    if not isinstance(body, dict):
        msg = "the request must be a JSON object {context, schema, model, options}"
        raise _fill_error(422, "RequestError", msg, [{"loc": "", "msg": msg}])
    req = dict(body)
    req["model"] = ctx.names.id
    try:  # libdeg checks the whole request (missing and unknown fields included)
        req = json.dumps(req, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError as e:
        msg = f"request is not valid JSON for deg: {e}"
        raise _fill_error(422, "RequestError", msg, [{"loc": "", "msg": msg}])
    job = _submit_fill(ctx, req, "fill")
    try:
        resp = await _await_job(job, request, job.cancel)
    except (SchemaError, RequestError) as e:
        raise _fill_error(422, type(e).__name__, str(e), getattr(e, "errors", []))
    except FillError as e:
        raise _fill_error(500, "FillError", str(e), getattr(e, "errors", []))
    except DegError as e:  # e.g. a byte the vocabulary has no token for (UnsupportedError)
        raise _fill_error(422 if isinstance(e, _INPUT_ERRORS) else 500, type(e).__name__,
                          str(e), [{"loc": "", "msg": str(e)}])
    return JSONResponse(resp)


def _decision_route(route, module, accepted):
    async def run(ctx, request):
        body = await _body(ctx, request, route)
        questions, req = module.parse(body, accepted(ctx.names))
        resp = None
        if req is not None:
            req["model"] = ctx.names.id
            job = _submit_fill(ctx, req, route)
            try:
                resp = await _await_job(job, request, job.cancel)
            except (SchemaError, RequestError) as e:
                raise module.fill_error(questions, e)
            except FillError as e:
                raise deg_api.fill_failed(module, e)
            except DegError as e:
                if not isinstance(e, _INPUT_ERRORS):
                    raise deg_api.fill_failed(module, e)
                raise module.fill_error(questions, e)
        return JSONResponse(module.response(questions, resp, ctx.names.id))
    return run


async def models_route(ctx, request):
    created = int(ctx.started)
    names = list(dict.fromkeys(ctx.names.aliases + ctx.names.decisions + ctx.names.systemone
                               + tuple(ctx.chat_targets)))
    routes = {}
    for n in names:
        r = []
        if n in ctx.names.aliases:
            r.append("fill")
        if n in ctx.names.decisions:
            r.append("decisions")
        if n in ctx.names.systemone:
            r.append("systemone")
        if n in ctx.chat_targets:
            r.append("chat")
        routes[n] = r
    return JSONResponse({"object": "list", "data": [
        {"id": n, "object": "model", "created": created, "owned_by": "deg",
         "routes": routes[n], "served_as": ctx.names.id if n in ctx.names.aliases else n}
        for n in names]})


async def health_route(request):
    ctx = request.app.state.ctx
    return JSONResponse({"status": "ok", "model": ctx.names.id,
                         "uptime_s": time.time() - ctx.started,
                         "batcher": ctx.engine.health()})


def _chat_job(ctx, p, loop, queue):
    def emit(ev):
        try:
            loop.call_soon_threadsafe(queue.put_nowait, ev)
        except RuntimeError:  # the event loop is gone (shutdown)
            pass
    return ChatJob(p["target"], p["messages"], p["max_tokens"], p["temperature"], p["top_p"],
                   p["seed"], p["stops"], emit)


def _chat_failure(e):
    if isinstance(e, ChatError):
        return chat_api.openai_error(str(e), e.param, e.code)
    if isinstance(e, _INPUT_ERRORS):
        return chat_api.openai_error(str(e), "messages", "invalid_value")
    return chat_api.openai_error(f"generation failed: {e}", None, "server_error", 500,
                                 "server_error")


async def _next_event(queue, gone, job, engine):
    """The job's next event; cancels it the moment the client goes away (gone:
    the _watch_disconnect task; events may arrive faster than any polling)."""
    get = asyncio.ensure_future(queue.get())
    done, _ = await asyncio.wait({get, gone}, return_when=asyncio.FIRST_COMPLETED)
    if get in done:
        return get.result()
    get.cancel()
    job.cancelled = True
    engine.wake()
    raise _Gone()


async def chat_route(ctx, request):
    body = await _body(ctx, request, "chat")
    p = chat_api.parse(body, ctx.chat_targets)
    loop, queue = asyncio.get_running_loop(), asyncio.Queue()
    job = _chat_job(ctx, p, loop, queue)
    try:
        ctx.engine.submit_chat(job)
    except Overloaded as e:
        err = _shape("chat")(429, f"server busy: more than {ctx.engine.max_pending} jobs "
                             "queued", "rate_limit_exceeded")
        err.headers = {"Retry-After": str(e.retry_after)}
        raise err
    gone = asyncio.ensure_future(_watch_disconnect(request))
    try:
        kind, val = await _next_event(queue, gone, job, ctx.engine)
        if kind == "error":
            raise _chat_failure(val)
        fleet = val.get("fleet")
        cid = chat_api.new_id()
        if not p["stream"]:
            parts = []
            while True:
                kind, val = await _next_event(queue, gone, job, ctx.engine)
                if kind == "delta":
                    parts.append(val)
                elif kind == "error":
                    raise _chat_failure(val)
                elif kind == "done":
                    return JSONResponse(chat_api.completion(cid, p["model"], "".join(parts),
                                                            val, fleet))
    finally:  # a stream's disconnects are seen by StreamingResponse from here on
        gone.cancel()

    async def events():
        try:
            yield _sse(chat_api.chunk(cid, p["model"], {"role": "assistant", "content": ""},
                                      fleet=fleet))
            while True:
                kind, val = await queue.get()
                if kind == "delta":
                    yield _sse(chat_api.chunk(cid, p["model"], {"content": val}))
                elif kind == "error":
                    yield _sse(_chat_failure(val).body)
                    break
                elif kind == "done":
                    yield _sse(chat_api.chunk(cid, p["model"], {}, val["finish_reason"]))
                    if p["include_usage"]:
                        yield _sse(chat_api.chunk(cid, p["model"], usage_=chat_api.usage(val)))
                    break
            yield b"data: [DONE]\n\n"
        finally:  # a client that went away (the generator is closed) cancels its stream
            job.cancelled = True
            ctx.engine.wake()
    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})


def _sse(obj):
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n\n"


def build_app(engine, names, chat_targets, api_key=None, max_body=4 << 20, on_shutdown=None):
    """The Starlette app. chat_targets: {model name: engine trunk name}."""
    routes = [
        Route("/v1/fill", _handler("fill", fill_route), methods=["POST"]),
        Route("/v1/decisions", _handler("decisions", _decision_route(
            "decisions", api_decisions, lambda n: n.decisions)), methods=["POST"]),
        Route("/v1/systemone", _handler("systemone", _decision_route(
            "systemone", api_systemone, lambda n: n.systemone)), methods=["POST"]),
        Route("/v1/chat/completions", _handler("chat", chat_route), methods=["POST"]),
        Route("/v1/models", _handler("models", models_route), methods=["GET"]),
        Route("/health", health_route, methods=["GET"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        if on_shutdown:
            await asyncio.get_running_loop().run_in_executor(None, on_shutdown)

    async def http_error(request, exc):  # unknown route (404), wrong method (405)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        e = chat_api.openai_error(f"{request.method} {request.url.path}: {exc.detail}", None,
                                  code, exc.status_code)
        return JSONResponse(e.body, status_code=e.http_status, headers=exc.headers)

    async def server_error(request, exc):  # a bug: still the one shape, never a traceback
        e = chat_api.openai_error(f"internal error: {exc!r}", None, "server_error", 500,
                                  "server_error")
        return JSONResponse(e.body, status_code=500)

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: http_error, Exception: server_error})
    app.state.ctx = _Ctx(engine, names, chat_targets, api_key, max_body)
    return app
