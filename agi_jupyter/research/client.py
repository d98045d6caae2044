"""The three Responses API calls deep research makes, through the official ``openai`` SDK.

The SDK is imported on first use. Answers are returned as plain JSON (``model_dump``), so the
rest of the package does not depend on the SDK's types; SDK errors become ``ProviderError``s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import ProviderNotConfigured
from agi_jupyter.providers import AdapterConfig
from agi_jupyter.providers.registry import DEFAULT_BASE_URLS, key_hint
from agi_jupyter.records import JSON

if TYPE_CHECKING:
    import openai

    from agi_jupyter.config import ProviderSettings

SDK_RETRIES = 2  # retries within one attempt reuse its idempotency key


class ResponsesClient:
    def __init__(self, settings: ProviderSettings, *, timeout: float = 120.0) -> None:
        if not settings.configured:
            raise ProviderNotConfigured(
                f"deep research needs the 'openai' provider: set {key_hint('openai')} "
                "or run `agi setup`"
            )
        self.config = AdapterConfig(
            name=settings.name,
            base_url=settings.base_url or DEFAULT_BASE_URLS["openai-responses"],
            api_key=settings.api_key or "",
            timeout=timeout,
            key_hint=key_hint(settings.name),
        )
        self._client: openai.AsyncOpenAI | None = None

    def _sdk(self) -> openai.AsyncOpenAI:
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=self.config.api_key,
                base_url=self.config.base_url,
                timeout=self.config.timeout,
                max_retries=SDK_RETRIES,
            )
        return self._client

    async def create(
        self,
        *,
        model: str,
        prompt: str,
        tools: list[dict[str, Any]],
        idempotency_key: str,
        instructions: str | None = None,
    ) -> JSON:
        """Start a background response; returns it (usually ``queued``)."""
        options: dict[str, Any] = {}
        if instructions:
            options["instructions"] = instructions
        return await self._call(
            self._sdk().responses.create(
                model=model,
                input=prompt,
                background=True,
                tools=tools,  # type: ignore[arg-type]  # plain dicts of the documented shapes
                extra_headers={"Idempotency-Key": idempotency_key},
                **options,
            )
        )

    async def retrieve(self, response_id: str) -> JSON:
        return await self._call(self._sdk().responses.retrieve(response_id))

    async def cancel(self, response_id: str) -> JSON:
        return await self._call(self._sdk().responses.cancel(response_id))

    async def _call(self, pending: Any) -> JSON:
        import openai

        from agi_jupyter.providers._openai_common import map_error

        try:
            response = await pending
        except openai.OpenAIError as e:
            raise map_error(self.config, e) from None
        data: JSON = response.model_dump(mode="json")
        return data

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()
