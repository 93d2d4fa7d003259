"""Sentence encoders recovered from their fp32 ONNX graphs (the Maven Central jars that
`scripts/assets` fetches) as transformers `BertModel`s, so they can be fine-tuned here without a
model hub.

The exporter kept the parameter names of every bias, LayerNorm and embedding. The weight of each
Linear became an anonymous MatMul initializer (`onnx::MatMul_1525`) holding the weight transposed;
it is named by the bias that the MatMul's output is added to (`...query.bias` → `...query.weight`).
`recover_bert` checks the rebuilt model against onnxruntime on real text before returning it.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

ROOT = Path(__file__).resolve().parents[2]
ENCODERS_DIR = ROOT / "models" / "encoders"
# The three encoders scripts/assets can fetch in fp32: every one is BERT-shaped with 384 hidden
# units and 12 heads (heads cannot be read off the weights; the parity check would catch a wrong one).
HEADS = 12


def encoder_dir(name: str) -> Path:
    d = ENCODERS_DIR / name
    if not (d / "model.onnx").exists():
        raise FileNotFoundError(f"{d}/model.onnx not found: run scripts/assets {name}")
    return d


def consumers_of(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    """Each value's name → the nodes that read it."""
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return consumers


def bert_state_dict(graph: onnx.GraphProto) -> dict[str, torch.Tensor]:
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    state = {k: torch.from_numpy(v.copy()) for k, v in inits.items() if not k.startswith("onnx::") and k != "embeddings.position_ids"}
    consumers = consumers_of(graph)
    for node in graph.node:
        if node.op_type != "MatMul":
            continue
        weight = next((n for n in node.input if n.startswith("onnx::MatMul") and n in inits), None)
        if weight is None:
            continue
        adds = [c for c in consumers.get(node.output[0], []) if c.op_type == "Add"]
        bias = next((n for c in adds for n in c.input if n.endswith(".bias") and n in inits), None)
        if bias is None:
            raise ValueError(f"MatMul {weight} has no named bias after it: cannot name its weight")
        state[bias[: -len(".bias")] + ".weight"] = torch.from_numpy(inits[weight].T.copy())
    return state


def bert_config(state: dict[str, torch.Tensor]) -> BertConfig:
    layers = 1 + max(int(m.group(1)) for k in state if (m := re.match(r"encoder\.layer\.(\d+)\.", k)))
    vocab, hidden = state["embeddings.word_embeddings.weight"].shape
    return BertConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=HEADS,
        intermediate_size=state["encoder.layer.0.intermediate.dense.weight"].shape[0],
        max_position_embeddings=state["embeddings.position_embeddings.weight"].shape[0],
        type_vocab_size=state["embeddings.token_type_embeddings.weight"].shape[0],
        hidden_act="gelu", layer_norm_eps=1e-12,
    )


def load_tokenizer(name: str) -> PreTrainedTokenizerFast:
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(encoder_dir(name) / "tokenizer.json"),
        pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
        model_max_length=512,
    )
    # The jars' tokenizer.json carry padding/truncation settings of their own; the trainer pads.
    tok.backend_tokenizer.no_padding()
    tok.backend_tokenizer.no_truncation()
    return tok


def recover_bert(name: str, check: bool = True) -> tuple[BertModel, PreTrainedTokenizerFast]:
    """The encoder `name` (a folder of models/encoders) as a BertModel, checked against onnxruntime."""
    path = encoder_dir(name) / "model.onnx"
    state = bert_state_dict(onnx.load(str(path)).graph)
    model = BertModel(bert_config(state), add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"{path}: weights not recovered {missing}, unknown {unexpected}")
    model.eval()
    tok = load_tokenizer(name)
    if check:
        max_diff = parity(model, tok, path)
        if max_diff > 1e-4:
            raise ValueError(f"{path}: the recovered model differs from onnxruntime by {max_diff:.2e}")
    return model, tok


def parity(model: BertModel, tok: PreTrainedTokenizerFast, path: Path) -> float:
    """Largest absolute difference of the last hidden states, PyTorch against onnxruntime."""
    import onnxruntime as ort

    enc = tok(["who played in the world series in 1989", "the Oakland Athletics swept the San Francisco Giants"],
              padding=True, return_tensors="np")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: enc[i.name].astype(np.int64) for i in session.get_inputs()}
    ours = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state.detach().numpy()
    theirs = session.run(None, feeds)[0]
    mask = feeds["attention_mask"][..., None].astype(bool)
    return float(np.abs(np.where(mask, ours - theirs, 0)).max())


def quantized_state_dict(graph: onnx.GraphProto) -> dict[str, torch.Tensor]:
    """The fp32 weights behind an int8 graph that onnxruntime's dynamic quantisation wrote (the
    shipped `model_quantized.onnx`): each Linear's weight is `W_quantized` (int8, [in, out]) read by
    MatMulInteger with `W_zero_point` and, through the Mul after it, `W_scale` per output column,
    named by the bias added next; each embedding table is uint8 behind a DequantizeLinear with one
    scale, named `<table>_scale`. W = (q - zero_point) * scale, exactly the values the int8 graph
    computes with."""
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output}
    consumers = consumers_of(graph)
    # The exporter keeps one copy of equal parameters (a fresh model's zero biases) and names the
    # others by an Identity of it.
    for node in graph.node:
        if node.op_type == "Identity" and node.input[0] in inits and node.output[0].endswith((".bias", ".weight")):
            inits[node.output[0]] = inits[node.input[0]]
    state = {k: torch.from_numpy(v.copy()) for k, v in inits.items() if v.dtype == np.float32 and (k.endswith(".bias") or "LayerNorm" in k)}

    def weight_scale(mul_input: str) -> np.ndarray:
        # The scale the MatMulInteger output is multiplied by: (activation scale) × (weight scale).
        scales = producers[mul_input]
        return next(inits[n] for n in scales.input if n in inits)

    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        q_name, zp_name = node.input[1], node.input[3]
        cast = consumers[node.output[0]][0]
        mul = consumers[cast.output[0]][0]
        scale = weight_scale(next(n for n in mul.input if n != cast.output[0]))
        add = consumers[mul.output[0]][0]
        bias = next(n for n in add.input if n.endswith(".bias") and n in inits)
        w = (inits[q_name].astype(np.float32) - inits[zp_name].astype(np.float32)) * scale
        state[bias[: -len(".bias")] + ".weight"] = torch.from_numpy(np.ascontiguousarray(w.T))
    for node in graph.node:
        if node.op_type != "DequantizeLinear":
            continue
        # The table's scale is named for it (`<table>_scale`); what reaches the DequantizeLinear is
        # its Gather's rows, or (MPNet's relative position bias) those rows transposed.
        name = node.input[1][: -len("_scale")]
        table = f"{name}_quantized"
        if not node.input[1].endswith("_scale") or table not in inits:
            raise ValueError(f"DequantizeLinear {node.name}: no quantised table for scale {node.input[1]}")
        w = (inits[table].astype(np.float32) - inits[node.input[2]].astype(np.float32)) * inits[node.input[1]]
        state[name] = torch.from_numpy(np.ascontiguousarray(w))
    return state
