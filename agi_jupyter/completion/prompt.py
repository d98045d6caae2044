"""What a completion asks the model, bounded in tokens, and how its answer becomes one insertion.

The context of a completion is the text before the cursor (``prefix``) and after it
(``suffix``), the cells around it (markdown as comments of the language) and the kernel's
variables with their types. ``bounded`` keeps it within ``context_tokens`` (estimated at four
characters a token): the end of the prefix first, then the start of the suffix, then the
nearest cells and the variables while room is left. A fill-in-the-middle server gets the
pieces as they are (``Context``); a chat model gets ``chat_prompt``, which asks for one code
block. ``Cleaner`` turns what the model streams into the text to insert: the first code
block's content if it wrote one, without what it repeated of the prefix or the suffix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CHARS_PER_TOKEN = 4
CURSOR = "<CURSOR>"
MIN_OVERLAP = 8  # characters: a shorter repeat of the prefix or suffix may be intended
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*$", re.MULTILINE)
_LINE_COMMENTS = {
    "sql": "--",
    "lua": "--",
    "haskell": "--",
    "javascript": "//",
    "typescript": "//",
    "java": "//",
    "c": "//",
    "cpp": "//",
    "c++": "//",
    "go": "//",
    "rust": "//",
    "scala": "//",
    "kotlin": "//",
    "swift": "//",
    "matlab": "%",
    "octave": "%",
}


@dataclass(frozen=True)
class Cell:
    """A cell around the cursor: ``code``, ``markdown`` or ``raw``, and its source."""

    cell_type: str
    source: str


@dataclass(frozen=True)
class Variable:
    """A kernel variable: its name, type and a short summary (shape, dtype, columns)."""

    name: str
    type: str
    summary: str = ""


@dataclass(frozen=True)
class CompletionRequest:
    prefix: str
    suffix: str = ""
    language: str = "python"
    path: str | None = None
    cell_id: str | None = None
    model: str | None = None  # a provider:model spec; None: completion.model
    cells_before: tuple[Cell, ...] = ()  # nearest last
    cells_after: tuple[Cell, ...] = ()  # nearest first
    variables: tuple[Variable, ...] = ()
    max_output_tokens: int | None = None


@dataclass(frozen=True)
class Context:
    """The bounded pieces a model gets: ``extra`` is the cells and variables as comments."""

    prefix: str
    suffix: str
    extra: str
    language: str
    path: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.prefix + self.suffix + self.extra)


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def comment_mark(language: str) -> str:
    return _LINE_COMMENTS.get(language.lower(), "#")


def as_comment(text: str, language: str) -> str:
    mark = comment_mark(language)
    return "\n".join(f"{mark} {line}".rstrip() for line in text.splitlines())


def bounded(request: CompletionRequest, context_tokens: int) -> Context:
    """The request's context within ``context_tokens``: three fifths for the prefix, one
    fifth for the suffix (what either leaves goes to the other), the rest for the cells around
    and the variables, nearest first."""
    room = context_tokens * CHARS_PER_TOKEN
    suffix = _head(request.suffix, min(len(request.suffix), room // 5))
    prefix = _tail(request.prefix, room - len(suffix) - room // 5)
    left = room - len(prefix) - len(suffix)
    extra = _extra(request, left)
    return Context(prefix, suffix, extra, request.language, request.path)


def _tail(text: str, chars: int) -> str:
    """The end of ``text`` in ``chars`` characters, from a line start when it is cut."""
    if len(text) <= chars:
        return text
    cut = text[len(text) - max(0, chars) :]
    newline = cut.find("\n")
    return cut[newline + 1 :] if 0 <= newline < len(cut) - 1 else cut


def _head(text: str, chars: int) -> str:
    """The start of ``text`` in ``chars`` characters, up to a line end when it is cut."""
    if len(text) <= chars:
        return text
    cut = text[: max(0, chars)]
    newline = cut.rfind("\n")
    return cut[: newline + 1] if newline > 0 else cut


def _extra(request: CompletionRequest, chars: int) -> str:
    """Variables, then cells nearest first, as long as they fit in ``chars``; in reading order."""
    language = request.language
    pieces: list[tuple[int, str]] = []  # (order, text)
    used = 0
    candidates: list[tuple[int, str]] = []
    if request.variables:
        lines = [
            f"{v.name}: {v.type}" + (f" = {v.summary}" if v.summary else "")
            for v in request.variables
        ]
        candidates.append(
            (-1_000_000, as_comment("kernel variables:\n" + "\n".join(lines), language))
        )
    before = list(enumerate(reversed(request.cells_before)))
    after = list(enumerate(request.cells_after))
    for distance in range(max(len(before), len(after))):
        if distance < len(before):
            candidates.append((-distance - 1, _cell_text(before[distance][1], language)))
        if distance < len(after):
            candidates.append((distance + 1, _cell_text(after[distance][1], language)))
    for order, text in candidates:
        if not text.strip() or used + len(text) + 2 > chars:
            continue
        pieces.append((order, text))
        used += len(text) + 2
    return "".join(text + "\n\n" for _order, text in sorted(pieces))


def _cell_text(cell: Cell, language: str) -> str:
    if cell.cell_type == "code":
        return cell.source.rstrip()
    return as_comment(cell.source.rstrip(), language)


# --- the chat prompt ---------------------------------------------------------------------------

SYSTEM = (
    "You complete code where the cursor is, as an editor's inline suggestion. Answer with "
    "exactly one fenced code block holding only the text to insert at {cursor}: no "
    "explanation, nothing before or after the block, never the code that is already before "
    "or after the cursor. Keep it short: finish the statement or the block being written."
)


def chat_prompt(context: Context) -> tuple[str, str]:
    """``(system, user)`` for a chat model: the context, then the code with the cursor."""
    where = f" of {context.path}" if context.path else ""
    parts = []
    if context.extra:
        parts.append(
            f"Context{where} (cells around the cursor, kernel variables):\n"
            f"```{context.language}\n{context.extra.rstrip()}\n```"
        )
    parts.append(
        f"Complete the {context.language} code at {CURSOR}:\n"
        f"```{context.language}\n{context.prefix}{CURSOR}{context.suffix}\n```"
    )
    return SYSTEM.format(cursor=CURSOR), "\n\n".join(parts)


# --- the answer --------------------------------------------------------------------------------


class Cleaner:
    """What a model streams, as the one insertion it means. ``feed`` takes each piece and
    returns the insertion so far (or None when it did not change); ``done`` is set once a
    code block closed (what follows is ignored); ``final`` is the
    insertion with what it repeated of the prefix or the suffix taken off."""

    def __init__(self, prefix: str, suffix: str) -> None:
        self.prefix = prefix
        self.suffix = suffix
        self.raw = ""
        self.done = False
        self._shown = ""

    def feed(self, text: str) -> str | None:
        if self.done:
            return None
        self.raw += text
        shown = self._visible(final=False)
        if shown == self._shown:
            return None
        self._shown = shown
        return shown

    def final(self) -> str:
        return _without_suffix(self._visible(final=True), self.suffix)

    def _visible(self, *, final: bool) -> str:
        body, closed = code_block(self.raw, final=final)
        if closed:
            self.done = True
        body = body.replace(CURSOR, "")
        if not final and not closed:
            body = _hold_partial_line(body)
        return _without_prefix(body, self.prefix)


def code_block(text: str, *, final: bool = True) -> tuple[str, bool]:
    """The content of the first fenced block of ``text`` and whether it closed; ``text``
    itself when it has no fence. An answer that starts with prose before its block keeps only
    the block."""
    opening = _FENCE.search(text)
    if opening is None:
        return text, False
    start = opening.end() + 1
    if start > len(text):  # the fence line is all there is yet
        return "", False
    closing = _FENCE.search(text, start)
    if closing is None:
        return text[start:], False
    return text[start : closing.start()].removesuffix("\n"), True


def _hold_partial_line(text: str) -> str:
    """Streamed text without a last line that may still become a fence."""
    head, _, last = text.rpartition("\n")
    if last.lstrip().startswith(("`", "~")) or (not head and text.lstrip() in ("`", "``")):
        return head + ("\n" if head else "")
    return text


def _without_prefix(text: str, prefix: str) -> str:
    """``text`` without what it repeats of the end of ``prefix``: the current line (with or
    without its indentation, or the indentation alone when that is all the line has yet), or
    a repeat of at least ``MIN_OVERLAP`` characters."""
    line = prefix.rpartition("\n")[2]
    for repeated in (line, line.lstrip()):
        if repeated and text.startswith(repeated):
            return text[len(repeated) :]
    if line.strip() and text.lstrip().startswith(line.lstrip()):  # indented otherwise
        return text.lstrip()[len(line.lstrip()) :]
    for size in range(min(len(text), len(prefix)), MIN_OVERLAP - 1, -1):
        if prefix.endswith(text[:size]):
            return text[size:]
    return text


def _without_suffix(text: str, suffix: str) -> str:
    """``text`` without what it repeats of the start of ``suffix``, trailing blanks off."""
    first = next((line for line in suffix.splitlines() if line.strip()), "")
    if first.strip() and len(first.strip()) >= MIN_OVERLAP // 2:
        at = text.find(first.strip())
        if at > 0:
            text = text[:at]
    for size in range(min(len(text), len(suffix)), MIN_OVERLAP - 1, -1):
        if suffix.startswith(text[-size:]):
            text = text[:-size]
            break
    return text.rstrip()
