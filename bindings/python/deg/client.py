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
from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from email.message import Message
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Type, Union

from .api.questions import ApiError
from . import errors as _errors
from ._types import JSONValue
from .errors import DegError, RequestError, SchemaError

__all__ = ["Client", "ServerError", "AuthenticationError", "RequestTooLarge", "RateLimitError",
           "ServerBusy", "NotFoundError", "InternalServerError", "APIConnectionError"]


class ServerError(DegError):
    """An HTTP failure that is not a deg error of the request: .http_status (None
    when the server could not be reached) and .body (the decoded JSON body, or text)."""

    def __init__(self, message: str, status: Optional[int] = None, body: Any = None) -> None:
        super().__init__(message)
        self.http_status, self.body = status, body


class AuthenticationError(ServerError):
    """401 (403 on /v1/systemone, as Jev): no valid `Authorization: Bearer` key."""


class RequestTooLarge(ServerError):
    """413: the request body is over the server's --max-body-bytes."""


class RateLimitError(ServerError):
    """429: more jobs queued than the server's --max-pending; .retry_after seconds
    (the Retry-After header)."""

    def __init__(self, message: str, status: Optional[int] = 429, body: Any = None,
                 retry_after: float = 1.0) -> None:
        super().__init__(message, status, body)
        self.retry_after = retry_after


ServerBusy = RateLimitError  # the earlier name


class NotFoundError(ServerError):
    """404: no such route on this server (an older server, or a wrong base_url)."""


class InternalServerError(ServerError):
    """5xx other than a FillError: the server failed."""


class APIConnectionError(ServerError):
    """No HTTP answer (refused, reset, timed out): .http_status is None."""


_BY_STATUS: Dict[int, Type[ServerError]] = {401: AuthenticationError, 403: AuthenticationError, 404: NotFoundError,
              413: RequestTooLarge}


#: the "error" names /v1/fill returns -> the in-process exception classes
_FILL_ERRORS: Dict[str, Type[DegError]] = {c.__name__: c for c in vars(_errors).values()
                if isinstance(c, type) and issubclass(c, DegError) and c.status is not None}


class Client:
    """A deg serve server over HTTP (stdlib urllib only): fill / fill_many raise the
    same exceptions as the in-process deg.fill; transport failures are ServerError
    subclasses."""

    def __init__(self, base_url: str = "http://127.0.0.1:8790", api_key: Optional[str] = None,
                 timeout: float = 600.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key, self.timeout = api_key, timeout

    def _call(self, method: str, path: str, body: JSONValue = None
              ) -> Tuple[int, Any, Message]:
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
            decoded: Any = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            decoded = raw.decode("utf-8", "replace")
        return status, decoded, headers

    def _transport_error(self, path: str, status: int, body: Any,
                         headers: Message) -> ServerError:
        msg = f"{path}: HTTP {status}: {json.dumps(body)[:500] if body is not None else ''}"
        if status == 429:
            try:
                ra = float(headers.get("Retry-After", "1"))
            except ValueError:
                ra = 1.0
            return RateLimitError(msg, status, body, ra)
        cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else ServerError)
        return cls(msg, status, body)

    def _get(self, path: str) -> Any:
        status, body, headers = self._call("GET", path)
        if status != 200:
            raise self._transport_error(path, status, body, headers)
        return body

    # ------------------------------------------------------------------ fill
    def fill(self, context: JSONValue, schema: JSONValue, model: str = "deg-latest",
             options: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """POST /v1/fill; the §8 response dict (as deg.fill returns it)."""
        req: Dict[str, Any] = {"context": context, "schema": schema, "model": model}
        if options is not None:
            req["options"] = options
        return self._fill(req)

    def _fill(self, req: Dict[str, Any]) -> Dict[str, Any]:
        try:
            status, body, headers = self._call("POST", "/v1/fill", req)
        except ValueError as e:  # not JSON-serialisable (NaN, a set, ...)
            raise RequestError(f"request is not JSON: {e}") from None
        if status == 200:
            return body
        err = body.get("error") if isinstance(body, dict) else None
        if not isinstance(err, dict) or err.get("deg_error") not in _FILL_ERRORS:
            raise self._transport_error("/v1/fill", status, body, headers)
        cls = _FILL_ERRORS[err["deg_error"]]
        errors = err.get("errors") or []
        if cls is SchemaError:
            raise SchemaError(err.get("message", ""), errors=errors)
        exc = cls(err.get("message", ""))
        exc.errors = errors  # type: ignore[attr-defined]
        raise exc

    def fill_many(self, jobs: Iterable[Mapping[str, Any]], max_concurrency: int = 16
                  ) -> List[Union[Dict[str, Any], DegError]]:
        """Send jobs ({"context", "schema"[, "options", "model"]}) together, so the
        server batches them; per job the response dict or the exception it raised
        (returned, not raised), in order."""
        todo = list(jobs)

        def one(j: Mapping[str, Any]) -> Union[Dict[str, Any], DegError]:
            try:
                return self._fill(dict(j))
            except DegError as e:
                return e
        if not todo:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(max_concurrency, len(todo)))) as ex:
            return list(ex.map(one, todo))

    # ------------------------------------------------------------- decisions
    def _decision(self, path: str, body: Dict[str, Any]) -> Dict[str, Any]:
        status, resp, headers = self._call("POST", path, body)
        if status == 200:
            return resp
        if status in (400, 422, 500) and isinstance(resp, dict):
            raise ApiError(status, resp)
        raise self._transport_error(path, status, resp, headers)

    def decisions(self, input: JSONValue, questions: JSONValue, model: str = "gpt-6-luna",
                  options: Optional[Mapping[str, Any]] = None, **extra: Any) -> Dict[str, Any]:
        """POST /v1/decisions (OpenAI Decisions API): {answers, model, usage}."""
        body: Dict[str, Any] = {"model": model, "input": input, "questions": questions, **extra}
        if options is not None:
            body["options"] = options
        return self._decision("/v1/decisions", body)

    def systemone(self, state: JSONValue, questions: JSONValue, model: str = "jev-latest",
                  options: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """POST /v1/systemone (Jev): {model, answers: {id: answer}, usage}."""
        body: Dict[str, Any] = {"state": state, "model": model, "questions": questions}
        if options is not None:
            body["options"] = options
        return self._decision("/v1/systemone", body)

    # ------------------------------------------------------------------ info
    def models(self) -> List[Dict[str, Any]]:
        """GET /v1/models: the list of {id, routes, served_as, ...}."""
        return self._get("/v1/models")["data"]

    def health(self) -> Dict[str, Any]:
        """GET /health: {status, model, batcher: {queue_depth, mean_batch_size, ...}}."""
        return self._get("/health")
