"""deg.Client: the Python SDK of a deg server (deg serve), standard library only.

    c = deg.Client("http://127.0.0.1:8790", api_key=None)
    r = c.fill("Order 4711 ...", schema)            # the §8 response, as deg.fill
    c.fill_many([{"context": ..., "schema": ...}, ...])   # sent together: batched
    c.decisions(input="...", questions=[...])       # OpenAI Decisions (gpt-6-luna)
    c.systemone(state="...", questions={...})       # Jev (jev-latest)
    c.models(), c.health()

Errors are the in-process API's: a 422 from /v1/fill raises SchemaError or
RequestError with the same .errors list ({loc, msg}), a 500 FillError with its
reasons, other deg errors their own class (UnsupportedError for a byte without a
token, LimitError, ...); the decision routes raise deg.api.ApiError (status, body)
as deg.api.decisions / deg.api.systemone do in-process. HTTP failures that are
not the request's deg error raise a ServerError subclass, named as the openai
client names them (openai-python _exceptions.py): AuthenticationError (401, or
Jev's 403 without a valid key), RequestTooLarge (413, --max-body-bytes),
RateLimitError (429, .retry_after; alias ServerBusy), NotFoundError (404),
InternalServerError (5xx), APIConnectionError (no HTTP answer: .http_status None);
any other status a plain ServerError.
"""
import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from .api.questions import ApiError
from . import errors as _errors
from .errors import DegError, RequestError, SchemaError

__all__ = ["Client", "ServerError", "AuthenticationError", "RequestTooLarge", "RateLimitError",
           "ServerBusy", "NotFoundError", "InternalServerError", "APIConnectionError"]


class ServerError(DegError):
    """An HTTP failure that is not a deg error of the request: .http_status (None
    when the server could not be reached) and .body (the decoded JSON body, or text)."""

    def __init__(self, message, status=None, body=None):
        super().__init__(message)
        self.http_status, self.body = status, body


class AuthenticationError(ServerError):
    """401 (403 on /v1/systemone, as Jev): no valid `Authorization: Bearer` key."""


class RequestTooLarge(ServerError):
    """413: the request body is over the server's --max-body-bytes."""


class RateLimitError(ServerError):
    """429: more jobs queued than the server's --max-pending; .retry_after seconds
    (the Retry-After header)."""

    def __init__(self, message, status=429, body=None, retry_after=1.0):
        super().__init__(message, status, body)
        self.retry_after = retry_after


ServerBusy = RateLimitError  # the earlier name


class NotFoundError(ServerError):
    """404: no such route on this server (an older server, or a wrong base_url)."""


class InternalServerError(ServerError):
    """5xx other than a FillError: the server failed."""


class APIConnectionError(ServerError):
    """No HTTP answer (refused, reset, timed out): .http_status is None."""


_BY_STATUS = {401: AuthenticationError, 403: AuthenticationError, 404: NotFoundError,
              413: RequestTooLarge}


#: the "error" names /v1/fill returns -> the in-process exception classes
_FILL_ERRORS = {c.__name__: c for c in vars(_errors).values()
                if isinstance(c, type) and issubclass(c, DegError) and c.status is not None}


class Client:
    def __init__(self, base_url="http://127.0.0.1:8790", api_key=None, timeout=600.0):
        self.base_url = base_url.rstrip("/")
        self.api_key, self.timeout = api_key, timeout

    def _call(self, method, path, body=None):
        """(status, decoded body, headers) for any HTTP status."""
        data = None if body is None else json.dumps(body, ensure_ascii=False,
                                                     allow_nan=False).encode("utf-8")
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                status, raw, headers = r.status, r.read(), r.headers
        except urllib.error.HTTPError as e:
            status, raw, headers = e.code, e.read(), e.headers
        except (urllib.error.URLError, OSError) as e:
            raise APIConnectionError(f"{self.base_url}{path}: {getattr(e, 'reason', e)}") \
                from None
        try:
            decoded = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            decoded = raw.decode("utf-8", "replace")
        return status, decoded, headers

    def _transport_error(self, path, status, body, headers):
        msg = f"{path}: HTTP {status}: {json.dumps(body)[:500] if body is not None else ''}"
        if status == 429:
            try:
                ra = float(headers.get("Retry-After", "1"))
            except ValueError:
                ra = 1.0
            return RateLimitError(msg, status, body, ra)
        cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else ServerError)
        return cls(msg, status, body)

    def _get(self, path):
        status, body, headers = self._call("GET", path)
        if status != 200:
            raise self._transport_error(path, status, body, headers)
        return body

    # ------------------------------------------------------------------ fill
    def fill(self, context, schema, model="deg-latest", options=None):
        """POST /v1/fill; the §8 response dict (as deg.fill returns it)."""
        req = {"context": context, "schema": schema, "model": model}
        if options is not None:
            req["options"] = options
        return self._fill(req)

    def _fill(self, req):
        try:
            status, body, headers = self._call("POST", "/v1/fill", req)
        except ValueError as e:  # not JSON-serialisable (NaN, a set, ...)
            raise RequestError(f"request is not JSON: {e}") from None
        if status == 200:
            return body
        err = body.get("error") if isinstance(body, dict) else None
        cls = _FILL_ERRORS.get(err.get("deg_error")) if isinstance(err, dict) else None
        if cls is None:
            raise self._transport_error("/v1/fill", status, body, headers)
        errors = err.get("errors") or []
        if cls is SchemaError:
            raise SchemaError(err.get("message", ""), errors=errors)
        e = cls(err.get("message", ""))
        e.errors = errors
        raise e

    def fill_many(self, jobs, max_concurrency=16):
        """Send jobs ({"context", "schema"[, "options", "model"]}) together, so the
        server batches them; per job the response dict or the exception it raised
        (returned, not raised), in order."""
        jobs = list(jobs)

        def one(j):
            try:
                return self._fill(dict(j))
            except DegError as e:
                return e
        if not jobs:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(max_concurrency, len(jobs)))) as ex:
            return list(ex.map(one, jobs))

    # ------------------------------------------------------------- decisions
    def _decision(self, path, body):
        status, resp, headers = self._call("POST", path, body)
        if status == 200:
            return resp
        if status in (400, 422, 500) and isinstance(resp, dict):
            raise ApiError(status, resp)
        raise self._transport_error(path, status, resp, headers)

    def decisions(self, input, questions, model="gpt-6-luna", options=None, **extra):
        """POST /v1/decisions (OpenAI Decisions API): {answers, model, usage}."""
        body = {"model": model, "input": input, "questions": questions, **extra}
        if options is not None:
            body["options"] = options
        return self._decision("/v1/decisions", body)

    def systemone(self, state, questions, model="jev-latest", options=None):
        """POST /v1/systemone (Jev): {model, answers: {id: answer}, usage}."""
        body = {"state": state, "model": model, "questions": questions}
        if options is not None:
            body["options"] = options
        return self._decision("/v1/systemone", body)

    # ------------------------------------------------------------------ info
    def models(self):
        """GET /v1/models: the list of {id, routes, served_as, ...}."""
        return self._get("/v1/models")["data"]

    def health(self):
        """GET /health: {status, model, batcher: {queue_depth, mean_batch_size, ...}}."""
        return self._get("/health")
