"""A wire-level fake LLM server for tests, demos and the offline ``fake`` model.

``FakeLLMServer`` listens on 127.0.0.1 and speaks OpenAI Chat Completions, OpenAI Responses
(with background responses) and Anthropic Messages, streamed (SSE) or not, exactly as the real
SDKs expect. A test scripts it with ``Turn``s (text, reasoning, tool calls, usage, citations)
and ``Fault``s (HTTP errors, dropped or truncated streams, delays) and reads back the
``RecordedRequest``s. Unscripted requests get ``default_rule``'s deterministic answer.

Importing this package pulls in no SDK and no HTTP client library.
"""

from agi_jupyter.testing.client import FakeLLMClient
from agi_jupyter.testing.rules import default_rule
from agi_jupyter.testing.script import FakeHostedCall, FakeToolCall, Fault, RecordedRequest, Turn
from agi_jupyter.testing.server import FakeLLMServer

__all__ = [
    "FakeHostedCall",
    "FakeLLMClient",
    "FakeLLMServer",
    "FakeToolCall",
    "Fault",
    "RecordedRequest",
    "Turn",
    "default_rule",
]
