"""Keep secrets out of everything stored, streamed, shown or sent to a provider, by value.

A ``Redactor`` knows secret *values* and replaces them by ``[REDACTED:<NAME>]`` wherever they
appear. Its secrets are (this module never reads the environment or files itself):

- every value of the credentials file written by ``agi setup`` (``credentials``);
- every environment value that is secret by its variable's name (``*_KEY``, ``*_TOKEN``,
  ``*SECRET*``, ``*PASSWORD*``...) or by its shape: a known key prefix (``sk-``, ``sk-ant-``,
  ``rk_live_``, ``ghp_``, ``xox?-``, ``AKIA``...), a password inside a URL
  (``postgres://user:PASSWORD@host``: the password), or a long high-entropy token;
- literal values given as ``extra``; regular expressions given as ``patterns`` (every match).

Each secret value is also looked for in the forms a command turns it into: reversed (``rev``),
hexadecimal (``xxd -p``, either case), and base64 and base64url (``base64``), at each of the
three byte alignments the secret can have inside a longer encoded text, and with the line
breaks ``base64``/``xxd`` insert into long output. Values shorter than ``min_length`` (8) are
not redacted (they would hit ordinary text); ``allow`` lists variable names or values that are
never treated as secret. Not covered: other encodings (URL-encoding aside from URL passwords,
compression, encryption), a secret printed in pieces, and secrets no source above knows.

``stream()`` gives a ``StreamRedactor`` for text that arrives in chunks (a command's live
output): it holds back only a chunk's tail that could be the start of a secret, so a secret
split across two chunks is still caught.
"""

from __future__ import annotations

import base64
import logging
import math
import re
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, AnyStr, Generic
from urllib.parse import unquote, urlsplit

SECRET_NAME = re.compile(
    r"(_KEY|_TOKEN|_PAT|_APIKEY|_AUTH)$|^(API_?KEY|TOKEN)$|APIKEY|SECRET|PASSWORD|PASSWD|"
    r"CREDENTIAL|PRIVATE_KEY|ACCESS_KEY",
    re.IGNORECASE,
)
SECRET_PREFIXES = re.compile(
    r"^(sk-|sk_(live|test)_|rk_(live|test)_|pk_live_|whsec_|ghp_|gho_|ghu_|ghs_|ghr_|"
    r"github_pat_|glpat-|xox[abposr]-|xapp-|AKIA[0-9A-Z]{12}|ASIA[0-9A-Z]{12}|AIza|hf_|npm_|"
    r"pypi-|dop_v1_|SG\.|-----BEGIN [A-Z ]*PRIVATE KEY)"
)
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9_\-+/=.~]+$")
MIN_SECRET_LENGTH = 8
MIN_TOKEN_LENGTH = 24  # a high-entropy token shorter than this is not taken for a secret
MIN_TOKEN_BITS = 3.5  # Shannon entropy per character of such a token
EXTRA_HOLD = 256  # characters a stream holds back when regular expressions are configured
_NEWLINES = "\r\n"


def looks_secret(name: str) -> bool:
    """Whether an environment variable name suggests its value is a secret."""
    return bool(SECRET_NAME.search(name))


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def looks_like_token(value: str) -> bool:
    """A value shaped like a credential: a known key prefix, or a long high-entropy token
    (letters and digits, no spaces, not a path)."""
    if SECRET_PREFIXES.match(value):
        return True
    if len(value) < MIN_TOKEN_LENGTH or not _TOKEN_CHARS.match(value):
        return False
    if value.startswith(("/", ".", "~")) or "//" in value or ".." in value:
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    return _entropy(value) >= MIN_TOKEN_BITS


def url_password(value: str) -> str | None:
    """The password of a URL with credentials (``scheme://user:password@host``), if any."""
    if "://" not in value or "@" not in value:
        return None
    try:
        password = urlsplit(value.strip()).password
    except ValueError:
        return None
    return password or None


def env_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """The secret values of an environment, by variable name (see the module docstring)."""
    found: dict[str, str] = {}
    for name, value in env.items():
        if not isinstance(value, str) or not value:
            continue
        if looks_secret(name) or looks_like_token(value):
            found[name] = value
            continue
        password = url_password(value)
        if password:
            found[name] = password
    return found


# --- the forms a secret takes ------------------------------------------------------------------


