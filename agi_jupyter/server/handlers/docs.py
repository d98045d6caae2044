"""``GET /agi/openapi.json``: the OpenAPI 3.1 document of this API."""

from __future__ import annotations

from agi_jupyter.server.handlers.base import AgiHandler, protected


class OpenAPIHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        from agi_jupyter.server.openapi import openapi_json

        self.finish(openapi_json())
