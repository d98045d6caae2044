"""``GET /agi/openapi.json``: the OpenAPI 3.1 document of this API; JSON 404s elsewhere."""

from __future__ import annotations

from agi_jupyter.errors import ErrorCode
from agi_jupyter.server.handlers.base import AgiHandler, ApiError, protected


class OpenAPIHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        from agi_jupyter.server.openapi import openapi_json

        self.finish(openapi_json())


class NotFoundHandler(AgiHandler):
    """Any other path under ``/agi/``: the API's JSON error, not Jupyter's HTML page (before
    authentication: that a route does not exist is no secret)."""

    async def prepare(self) -> None:  # type: ignore[override]  # as AgiHandler.prepare
        raise ApiError(404, ErrorCode.NOT_FOUND, f"no such route: {self.request.path}")