def _base64_cores(data: bytes) -> set[str]:
    """The base64 / base64url text that ``data`` always encodes to inside a longer encoded
    stream, whatever its offset (mod 3) there: the characters its bits alone decide."""
    cores: set[str] = set()
    for align in range(3):
        skip = -(-8 * align // 6)  # characters that mix in bits of what came before
        end = (align + len(data)) * 8 // 6  # characters completed by the secret's own bits
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            cores.add(encode(b"\0" * align + data).decode()[skip:end])
    return cores


def secret_forms(value: str) -> set[str]:
    """The texts a secret value appears as: itself, reversed, hex, base64 (see above)."""
    data = value.encode("utf-8", errors="surrogateescape")
    forms = {value, value[::-1], data.hex(), data.hex().upper(), *_base64_cores(data)}
    if "%" in value:
        forms.add(unquote(value))
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}


# --- matching many literals at once ------------------------------------------------------------

Trie = dict[str, "Trie"]
_END = ""  # the key marking the end of a form in a trie node
_BREAK = "(?:\\r?\\n)?"  # base64 / xxd break long output into lines, anywhere in a secret


def _trie(words: Iterable[str]) -> Trie:
    root: Trie = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[_END] = {}
    return root


def _trie_regex(node: Trie, *, partial: bool = False) -> str:
    """A regular expression matching the longest of the trie's words at a position (with
    optional line breaks between characters); it tests one character at a time instead of
    every word in turn (~5x faster than ``a|b|c``). ``partial``: any non-empty prefix of a
    word that may still grow into a word instead (anchor it at the end of a text to find a
    tail that may begin a secret)."""
    branches = []
    for char, start in node.items():
        if not char:
            continue
        chain, child = [re.escape(char)], start
        while len(child) == 1 and _END not in child:  # a run without branches: no group
            ((char, child),) = child.items()
            chain.append(re.escape(char))
        rest = _trie_regex(child, partial=partial)
        if partial:
            if not any(child):  # a whole word is not the start of a secret still to come
                chain = chain[:-1]
                if not chain:
                    continue
            tail = f"(?:{_BREAK}{rest})?" if rest else ""
            for c in reversed(chain[1:]):
                tail = f"(?:{_BREAK}{c}{tail})?"
            branches.append(chain[0] + tail)
        else:
            branches.append(_BREAK.join(chain) + (_BREAK + rest if rest else ""))
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return f"(?:{body})?" if _END in node and not partial else body


class _Matcher(Generic[AnyStr]):
    """The compiled search for one text type: ``full`` finds secret forms (and pattern
    matches); ``tail`` finds, at the end of a text, the start of what may begin a form."""

    def __init__(
        self, full: str, tail: str | None, hold: int, encode: Callable[[str], AnyStr]
    ) -> None:
        self.full: re.Pattern[AnyStr] = re.compile(encode(full))
        self.hold = hold  # how far back from a text's end a form that is not complete can start
        self.tail: re.Pattern[AnyStr] | None = None
        if tail is not None:
            self.tail = re.compile(encode(f"(?:{tail})(?:\\r?\\n|\\r)?\\Z"))


def _encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


