"""``Completions``: one inline completion, from the request to the insertion, on the runtime loop.

A completion is not a run: no session, no messages, no events. It picks its model
(``model_spec``), checks the notebook's budget, asks the model (fill-in-the-middle where the
server does it, else a chat turn: ``upstream``), streams the insertion as it grows
(``Suggestion``, cumulative) and ends with the cleaned one and its usage. Whatever way it ends
(answered, superseded, failed) it is counted in the store's ``completion_usage`` (requests,
tokens, cost), which ``agi stats`` shows and notebook budgets count.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2
import orjson

from agi_jupyter import budget as budgets
from agi_jupyter.completion.prompt import Cleaner, CompletionRequest, Context, bounded
from agi_jupyter.completion.settings import CompletionSettings
from agi_jupyter.completion.upstream import (
    FimCall,
    FimRefused,
    Pieces,
    Spent,
    chat_pieces,
    disconnected,
    llama_infill,
    ollama_suffix,
)
from agi_jupyter.errors import BudgetExceeded, CompletionDisabled, ProviderError
from agi_jupyter.providers import catalog
from agi_jupyter.providers.h1_transport import stream_client
from agi_jupyter.providers.server_caps import server_root

if TYPE_CHECKING:
    from agi_jupyter.runtime.deps import RuntimeDeps

FIM_TIMEOUT = 30.0  # seconds: a completion nobody waits for that long is superseded anyway


@dataclass(frozen=True)
class CompletionUsage:
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None  # None: unknown (no usage reported, or no catalog price)

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }


@dataclass(frozen=True)
class Suggestion:
    """The insertion so far (``done``: the final, cleaned one, with its model and usage)."""

    text: str
    done: bool = False
    model: str | None = None
    via: str | None = None  # "chat", "llama-infill" or "ollama-suffix"
    usage: CompletionUsage | None = None


class Completions:
    def __init__(self, deps: RuntimeDeps) -> None:
        self.deps = deps
        self._client: httpx2.AsyncClient | None = None  # fill-in-the-middle requests
        self._no_fim: set[tuple[str, str]] = set()  # (base URL, model) that refused FIM

    @property
    def settings(self) -> CompletionSettings:
        return self.deps.config.completion

    def model_spec(self, requested: str | None = None) -> tuple[str, str]:
        """``provider, model``: the request's, else ``completion.model``, else a small fast
        model of the default model's provider (the catalog's), else the default model."""
        config = self.deps.config
        spec = requested or self.settings.model
        if spec:
            return config.resolve_model(spec)
        provider, model = config.resolve_model()
        return provider, catalog.fast_model(provider) or model

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[Suggestion, None]:
        refusal = self.settings.refusal(request.language, request.path)
        if refusal is not None:
            raise CompletionDisabled(refusal)
        provider, model = self.model_spec(request.model)
        self.deps.config.provider(provider)  # an unknown provider is the caller's mistake
        if request.path:
            await self.deps.stored(self._check_budget, request.path, provider, model)
        context = bounded(request, self.settings.context_tokens)
        cleaner = Cleaner(context.prefix, context.suffix)
        limit = request.max_output_tokens or self.settings.max_output_tokens
        spent, via = Spent(), ["chat"]
        answered = False
        try:
            source = self._pieces(provider, model, context, limit, spent, via)
            async with contextlib.aclosing(source) as pieces:
                async for piece in pieces:  # read to the end, for the usage it reports
                    shown = cleaner.feed(piece)
                    if shown is not None:
                        yield Suggestion(shown)
            answered = True
        finally:
            usage = self._record(request.path, provider, model, spent, answered=answered)
        yield Suggestion(cleaner.final(), True, f"{provider}:{model}", via[0], usage)

    def _check_budget(self, path: str, provider: str, model: str) -> None:
        """Refuse when the notebook's budget is spent (``BUDGET_EXCEEDED``), or when it has a
        cost limit and the model no catalog price (its spend could not be kept)."""
        store = self.deps.store
        settings = self.deps.config.budgets.with_stored(store)
        budget = settings.for_notebook(path)
        if budget is None:
            return
        tokens, usd = budgets.notebook_spent(store, path)
        status = budgets.BudgetStatus("notebook", budget, tokens, usd, budgets.notebook_key(path))
        info = catalog.lookup(provider, model)
        call = budgets.NextCall(cheapest_usd_per_mtok=info.input_per_mtok if info else None)
        reason = budgets.refusal(status, call)
        if reason is not None:
            raise BudgetExceeded(f"completion refused: {reason}")

    def _record(
        self, path: str | None, provider: str, model: str, spent: Spent, *, answered: bool
    ) -> CompletionUsage:
        usage = spent.usage()
        cost = catalog.cost_usd(provider, model, usage) if usage is not None else None
        count = functools.partial(
            self.deps.store.add_completion_usage,
            path=budgets.notebook_key(path) if path else "",
            model=f"{provider}:{model}",
            input_tokens=spent.input_tokens,
            output_tokens=spent.output_tokens,
            cost_usd=cost,
            cancelled=not answered,
        )
        if self.deps.store_thread is None:
            count()
        else:  # not awaited: a superseded completion ends at once
            self.deps.store_thread.submit(count)
        return CompletionUsage(spent.input_tokens, spent.output_tokens, cost)

    async def _pieces(
        self,
        provider: str,
        model: str,
        context: Context,
        max_tokens: int,
        spent: Spent,
        via: list[str],
    ) -> Pieces:
        settings = self.deps.config.provider(provider)
        caps = await self.deps.providers.server_caps(provider, model)
        fim = caps.fill_in_middle if caps is not None else None
        key = (settings.base_url or "", model)
        if fim is not None and key not in self._no_fim:
            source = llama_infill if fim == "llama-infill" else ollama_suffix
            root = server_root(settings.base_url or "")
            started = False
            try:
                call = FimCall(self.client, root, model, context, max_tokens, spent)
                async with contextlib.aclosing(source(call)) as pieces:
                    async for piece in pieces:
                        started = True
                        yield piece
                via[0] = fim
                return
            except FimRefused:
                if started:
                    raise
                self._no_fim.add(key)
            except httpx2.TransportError as error:
                raise disconnected(error, fim) from error
            except orjson.JSONDecodeError as error:
                raise ProviderError(f"{fim}: the server sent a line that is not JSON") from error
        adapter = await self.deps.providers.aget(provider)
        async with contextlib.aclosing(
            chat_pieces(adapter, model, context, max_tokens, spent)
        ) as pieces:
            async for piece in pieces:
                yield piece

    @property
    def client(self) -> httpx2.AsyncClient:
        if self._client is None:
            self._client = stream_client(FIM_TIMEOUT)
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
