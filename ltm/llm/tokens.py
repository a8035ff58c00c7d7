"""Token budgets: counting, truncating and windowing text in tokens, never a mix of characters and words.

Counts are exact for OpenAI models: the ``cl100k_base`` tokenizer comes from
``llama_index.core.utils.get_tokenizer()``, whose table ships inside the llama-index-core wheel, so nothing
is downloaded at run time. Only when that import fails (llama-index-core or tiktoken missing) does a
documented estimate stand in, close to (slightly above) BPE counts for English and code:

- a run of letters/digits costs ``ceil(len / 4)`` tokens (at least 1),
- every CJK character costs 1 token,
- every other non-space character (punctuation, symbols) costs 1 token,
- whitespace is free.

:func:`tokenizer_name` tells which one is active (``"tiktoken:cl100k_base"`` or ``"estimate"``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ltm.errors import InvalidInput

__all__ = ["count_tokens", "split_tokens", "tokenizer_name", "truncate_tokens"]

_ENCODING = "cl100k_base"
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# a run of word characters is cut into pieces of 4, so each piece is one token of the estimate
_PIECE = re.compile(rf"[{_CJK}]|[^\W{_CJK}]{{1,4}}|[^\w\s]", re.UNICODE)


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    """tiktoken's cl100k ``Encoding`` as llama-index-core loads it (offline), else None (the estimate)."""
    try:
        import tiktoken
        from llama_index.core.utils import get_tokenizer
    except ImportError:
        return None
    tokenizer = get_tokenizer()  # a partial of Encoding.encode; its table is the one bundled with the wheel
    encoding = getattr(getattr(tokenizer, "func", None), "__self__", None)
    # set_global_tokenizer() may have put another tokenizer there: windows need cl100k's decode, so estimate
    if isinstance(encoding, tiktoken.Encoding) and encoding.name == _ENCODING:
        return encoding
    return None


def tokenizer_name() -> str:
    """``"tiktoken:cl100k_base"`` when exact counts are available, else ``"estimate"``."""
    return f"tiktoken:{_ENCODING}" if _encoding() is not None else "estimate"


def _spans(text: str) -> list[tuple[int, int]]:
    """(end offset in text, cumulative token count) after each token boundary."""
    enc = _encoding()
    if enc is not None:
        out: list[tuple[int, int]] = []
        tokens = enc.encode(text, disallowed_special=())
        offset = 0
        for i, tok in enumerate(tokens, 1):
            offset += len(enc.decode_single_token_bytes(tok).decode("utf-8", errors="ignore"))
            out.append((min(offset, len(text)), i))
        return out
    return [(match.end(), i) for i, match in enumerate(_PIECE.finditer(text), 1)]


def count_tokens(text: str) -> int:
    """Tokens in ``text`` (exact with cached tiktoken, else the module's estimate)."""
    enc = _encoding()
    if enc is not None:
        return len(enc.encode(text, disallowed_special=()))
    return sum(1 for _ in _PIECE.finditer(text))


def truncate_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` with at most ``limit`` tokens, cut at a token boundary."""
    if limit < 0:
        raise InvalidInput(f"token limit must be >= 0, got {limit}")
    if count_tokens(text) <= limit:
        return text
    end = 0
    for offset, total in _spans(text):
        if total > limit:
            break
        end = offset
    return text[:end]


def split_tokens(text: str, window: int, overlap: int = 0) -> list[str]:
    """``text`` cut into windows of at most ``window`` tokens; consecutive windows share ``overlap`` tokens.

    Windows are slices of the original text, cut at token boundaries (preferably at a line break when one is
    in the last quarter of a window), so no character is lost.
    """
    if window < 1:
        raise InvalidInput(f"window must be >= 1 token, got {window}")
    if not 0 <= overlap < window:
        raise InvalidInput(f"overlap must be in [0, window), got {overlap} for window {window}")
    spans = _spans(text)
    if not spans or spans[-1][1] <= window:
        return [text] if text else []
    windows: list[str] = []
    start_char, start_tok, i = 0, 0, 0
    while True:
        j = i  # the last token index in this window
        while j + 1 < len(spans) and spans[j + 1][1] - start_tok <= window:
            j += 1
        if j + 1 >= len(spans):
            windows.append(text[start_char:])
            return windows
        for k in range(j, i, -1):  # prefer to end at a line break in the window's last quarter
            if spans[k][1] - start_tok < window * 3 // 4:
                break
            if "\n" in text[spans[k][0] : spans[k + 1][0]]:
                j = k
                break
        windows.append(text[start_char : spans[j][0]])
        nxt = j + 1  # the next window repeats the last `overlap` tokens of this one
        while nxt - 1 > i and spans[j][1] - spans[nxt - 2][1] <= overlap:
            nxt -= 1
        start_char, start_tok, i = spans[nxt - 1][0], spans[nxt - 1][1], nxt
