"""What a completion sends the model (bounded) and how its answer becomes one insertion."""

from __future__ import annotations

from agi_jupyter.completion.prompt import (
    Cell,
    Cleaner,
    CompletionRequest,
    Variable,
    bounded,
    chat_prompt,
)


def clean(raw: str, prefix: str = "def f(x):\n", suffix: str = "") -> str:
    cleaner = Cleaner(prefix, suffix)
    cleaner.feed(raw)
    return cleaner.final()


def test_one_code_block_is_the_insertion() -> None:
    assert clean("Sure:\n```python\n    return x\n```\nThis returns x.") == "    return x"
    assert clean("    return x\n") == "    return x"
    assert clean("```\n    return x\n```\n```\nprint(2)\n```") == "    return x"


def test_what_repeats_the_prefix_or_the_suffix_is_taken_off() -> None:
    prefix = "total = 0\nfor item in items:\n    total += "
    assert clean("    total += item.price", prefix) == "item.price"
    suffix = "\nprint(total)\n"
    assert clean("item.price\nprint(total)", prefix, suffix) == "item.price"
    assert clean("x", "a = ") == "x"  # a short answer is kept as it is
    body = "def add(a, b):\n    "
    assert clean("    return a + b", body) == "return a + b"  # the indentation typed already
    assert clean("return a + b", body + "ret") == "urn a + b"  # the line without its indent
    assert clean("    return a + b", body + "ret") == "urn a + b"
    assert clean("    return a + b", "def add(a, b):\nret") == "urn a + b"  # not indented yet


def test_streamed_text_holds_back_a_fence_until_it_is_one() -> None:
    cleaner = Cleaner("def f(x):\n", "")
    shown = [
        cleaner.feed(piece) for piece in ["``", "`python\n", "    return", " x\n", "```", "\nmore"]
    ]
    assert shown == [None, None, "    return", "    return x\n", "    return x", None]
    assert cleaner.done
    assert cleaner.final() == "    return x"


def test_the_context_is_bounded_nearest_first() -> None:
    far = Cell("code", "far = 1\n" * 200)
    near = Cell("markdown", "Compute the total")
    request = CompletionRequest(
        prefix="line\n" * 2000,
        suffix="after\n" * 2000,
        cells_before=(far, near),
        variables=(Variable("df", "DataFrame", "columns a: int64"),),
    )
    context = bounded(request, 500)
    assert context.tokens <= 500
    assert context.prefix.endswith("line\n")
    assert context.prefix.startswith("line")
    assert context.suffix.startswith("after\n")
    assert "# Compute the total" in context.extra  # markdown as a comment
    assert "far = 1" not in context.extra  # did not fit
    assert "# df: DataFrame = columns a: int64" in context.extra


def test_the_chat_prompt_carries_prefix_suffix_and_context() -> None:
    request = CompletionRequest(
        prefix="SELECT *\n",
        suffix="\nLIMIT 5",
        language="sql",
        cells_before=(Cell("markdown", "Top rows"),),
    )
    system, user = chat_prompt(bounded(request, 1000))
    assert "one fenced code block" in system
    assert "SELECT *\n<CURSOR>\nLIMIT 5" in user
    assert "-- Top rows" in user  # markdown as an SQL comment
