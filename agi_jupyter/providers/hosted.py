"""Provider-hosted tools: the provider's own tools a session turns on (``kinds.HostedTool``),
run by the provider inside its response (seed 001 §8). No SDK import.

Which wire API offers which (``OFFERED``; Chat Completions, and so Google and local servers,
offers none), the request's tool entries (``responses_tools``, ``anthropic_tools``), and the
reading of their calls on both read paths (the HTTP readers hand the decoded JSON, the SDK
paths the SDK object's ``to_dict()``, the same JSON): OpenAI Responses output items
``web_search_call``, ``file_search_call``, ``code_interpreter_call``; Anthropic
``server_tool_use`` blocks and the ``*_tool_result`` block answering each. Each becomes one
``HostedToolCall`` carrying the items/blocks exactly as received, which later requests to the
same API send back verbatim (``responses_mapping.assistant_items``,
``anthropic_mapping.content_blocks``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agi_jupyter.errors import HostedToolUnsupported
from agi_jupyter.kinds import HostedTool
from agi_jupyter.model_specs import Wire
from agi_jupyter.providers.base import HostedToolCall, ProviderRequest

RESPONSES_API = "responses"
ANTHROPIC_API = "anthropic"
OFFERED: dict[Wire, tuple[HostedTool, ...]] = {
    "openai-responses": (
        HostedTool.WEB_SEARCH,
        HostedTool.FILE_SEARCH,
        HostedTool.CODE_INTERPRETER,
    ),
    "anthropic": (HostedTool.WEB_SEARCH, HostedTool.CODE_EXECUTION),
    "openai-chat": (),
}
_WIRE_WORDS: dict[Wire, str] = {
    "openai-responses": "the OpenAI Responses API",
    "anthropic": "the Anthropic Messages API",
    "openai-chat": "the Chat Completions API",
}
# Anthropic's code execution tool, and the beta header that turns it on.
ANTHROPIC_CODE_EXECUTION = "code_execution_20250825"
ANTHROPIC_CODE_EXECUTION_BETA = "code-execution-2025-08-25"
ANTHROPIC_WEB_SEARCH = "web_search_20250305"
# Responses output item type -> the hosted tool's name.
RESPONSES_ITEMS = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
}
_FAILED = frozenset({"failed", "incomplete"})


def check_hosted_tools(
    provider: str, wire: Wire, tools: Iterable[str], vector_store_ids: Sequence[str] = ()
) -> list[HostedTool]:
    """``tools`` as ``HostedTool``s, each offered by ``provider``'s wire API, without repeats;
    ``HostedToolUnsupported`` naming the tool and the provider when one is not (or is no
    hosted tool at all), or when ``file_search`` has no vector store to search."""
    offered = OFFERED.get(wire, ())
    chosen: list[HostedTool] = []
    for name in tools:
        if name not in HostedTool._value2member_map_:
            known = ", ".join(HostedTool)
            raise HostedToolUnsupported(f"{name!r} is no hosted tool (known: {known})")
        tool = HostedTool(name)
        if tool not in offered:
            has = ", ".join(offered) if offered else "none"
            raise HostedToolUnsupported(
                f"provider {provider!r} ({_WIRE_WORDS.get(wire, wire)}) does not offer the "
                f"hosted tool {tool.value!r} (it offers: {has})"
            )
        if tool not in chosen:
            chosen.append(tool)
    if HostedTool.FILE_SEARCH in chosen and not vector_store_ids:
        raise HostedToolUnsupported(
            "the hosted tool 'file_search' needs the vector stores to search (vector_store_ids)"
        )
    return chosen


# --- requests ---------------------------------------------------------------------------------


def responses_tools(request: ProviderRequest) -> list[dict[str, Any]]:
    """The Responses ``tools`` entries of the request's hosted tools."""
    tools: list[dict[str, Any]] = []
    for name in request.hosted_tools:
        if name == HostedTool.WEB_SEARCH:
            tools.append({"type": "web_search"})
        elif name == HostedTool.FILE_SEARCH:
            tools.append(
                {"type": "file_search", "vector_store_ids": list(request.vector_store_ids)}
            )
        elif name == HostedTool.CODE_INTERPRETER:
            tools.append({"type": "code_interpreter", "container": {"type": "auto"}})
    return tools


