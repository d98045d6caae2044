"""The executor: refusals, argument errors, exceptions, timeouts, cancellation, artifacts,
redaction. Nothing but cancellation may escape it."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from agi_jupyter.errors import ToolError
from agi_jupyter.store import SqliteStore
from agi_jupyter.tools import (
    ArtifactDraft,
    Redactor,
    ToolContext,
    ToolOutcome,
    ToolRegistry,
    ToolResult,
    execute_tool_call,
    tool,
)
from tests.tools.conftest import Call, Emitted

SECRET = "sk-test-very-secret-123456"


class EchoArgs(BaseModel):
    text: str
    times: int = 1


@tool("test.echo", read_only=True)
async def echo(args: EchoArgs) -> str:
    return args.text * args.times


@tool("test.fail")
async def fail(args: EchoArgs) -> str:
    if args.text == "tool":
        raise ToolError(f"the widget {args.text!r} is broken")
    raise KeyError(args.text)


@tool("test.bad")
async def bad(args: EchoArgs) -> ToolResult:
    return ToolResult(output=f"failed with {args.text}", ok=False, data={"echo": args.text, "n": 1})


@tool("test.sleep")
async def sleep(args: EchoArgs) -> str:
    await asyncio.sleep(args.times / 10)
    return "woke up"


@tool("test.draft")
async def draft(args: EchoArgs) -> ToolResult:
    return ToolResult(
        output="made a report",
        data={"text": args.text},
        artifact=ArtifactDraft(
            kind="report", title="Report", mime="text/markdown", data={"k": args.text}, text="# hi"
        ),
    )


@tool("test.stream", read_only=True)
async def stream(args: EchoArgs, ctx: ToolContext) -> str:
    ctx.emit("stdout", args.text)
    return "streamed"


@tool("test.kernel", requires={"kernel"}, read_only=True)
async def kernel_only(args: EchoArgs) -> str:
    return "in the kernel"


@pytest.fixture(autouse=True)
def register_test_tools(registry: ToolRegistry) -> None:
    for item in (echo, fail, bad, sleep, draft, stream, kernel_only):
        registry.register(item)


@pytest.mark.asyncio
async def test_a_call_completes(call: Call) -> None:
    outcome = await call("test.echo", {"text": "ab", "times": 2})
    assert outcome.status == "completed"
    assert outcome.ok
    assert outcome.output == "abab"
    assert outcome.result == {"ok": True, "output": "abab"}
    assert outcome.arguments == {"text": "ab", "times": 2}
    assert outcome.tool_call_id == "call_1"
    assert outcome.name == "test.echo"
    assert outcome.artifact is None
    assert outcome.error is None
    assert outcome.started_at <= outcome.finished_at
    assert outcome.finished_at.endswith("Z")


@pytest.mark.asyncio
async def test_unknown_tool_is_denied(call: Call) -> None:
    outcome = await call("nope", {}, allowed=("test.echo",))
    assert outcome.status == "denied"
    assert not outcome.ok
    assert outcome.output == "tool 'nope' does not exist; the tools you can call are: test.echo"
    assert outcome.error == {"code": "TOOL_DENIED", "message": outcome.output}


@pytest.mark.asyncio
async def test_tool_not_allowed_for_the_agent_is_denied(call: Call) -> None:
    outcome = await call("shell.run", {"command": "echo hi"}, allowed=("fs.*",), agent="plan")
    assert outcome.status == "denied"
    assert "tool 'shell.run' is not available to agent 'plan'" in outcome.output
    assert "fs.read" in outcome.output


@pytest.mark.asyncio
async def test_missing_feature_is_denied(call: Call) -> None:
    outcome = await call("test.kernel", {"text": "x"})
    assert outcome.status == "denied"
    assert "needs kernel" in outcome.output
    ok = await call("test.kernel", {"text": "x"}, features=frozenset({"kernel"}))
    assert ok.output == "in the kernel"


@pytest.mark.asyncio
async def test_read_only_agents_cannot_call_writing_tools(call: Call) -> None:
    outcome = await call("fs.write", {"path": "a.txt", "content": "x"}, read_only=True)
    assert outcome.status == "denied"
    assert "may only read" in outcome.output
    assert (await call("test.echo", {"text": "x"}, read_only=True)).ok


@pytest.mark.asyncio
async def test_unparseable_arguments_fail_clearly(registry: ToolRegistry, ctx: ToolContext) -> None:
    outcome = await execute_tool_call(
        registry,
        name="test.echo",
        arguments={},
        raw_arguments_error="Expecting ',' delimiter: line 1 column 9",
        allowed=["*"],
        ctx=ctx,
        timeout=5,
    )
    assert outcome.status == "failed"
    assert "were not usable" in outcome.output
    assert "Expecting ','" in outcome.output
    assert outcome.error is not None
    assert outcome.error["code"] == "INVALID_ARGUMENTS"


@pytest.mark.asyncio
async def test_invalid_arguments_are_summarised(call: Call) -> None:
    outcome = await call("test.echo", {"times": "many"})
    assert outcome.status == "failed"
    assert outcome.output.startswith("invalid arguments for test.echo: ")
    assert "text: Field required" in outcome.output
    assert "times: Input should be a valid integer" in outcome.output
    extra = await call("fs.read", {"path": "a", "colour": "red"})
    assert "colour: Extra inputs are not permitted" in extra.output


@pytest.mark.asyncio
async def test_tool_errors_are_verbatim_and_others_named(call: Call) -> None:
    verbatim = await call("test.fail", {"text": "tool"})
    assert verbatim.status == "failed"
    assert verbatim.output == "the widget 'tool' is broken"
    assert verbatim.error == {"code": "TOOL_ERROR", "message": "the widget 'tool' is broken"}
    other = await call("test.fail", {"text": "zz"})
    assert other.status == "failed"
    assert other.output == "KeyError: 'zz'"
    assert other.result["ok"] is False


@pytest.mark.asyncio
async def test_a_result_with_ok_false_is_a_failure(call: Call) -> None:
    outcome = await call("test.bad", {"text": "x"})
    assert outcome.status == "failed"
    assert outcome.result == {
        "ok": False,
        "output": "failed with x",
        "data": {"echo": "x", "n": 1},
        "error": {"code": "TOOL_ERROR", "message": "failed with x"},
    }


@pytest.mark.asyncio
async def test_timeout_fails_the_call(call: Call) -> None:
    outcome = await call("test.sleep", {"text": "", "times": 300}, deadline=0.1)
    assert outcome.status == "failed"
    assert outcome.output == "tool test.sleep timed out after 0.1 s and was stopped"
    assert outcome.error is not None
    assert outcome.error["code"] == "TOOL_TIMEOUT"


@pytest.mark.asyncio
async def test_cancellation_propagates(registry: ToolRegistry, ctx: ToolContext) -> None:
    task = asyncio.create_task(
        execute_tool_call(
            registry,
            name="test.sleep",
            arguments={"text": "", "times": 300},
            allowed=["*"],
            ctx=ctx,
            timeout=60,
        )
    )
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.asyncio
async def test_a_call_that_ran_is_recorded_when_cancelled_before_its_result_is_stored(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    """A cancel (a graceful close) that lands after the tool returned, while its outcome is
    being stored, waits for the store: a call that ran is never left unrecorded. The task is
    cancelled after."""
    recording, release = asyncio.Event(), asyncio.Event()
    recorded: list[str] = []

    async def record(outcome: ToolOutcome) -> None:
        recording.set()
        await release.wait()  # a store write still in flight
        recorded.append(outcome.status)

    task = asyncio.create_task(
        execute_tool_call(
            registry,
            name="test.echo",
            arguments={"text": "done"},
            allowed=["*"],
            ctx=ctx,
            timeout=60,
            record=record,
        )
    )
    await asyncio.wait_for(recording.wait(), timeout=10)
    task.cancel()
    await asyncio.sleep(0)
    assert not task.done()  # still storing the result
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorded == ["completed"]


@pytest.mark.asyncio
async def test_large_output_becomes_an_artifact(call: Call, store: SqliteStore) -> None:
    text = "line of output\n" * 1000  # 15 000 bytes, threshold 4096
    outcome = await call("test.echo", {"text": text})
    assert outcome.status == "completed"
    artifact = outcome.artifact
    assert artifact is not None
    assert artifact.kind == "tool_output"
    assert len(outcome.output.encode()) < 4096
    assert outcome.output.startswith("line of output\n")
    assert f"artifact {artifact.id}" in outcome.output
    assert "15000 bytes" in outcome.output
    assert outcome.result["output_artifact_id"] == artifact.id
    assert store.read_artifact(artifact.id).decode() == text


@pytest.mark.asyncio
async def test_artifact_drafts_are_stored(call: Call, store: SqliteStore) -> None:
    outcome = await call("test.draft", {"text": "v"})
    assert outcome.artifact is not None
    saved = store.get_artifact(outcome.artifact.id)
    assert (saved.kind, saved.title, saved.mime) == ("report", "Report", "text/markdown")
    assert saved.data == {"k": "v"}
    assert saved.text == "# hi"
    assert outcome.result["artifact_id"] == saved.id
    assert outcome.result["data"] == {"text": "v"}


@pytest.mark.asyncio
async def test_secrets_are_redacted_everywhere(
    call: Call, store: SqliteStore, emitted: Emitted
) -> None:
    redactor = Redactor({"OPENAI_API_KEY": SECRET})
    ok = await call("test.echo", {"text": f"key={SECRET}"}, redactor=redactor)
    assert ok.arguments == {"text": "key=[REDACTED:OPENAI_API_KEY]"}
    assert ok.output == "key=[REDACTED:OPENAI_API_KEY]"
    assert SECRET not in str(ok.result)
    failed = await call("test.fail", {"text": SECRET}, redactor=redactor)
    assert SECRET not in failed.output
    assert SECRET not in str(failed.error)
    assert SECRET not in str(failed.arguments)
    bad_result = await call("test.bad", {"text": SECRET}, redactor=redactor)
    assert bad_result.result["data"] == {"echo": "[REDACTED:OPENAI_API_KEY]", "n": 1}
    drafted = await call("test.draft", {"text": SECRET}, redactor=redactor)
    assert drafted.artifact is not None
    assert store.get_artifact(drafted.artifact.id).data == {"k": "[REDACTED:OPENAI_API_KEY]"}
    await call("test.stream", {"text": f"echo {SECRET}"}, redactor=redactor)
    assert emitted.chunks == [("stdout", "echo [REDACTED:OPENAI_API_KEY]")]
    big = await call("test.echo", {"text": f"{SECRET}\n" * 500}, redactor=redactor)
    assert big.artifact is not None
    assert SECRET not in store.read_artifact(big.artifact.id).decode()


@pytest.mark.asyncio
async def test_independent_calls_run_concurrently(call: Call) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    outcomes = await asyncio.gather(
        *(call("test.sleep", {"text": "", "times": 5}) for _ in range(3))
    )
    assert [o.output for o in outcomes] == ["woke up"] * 3
    assert loop.time() - start < 1.2
