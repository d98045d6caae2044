"""What every handler shares: auth, the error shape, body/query parsing, JSON and streams.

Errors: an ``AgiError`` becomes ``{"error": {"code", "message"}}`` with its ``http_status``; a
pydantic ``ValidationError`` (malformed or unknown fields) is a 400 ``VALIDATION_ERROR``;
anything unexpected is a 500 ``INTERNAL_ERROR`` whose details go to the server log only.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, Callable, Coroutine
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from jupyter_server.auth.decorator import allow_unauthenticated, authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from pydantic import BaseModel, ValidationError
from tornado import web
from tornado.iostream import StreamClosedError

from agi_jupyter.errors import AgiError, ErrorCode, NotFound, UsageError
from agi_jupyter.server.handlers.inputs import MISSING, parse_json_body, query_values
from agi_jupyter.server.models import ErrorBody, ErrorDetail, body_required
from agi_jupyter.server.streaming import (
    CONTENT_TYPES,
    SSE_KEEPALIVE,
    Format,
    dumps,
    encode,
    encode_sse,
    negotiate,
)

if TYPE_CHECKING:
    from agi_jupyter.app import Agi
    from agi_jupyter.server.extension import AgiExtensionApp

AUTH_RESOURCE = "agi"
HTTP_CODES = {
    400: ErrorCode.BAD_REQUEST,
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    413: ErrorCode.PAYLOAD_TOO_LARGE,
    429: ErrorCode.RATE_LIMITED,
    500: ErrorCode.INTERNAL_ERROR,
}  # another status: HTTP_ERROR

P = ParamSpec("P")
T = TypeVar("T")
B = TypeVar("B", bound=BaseModel)
H = TypeVar("H", bound="AgiHandler")
Method = Callable[Concatenate[H, P], Coroutine[Any, Any, None]]
Events = AsyncGenerator[dict[str, Any], None]
Batches = AsyncGenerator[list[dict[str, Any]], None]


# A 503 of an unreachable store: try again after about one pool wait (store/postgres).
RETRY_AFTER = {"Retry-After": "5"}


class ApiError(web.HTTPError):
    """An error answer with a code; raised by handlers, rendered by ``write_error``."""

    def __init__(
        self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(status)
        self.code = code
        self.message = message
        self.headers = headers or {}


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"]) or "body"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)


def _mapped(method: Method[H, P]) -> Method[H, P]:
    @functools.wraps(method)
    async def wrapper(self: H, /, *args: P.args, **kwargs: P.kwargs) -> None:
        try:
            await method(self, *args, **kwargs)
        except AgiError as e:
            headers = RETRY_AFTER if e.code == ErrorCode.STORE_UNAVAILABLE else None
            raise ApiError(e.http_status, e.code, e.message, headers=headers) from None
        except ValidationError as e:
            raise ApiError(400, ErrorCode.VALIDATION_ERROR, _describe(e)) from None

    return wrapper


def _authenticated(method: Method[H, P]) -> Method[H, P]:
    """``web.authenticated`` with an API's answer: 401 and a challenge, not a 403 or a
    redirect to the login page."""

    @functools.wraps(method)
    async def wrapper(self: H, /, *args: P.args, **kwargs: P.kwargs) -> None:
        if not self.current_user:
            raise ApiError(401, ErrorCode.UNAUTHORIZED, UNAUTHORIZED)
        await method(self, *args, **kwargs)

    return wrapper


def protected(method: Method[H, P]) -> Method[H, P]:
    """Jupyter authentication and authorization (resource ``agi``), plus the error mapping."""
    return _authenticated(authorized(_mapped(method)))


def public(method: Method[H, P]) -> Method[H, P]:
    """No Jupyter authentication (the handler authenticates the request itself)."""
    return allow_unauthenticated(_mapped(method))


UNAUTHORIZED = "authentication required: send the Jupyter token as `Authorization: token <token>`"
METHODS = ("GET", "POST", "PATCH", "PUT", "DELETE", "OPTIONS")


@web.stream_request_body
class AgiHandler(ExtensionHandlerMixin, APIHandler):
    """The base of every handler. Bodies are streamed (``stream_request_body``): ``prepare``
    runs once the headers are in, so an unauthenticated request, or one whose
    ``Content-Length`` is over ``max_body_size``, is refused before a byte of its body is
    read, and a body without a length stops being kept once it is too large."""

    auth_resource = AUTH_RESOURCE
    challenge = 'Token realm="jupyter"'  # the WWW-Authenticate of a 401
    body_limit: int | None = None  # bytes; None: the extension's max_body_size
    _gone = False
    _held: list[Path] = []  # noqa: RUF012 - replaced per instance, never changed in place
    _chunks: list[bytes] = []  # noqa: RUF012 - replaced per instance
    _body_size = 0

    @property
    def agi_app(self) -> AgiExtensionApp:
        return cast("AgiExtensionApp", self.extensionapp)

    @property
    def limit(self) -> int:
        """The largest body this route takes, in bytes."""
        return self.body_limit or self.agi_app.max_body_size

    async def prepare(self) -> None:  # type: ignore[override]  # as APIHandler.prepare
        self._chunks = []
        try:
            await super().prepare()
        except web.HTTPError as e:
            if e.status_code == 403 and self.current_user is None:
                raise ApiError(401, ErrorCode.UNAUTHORIZED, UNAUTHORIZED) from None
            raise
        if not self.current_user and not self._public():
            raise ApiError(401, ErrorCode.UNAUTHORIZED, UNAUTHORIZED)
        self.agi_app.start_on_loop()  # idempotent; covers servers started without _post_start
        limit = self.limit
        length = self.request.headers.get("Content-Length", "0").strip() or "0"
        if not length.isdigit() or int(length) > limit:
            raise ApiError(
                413, ErrorCode.PAYLOAD_TOO_LARGE, f"the request body is over {limit} bytes"
            )
        # A body without a length is read up to a few times the limit (then answered 413);
        # past that, tornado drops the connection.
        set_max = getattr(self.request.connection, "set_max_body_size", None)
        if set_max is not None:  # an HTTP/1 connection (tornado's HTTP1Connection)
            set_max(4 * limit)

    def user_name(self) -> str | None:
        """The authenticated person's name as Jupyter's identity provider gives it (the name
        JupyterLab shows them), for the records that say who did what."""
        user = self.current_user
        if user is None:
            return None
        return str(getattr(user, "display_name", "") or getattr(user, "name", "") or user.username)

    def _public(self) -> bool:
        """Whether the method asked for needs no Jupyter authentication (``@public``)."""
        method = getattr(self, (self.request.method or "").lower(), None)
        return bool(getattr(method, "__allow_unauthenticated", False))

    def check_xsrf_cookie(self) -> None:
        """The XSRF check protects cookie-authenticated users; a request that is not
        authenticated at all is refused with 401 right after it (not 403 here)."""
        if getattr(self, "_jupyter_current_user", True) is None:  # known to be nobody
            return
        super().check_xsrf_cookie()

    def data_received(self, chunk: bytes) -> None:
        self._body_size += len(chunk)
        if self._body_size <= self.limit:
            self._chunks.append(chunk)
        else:
            self._chunks = []  # answered 413 once it is all in; nothing more is kept

    def raw_body(self) -> bytes:
        """The request body (streamed in by ``data_received``)."""
        limit = self.limit
        if self._body_size > limit:
            raise ApiError(
                413, ErrorCode.PAYLOAD_TOO_LARGE, f"the request body is over {limit} bytes"
            )
        return b"".join(self._chunks)

    def on_connection_close(self) -> None:
        self._gone = True
        self._release_projects()
        super().on_connection_close()

    def on_finish(self) -> None:
        self._release_projects()
        super().on_finish()

    def _release_projects(self) -> None:
        held, self._held = self._held, []
        for path in held:
            self.agi_app.projects.release(path)

    # --- input ---------------------------------------------------------------------------------

    async def agi(self) -> Agi:
        """The ``Agi`` of the ``project`` query parameter (a folder under the server root),
        held open until this request ends."""
        projects = self.agi_app.projects
        agi = await projects.get(self.get_query_argument("project", None))
        self._held = [*self._held, projects.hold(agi)]
        return agi

    def body(self, model: type[B]) -> B:
        """The JSON body validated by ``model``. A missing body is ``{}`` only when
        ``model`` has no required field (the OpenAPI document marks such bodies optional)."""
        data = parse_json_body(self.raw_body())
        if data is MISSING:
            if body_required(model):
                raise ApiError(400, ErrorCode.VALIDATION_ERROR, "a JSON object body is required")
            data = {}
        if not isinstance(data, dict):
            raise ApiError(400, ErrorCode.VALIDATION_ERROR, "the body must be a JSON object")
        return model.model_validate(data, strict=True)

    def query(self, model: type[B]) -> B:
        return model.model_validate(query_values(self.request.query_arguments))

    async def page(self, fn: Callable[..., T], *args: Any, cursor: str | None, **kw: Any) -> T:
        """A listing (``self.call``) from ``cursor``: a cursor the store does not take is
        ``CURSOR_NOT_FOUND`` (404): it names a position this listing does not have."""
        try:
            return await self.call(fn, *args, cursor=cursor, **kw)
        except UsageError:
            if cursor is None:
                raise
            raise cursor_not_found(cursor) from None

    def format(self, default: Format) -> Format:
        return negotiate(self.request.headers.get("Accept"), default)

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a blocking ``Agi`` call (SQLite, waiting on the runtime loop) off tornado's loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.agi_app.executor, functools.partial(fn, *args, **kwargs)
        )

    # --- output --------------------------------------------------------------------------------

    def reply(self, model: BaseModel, status: int = 200) -> None:
        self.set_status(status)
        self.finish(model.model_dump_json())

    def _start_stream(self, fmt: Format) -> None:
        self.set_status(200)
        self.set_header("Content-Type", CONTENT_TYPES[fmt])
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        stream = getattr(self.request.connection, "stream", None)
        if stream is not None:
            stream.set_nodelay(True)  # each write leaves at once (tornado resets it at finish)

    async def _end_stream(self, fmt: Format) -> None:
        if not self._gone:
            with contextlib.suppress(StreamClosedError):
                await self.finish(set_content_type=CONTENT_TYPES[fmt])

    async def send_events(
        self,
        fmt: Format,
        events: Events,
        *,
        event_id: Callable[[dict[str, Any]], int | str | None] | None = None,
    ) -> None:
        """Stream ``events`` as NDJSON or SSE until they end or the client goes away (which
        only stops the writing: runs go on). An empty dict is a keep-alive tick (an SSE
        comment); the headers leave with the first event or tick. Events that arrive together
        leave in one write (see ``_Flusher``)."""
        self._start_stream(fmt)
        flusher = _Flusher(self)
        events = self.bounded(events)
        try:
            async for event in events:
                if self._gone:
                    break
                if event:
                    self.write(encode(fmt, event, event_id(event) if event_id else None))
                elif fmt == "sse":
                    self.write(SSE_KEEPALIVE)
                flusher.request()
            await flusher.drain()
        except StreamClosedError:
            self._gone = True
        except AgiError as e:
            self.write(_error_line(fmt, e))
        finally:
            flusher.close()
            await events.aclose()
        await self._end_stream(fmt)

    async def send_batches(
        self,
        fmt: Format,
        batches: Batches,
        *,
        event_id: Callable[[dict[str, Any]], int | str | None] | None = None,
    ) -> None:
        """``send_events`` for a source that hands over every event ready at once (a run's
        follower): one write and one flush per batch. While a flush waits for the socket,
        the next events gather in the follower and leave together."""
        self._start_stream(fmt)
        batches = self.bounded(batches)
        try:
            async for batch in batches:
                if self._gone:
                    break
                if fmt == "ndjson":
                    self.write("".join([dumps(event) + "\n" for event in batch]).encode())
                else:
                    ids = [event_id(e) if event_id else None for e in batch]
                    self.write(b"".join(map(encode_sse, batch, ids)))
                await self.flush()
        except StreamClosedError:
            self._gone = True
        except AgiError as e:
            self.write(_error_line(fmt, e))
        finally:
            await batches.aclose()
        await self._end_stream(fmt)

    async def bounded(self, source: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        """``source`` until ``stream_max_seconds`` have passed (0: for as long as it goes).
        Clients resume a stream that ended this way (``Last-Event-ID``, ``after_seq``)."""
        limit = self.agi_app.stream_max_seconds
        try:
            if limit <= 0:
                async for item in source:
                    yield item
                return
            loop = asyncio.get_running_loop()
            deadline = loop.time() + limit
            while (left := deadline - loop.time()) > 0:
                try:
                    item = await asyncio.wait_for(anext(source), left)
                except (StopAsyncIteration, TimeoutError):
                    return
                yield item
        finally:
            await source.aclose()

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        error = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(error, ApiError):
            code, message = error.code, error.message
            for name, value in error.headers.items():
                self.set_header(name, value)
        elif isinstance(error, web.HTTPError):
            code = HTTP_CODES.get(status_code, ErrorCode.HTTP_ERROR)
            message = error.reason or _phrase(status_code)
            if error.log_message:
                with contextlib.suppress(TypeError, ValueError):
                    message = str(error.log_message) % error.args
        else:
            code, message = (
                ErrorCode.INTERNAL_ERROR,
                "internal server error (details are in the log)",
            )
        if status_code == 405:
            self.set_header("Allow", ", ".join(self.allowed_methods()))
        if status_code == 401 and "WWW-Authenticate" not in self._headers:
            self.set_header("WWW-Authenticate", self.challenge)
        body = ErrorBody(error=ErrorDetail(code=self._documented(code), message=message))
        self.set_header("Content-Type", "application/json")
        self.finish(body.model_dump_json())

    def _documented(self, code: str) -> ErrorCode:
        """``code`` as the ``ErrorCode`` it is; one that is none (a project tool's own code
        reaching an answer) is sent as ``AGI_ERROR``, so every answer has a documented code."""
        try:
            return ErrorCode(code)
        except ValueError:
            self.log.warning("agi: error code %r is not an ErrorCode; sent as AGI_ERROR", code)
            return ErrorCode.AGI_ERROR

    @classmethod
    def allowed_methods(cls) -> list[str]:
        """The methods this handler implements (the ``Allow`` header of a 405)."""
        return [
            m
            for m in METHODS
            if getattr(cls, m.lower(), None) is not getattr(web.RequestHandler, m.lower(), None)
        ]


def cursor_not_found(cursor: str) -> NotFound:
    return NotFound(
        f"cursor {cursor[:100]!r} is no position of this listing; start again without it",
        code=ErrorCode.CURSOR_NOT_FOUND,
    )


def _error_line(fmt: Format, error: AgiError) -> bytes:
    """A stream's last event when following it failed."""
    event = {"type": "error", "code": error.code, "message": error.message, "retryable": False}
    return encode(fmt, event)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"


class _Flusher:
    """One flush per burst of events instead of one per event.

    ``request()`` marks the response dirty and, unless a flush is under way, starts one as a
    task: it runs once the streaming coroutine suspends (waits for the next event), so events
    that were ready together leave in a single write. With the runtime on its own thread, every
    socket write hands the GIL over; fewer writes keep many concurrent streams responsive.
    A failed flush (the client went away) is raised by the next ``request()`` or ``drain()``.
    """

    def __init__(self, handler: AgiHandler) -> None:
        self.handler = handler
        self.dirty = False
        self.task: asyncio.Task[None] | None = None

    def request(self) -> None:
        self.dirty = True
        if self.task is not None and self.task.done():
            self.task.result()  # raises what the last flush raised (StreamClosedError)
            self.task = None
        if self.task is None:
            self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while self.dirty:
            self.dirty = False
            await self.handler.flush()

    async def drain(self) -> None:
        if self.task is not None:
            await self.task

    def close(self) -> None:
        task, self.task = self.task, None
        if task is None:
            return
        if task.done():
            if not task.cancelled():
                task.exception()  # retrieved: no "exception was never retrieved" warning
        else:
            task.cancel()