def anthropic_tools(request: ProviderRequest) -> tuple[list[dict[str, Any]], list[str]]:
    """The Anthropic ``tools`` entries of the request's hosted tools, and the beta headers they
    need."""
    tools: list[dict[str, Any]] = []
    betas: list[str] = []
    for name in request.hosted_tools:
        if name == HostedTool.WEB_SEARCH:
            tools.append({"type": ANTHROPIC_WEB_SEARCH, "name": "web_search"})
        elif name == HostedTool.CODE_EXECUTION:
            tools.append({"type": ANTHROPIC_CODE_EXECUTION, "name": "code_execution"})
            betas.append(ANTHROPIC_CODE_EXECUTION_BETA)
    return tools, betas


# --- OpenAI Responses output items ------------------------------------------------------------


def responses_call(item: dict[str, Any]) -> HostedToolCall | None:
    """The hosted call of a finished output item (``response.output_item.done``), or None when
    the item is none."""
    name = RESPONSES_ITEMS.get(str(item.get("type")))
    if name is None:
        return None
    if name == "web_search":
        action = dict(item.get("action") or {})
        sources = action.pop("sources", None) or []
        arguments: dict[str, Any] = action
        output = "\n".join(str(s.get("url")) for s in sources if s.get("url"))
    elif name == "file_search":
        arguments = {"queries": list(item.get("queries") or [])}
        output = "\n\n".join(
            f"{r.get('filename') or r.get('file_id') or '?'}: {r.get('text') or ''}"
            for r in item.get("results") or []
        )
    else:
        arguments = {"code": item.get("code") or ""}
        output = "\n".join(
            str(o.get("logs") if o.get("type") == "logs" else o.get("url"))
            for o in item.get("outputs") or []
        )
    return HostedToolCall(
        tool_call_id=str(item.get("id")),
        name=name,
        api=RESPONSES_API,
        input=arguments,
        output=output,
        is_error=item.get("status") in _FAILED,
        echo=[item],
    )


# --- Anthropic server tool blocks ---------------------------------------------------------------


def is_result_block(kind: str) -> bool:
    """A server tool's result block (``web_search_tool_result``,
    ``bash_code_execution_tool_result``...), not the ``tool_result`` we send."""
    return kind.endswith("_tool_result") and kind != "tool_result"


@dataclass
class ServerToolUses:
    """An Anthropic stream's ``server_tool_use`` blocks, complete, until their result block."""

    uses: dict[str, dict[str, Any]] = field(default_factory=dict)  # by block id

    def used(self, block: dict[str, Any], input_json: str) -> None:
        """A ``server_tool_use`` block ended: its opening block and its streamed input."""
        use = dict(block)
        if input_json:
            try:
                use["input"] = json.loads(input_json)
            except ValueError:
                use["input"] = {"raw": input_json}
        self.uses[str(use.get("id"))] = use

    def answered(self, result: dict[str, Any]) -> HostedToolCall:
        """The call a result block answers (a result without its use is recorded alone)."""
        use_id = str(result.get("tool_use_id"))
        use = self.uses.pop(use_id, None)
        kind = str(result.get("type"))
        name = str(use.get("name")) if use else kind.removesuffix("_tool_result")
        output, failed = anthropic_output(result.get("content"))
        echo = [use, result] if use else [result]
        return HostedToolCall(
            tool_call_id=use_id,
            name=name,
            api=ANTHROPIC_API,
            input=dict(use.get("input") or {}) if use else {},
            output=output,
            is_error=failed,
            echo=echo,
        )


def anthropic_output(content: Any) -> tuple[str, bool]:
    """A result block's content as text, and whether it is an error: web search results as
    ``title — url`` lines, a code execution's stdout and stderr, an error's code."""
    if isinstance(content, list):
        lines = [
            f"{r.get('title') or ''} — {r.get('url')}".strip(" —")
            for r in content
            if isinstance(r, dict) and r.get("url")
        ]
        return "\n".join(lines), False
    if isinstance(content, dict):
        kind = str(content.get("type") or "")
        if kind.endswith("_error"):
            return str(content.get("error_code") or kind), True
        if "stdout" in content or "stderr" in content:
            text = "".join(str(content.get(k) or "") for k in ("stdout", "stderr"))
            code = content.get("return_code")
            return (f"{text}\n(exit code {code})" if code else text), False
    return json.dumps(content, ensure_ascii=False, sort_keys=True), False