class Redactor:
    """Replaces secret values (and their encoded forms) in strings, bytes and JSON values."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        extra: Mapping[str, str] | None = None,
        credentials: Mapping[str, str] | None = None,
        patterns: Iterable[str] = (),
        allow: Iterable[str] = (),
        min_length: int = MIN_SECRET_LENGTH,
    ) -> None:
        allowed = set(allow)
        secrets: dict[str, str] = {}  # value -> name
        named = [
            *env_secrets(env or {}).items(),
            *((f"credentials.{k}", v) for k, v in (credentials or {}).items()),
        ]
        for name, value in [*named, *(extra or {}).items()]:
            if name in allowed or value in allowed or len(value) < min_length:
                continue
            if name in (extra or {}):
                secrets[value] = name  # the caller's name for a value wins (it says what it is)
            else:
                secrets.setdefault(value, name)
        self._names = sorted(set(secrets.values()))
        self._by_form: dict[str, str] = {}
        for value, name in sorted(secrets.items(), key=lambda item: -len(item[0])):
            for form in secret_forms(value):
                self._by_form.setdefault(form, name)
        self._patterns = [re.compile(p) for p in patterns]
        self._full = "|".join(
            ([_trie_regex(_trie(self._by_form))] if self._by_form else [])
            + [f"(?:{p.pattern})" for p in self._patterns]
        )
        # A regular expression's matches have no known beginnings: hold a fixed tail instead.
        self._tail = None if self._patterns else _trie_regex(_trie(self._by_form), partial=True)
        # Line breaks may double a form's length; a UTF-8 character has up to 4 bytes.
        self._hold = 8 * max((len(form) for form in self._by_form), default=0) + 2
        self._str: _Matcher[str] | None = None
        self._bytes: _Matcher[bytes] | None = None
        if self._full:
            self._str = _Matcher(self._full, self._tail, self._hold, str)

    @property
    def names(self) -> list[str]:
        """The names of the variables whose values are redacted (never the values)."""
        return list(self._names)

    def __bool__(self) -> bool:
        return self._str is not None

    def _name(self, text: str) -> str:
        name = self._by_form.get(text)
        if name is None and any(c in text for c in _NEWLINES):
            name = self._by_form.get(re.sub(r"\r?\n", "", text))
        return name or "pattern"

    def _replace_str(self, match: re.Match[str]) -> str:
        return f"[REDACTED:{self._name(match.group(0))}]"

    def _replace_bytes(self, match: re.Match[bytes]) -> bytes:
        name = self._name(match.group(0).decode("utf-8", errors="surrogateescape"))
        return f"[REDACTED:{name}]".encode()

    def redact_text(self, value: str) -> str:
        if self._str is None or not value:
            return value
        return self._str.full.sub(self._replace_str, value)

    def redact_bytes(self, value: bytes) -> bytes:
        matcher = self._bytes_matcher()
        if matcher is None or not value:
            return value
        return matcher.full.sub(self._replace_bytes, value)

    def _bytes_matcher(self) -> _Matcher[bytes] | None:
        if self._bytes is None and self._full:
            self._bytes = _Matcher(self._full, self._tail, self._hold, _encode)
        return self._bytes

    def redact_json(self, value: Any) -> Any:
        """A copy of a JSON value with every string (keys included) redacted."""
        if self._str is None:
            return value
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return {self.redact_text(str(k)): self.redact_json(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_json(v) for v in value]
        return value

    __call__ = redact_json

    def stream(self) -> StreamRedactor[str]:
        """A redactor for one stream of text chunks (see ``StreamRedactor``)."""
        return StreamRedactor(self._str, self._replace_str, "")

    def byte_stream(self) -> StreamRedactor[bytes]:
        """A redactor for one stream of byte chunks (a command's raw output)."""
        return StreamRedactor(self._bytes_matcher(), self._replace_bytes, b"")


class StreamRedactor(Generic[AnyStr]):
    """Redacts a text that arrives in chunks: ``feed`` returns what is safe to pass on now,
    holding back only a tail that could be the start of a secret; ``flush`` ends the stream."""

    def __init__(
        self,
        matcher: _Matcher[AnyStr] | None,
        replace: Callable[[re.Match[AnyStr]], AnyStr],
        empty: AnyStr,
    ) -> None:
        self._matcher: _Matcher[AnyStr] | None = matcher
        self._replace: Callable[[re.Match[AnyStr]], AnyStr] = replace
        self._empty: AnyStr = empty
        self._carry: AnyStr = empty

    def feed(self, chunk: AnyStr) -> AnyStr:
        matcher = self._matcher
        if matcher is None:
            return chunk
        text = self._carry + chunk
        cut = self._held_from(matcher, text)
        out: list[AnyStr] = []
        pos = 0
        for match in matcher.full.finditer(text):
            if match.start() >= cut:
                break
            out += [text[pos : match.start()], self._replace(match)]
            pos = match.end()
        cut = max(cut, pos)
        out.append(text[pos:cut])
        self._carry = text[cut:]
        return self._empty.join(out)

    @staticmethod
    def _held_from(matcher: _Matcher[AnyStr], text: AnyStr) -> int:
        if matcher.tail is None:
            return max(0, len(text) - EXTRA_HOLD)
        found = matcher.tail.search(text, max(0, len(text) - matcher.hold))
        return len(text) if found is None else found.start()

    def flush(self) -> AnyStr:
        """What is still held back, redacted; the stream can go on afterwards."""
        carry, self._carry = self._carry, self._empty
        if self._matcher is None or not carry:
            return carry
        return self._matcher.full.sub(self._replace, carry)


# --- logs ------------------------------------------------------------------------------------

_log_redactors: weakref.WeakSet[Redactor] = weakref.WeakSet()
_factory_installed = False


def install_log_redaction(redactor: Redactor) -> None:
    """Redact the secrets ``redactor`` knows from every log record of this process from now
    on (the message, its arguments and a logged exception's traceback). Records are made
    only for enabled levels, so this costs nothing for what is not logged."""
    global _factory_installed
    if not redactor:
        return
    _log_redactors.add(redactor)
    if _factory_installed:
        return
    _factory_installed = True
    make = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        redactors = list(_log_redactors)
        if redactors:
            _redact_record(record, redactors)
        return record

    logging.setLogRecordFactory(factory)


def _redact_record(record: logging.LogRecord, redactors: list[Redactor]) -> None:
    message = record.getMessage()
    trace = logging.Formatter().formatException(record.exc_info) if record.exc_info else None
    for redactor in redactors:
        message = redactor.redact_text(message)
        trace = redactor.redact_text(trace) if trace else trace
    record.msg, record.args = message, None
    if trace:
        record.exc_text = trace
