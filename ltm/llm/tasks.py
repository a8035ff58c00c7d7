"""The LLM tasks of BrainMemory: summarize (windowed map-reduce), title, relatedness, rewrite.

Each task works with any :class:`~ltm.llm.base.LLM` (prompted) or with an offline
:class:`~ltm.llm.base.Summarizer` such as :class:`~ltm.llm.extractive.ExtractiveLLM` (called directly, no
prompt parsing).

Summaries are budgeted in tokens (:mod:`ltm.llm.tokens`). A text longer than one window is cut into
windows of ``window_tokens`` (20 tokens of overlap), each window is summarized, the partial summaries are
joined and the result summarized again until one call covers it. The number of LLM calls is bounded by
``max_calls``: if the first level alone would need more than half of it, the text is first shortened
extractively (offline, no call) to fit; each partial summary is clipped to its token share so every level
shrinks by at least the window/share ratio. A run that would still exceed ``max_calls`` raises ``LLMError``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ltm.errors import InvalidInput, LLMError
from ltm.llm.base import LLM, Summarizer, parse_yes_no
from ltm.llm.extractive import ExtractiveLLM
from ltm.llm.tokens import count_tokens, split_tokens, truncate_tokens

__all__ = ["SummaryRun", "ask_related", "ask_rewrite", "ask_title", "summarize_text"]

OVERLAP_TOKENS = 20
TOKENS_PER_WORD = 2  # generous upper bound used to clip a partial summary of N words to tokens


def summary_system(max_words: int, keep_language: bool) -> str:
    lines = [
        "You are a tool for summarizing and abstracting text.",
        f"Return the summarized text in less than {max_words} words.",
    ]
    if keep_language:
        lines.append("The summary must be in the same language as the original text.")
    return "\n".join(lines)


@dataclass
class SummaryRun:
    """What one summarization did: the summary, LLM calls made, and whether it is extractive."""

    summary: str
    calls: int = 0
    extractive: bool = False
    levels: list[int] = field(default_factory=list)  # windows summarized at each map level


async def summarize_text(
    text: str,
    llm: LLM,
    *,
    max_words: int = 200,
    keep_language: bool = False,
    window_tokens: int = 4096,
    max_calls: int = 32,
) -> SummaryRun:
    """Summarize ``text`` in at most ``max_words`` words with at most ``max_calls`` LLM calls."""
    if max_words < 1 or window_tokens < 256 or max_calls < 2:
        raise InvalidInput("need max_words >= 1, window_tokens >= 256 and max_calls >= 2")
    if isinstance(llm, Summarizer):  # offline: a real summary even of a short chat, never the chat joined up
        return SummaryRun(llm.summarize(text, max_words), extractive=True)
    if len(text.split()) <= max_words:  # nothing to shorten: no LLM call (MetaGPT's _get_summary does the same)
        return SummaryRun(text.strip())
    run = SummaryRun("")
    step = window_tokens - OVERLAP_TOKENS
    first_level_cap = max(1, max_calls // 2)
    if math.ceil(count_tokens(text) / step) > first_level_cap:
        # too long for the call budget: keep the most central sentences, offline, so the map level fits
        target_tokens = first_level_cap * step
        text = ExtractiveLLM().summarize(text, max(1, target_tokens // TOKENS_PER_WORD))
        text = truncate_tokens(text, target_tokens)
    while True:
        windows = split_tokens(text, window_tokens, OVERLAP_TOKENS)
        if len(windows) <= 1:
            run.summary = await _call(run, llm, text, summary_system(max_words, keep_language), max_calls)
            return run
        share = min(max_words // len(windows) + 1, 100)
        partials = []
        for window in windows:
            if len(window.split()) <= share:
                partials.append(window.strip())
                continue
            answer = await _call(run, llm, window, summary_system(share, keep_language), max_calls)
            partials.append(truncate_tokens(answer, share * TOKENS_PER_WORD))
        run.levels.append(len(windows))
        text = "\n".join(p for p in partials if p)


async def _call(run: SummaryRun, llm: LLM, prompt: str, system: str, max_calls: int) -> str:
    if run.calls >= max_calls:
        raise LLMError(f"summarizing needed more than {max_calls} LLM calls; raise max_llm_calls or window_tokens")
    run.calls += 1
    return _nonempty(await llm.aask(prompt, system=system), "summary")


async def ask_title(text: str, llm: LLM, max_words: int = 5) -> str:
    """A title of less than ``max_words`` words for ``text``."""
    if isinstance(llm, Summarizer):
        return str(llm.title(text, max_words))
    system = (
        f"You are a tool for writing titles. Return a title of less than {max_words} words for the text, "
        "in the text's language. Return only the title."
    )
    answer: str = await llm.aask(text, system=system)
    return _nonempty(answer.strip().strip('"'), "title")


async def ask_related(text1: str, text2: str, llm: LLM) -> bool:
    """Whether ``text1`` is semantically related to ``text2`` (a strict yes/no from the LLM)."""
    if isinstance(llm, Summarizer):
        return llm.is_related(text1, text2)
    prompt = f"## Paragraph 1\n{text2}\n---\n## Paragraph 2\n{text1}\n"
    system = (
        "You are a tool that decides whether two paragraphs are semantically related. "
        'Answer with exactly one word: "YES" if "Paragraph 1" is semantically related to "Paragraph 2", '
        'otherwise "NO".'
    )
    return parse_yes_no(await llm.aask(prompt, system=system))


async def ask_rewrite(sentence: str, context: str, llm: LLM) -> str:
    """``sentence`` augmented with information from ``context`` (nothing invented)."""
    if isinstance(llm, Summarizer):
        return str(llm.rewrite(sentence, context))
    prompt = f"## Context\n{context}\n---\n## Sentence\n{sentence}\n"
    system = (
        'You are a tool augmenting the "Sentence" with information from the "Context". '
        "Do not add information that is not present in the context, especially about the subject and object. "
        "Return the augmented sentence."
    )
    return _nonempty(await llm.aask(prompt, system=system), "rewrite")


def _nonempty(answer: str, what: str) -> str:
    """``answer`` stripped; an empty one raises ``LLMError`` rather than becoming an empty summary/title."""
    if not answer.strip():
        raise LLMError(f"the LLM returned an empty {what}; check the model")
    return answer.strip()
