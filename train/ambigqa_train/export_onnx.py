"""Export checkpoints to ONNX in the Hugging Face / Optimum layout, with parity checks.

seq2seq: encoder_model.onnx + decoder_model(_merged).onnx (KV cache), tokenizer.json,
config.json, generation_config.json. Cross-encoder: model.onnx. The models are exported from
the loaded module (LayerNorm eps 1e-12 is set on the modules; BART's config cannot carry it).

Int8 (on by default, `--no-int8` skips it; seconds per file): onnxruntime's dynamic quantisation
(QInt8 weights per output channel, symmetric; activations quantised to uint8 at run time by
DynamicQuantizeLinear) of every MatMul with a constant weight, and of the embedding Gathers
(uint8 tables). `quantize_dynamic` does not descend into the If subgraphs of
decoder_model_merged.onnx (it would silently stay fp32), so the two split decoders are quantised
and then merged with optimum's `merge_decoders` (strict=False, as the exporter merges the fp32
ones): *_quantized.onnx next to the fp32 files, model_quantized.onnx for the cross-encoder.

Extractive reader: model.onnx with start_logits, end_logits and relevance_logits.

`python -m ambigqa_train.export_onnx seq2seq <checkpoint> <out> [--no-int8]` (or `cross-encoder`,
`extractive`)
"""
from __future__ import annotations

import argparse
import json
import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import torch
from optimum.exporters.onnx import onnx_export_from_model
from transformers import BartForConditionalGeneration, BertForSequenceClassification, PreTrainedTokenizerFast

from .extractive import load_checkpoint, reader_inputs
from .train_seq2seq import load_seq2seq

SEQ2SEQ_SPLIT = ("encoder_model", "decoder_model", "decoder_with_past_model")
MERGED = "decoder_model_merged"
QUANTIZED = "_quantized"


def export_seq2seq(ckpt: Path, out: Path, int8: bool = True) -> None:
    torch.set_num_threads(2)
    model, tok = load_seq2seq(ckpt)
    model.eval()
    export_seq2seq_model(model, tok, out, int8=int8)


def export_seq2seq_model(model: BartForConditionalGeneration, tok: PreTrainedTokenizerFast, out: Path,
                         int8: bool = True, generation_config: dict[str, Any] | None = None) -> None:
    """Export a loaded seq2seq model; `generation_config` (a plain dict) is written as
    generation_config.json verbatim instead of the model's (whose save drops default values)."""
    onnx_export_from_model(model, str(out), task="text2text-generation-with-past", do_validation=False)
    _save_tokenizer(tok, out)
    if generation_config is None:
        model.generation_config.save_pretrained(str(out))
    else:
        (out / "generation_config.json").write_text(json.dumps(generation_config, indent=2) + "\n")
    if int8:
        quantize_seq2seq(out)


def _save_tokenizer(tok: PreTrainedTokenizerFast, out: Path) -> None:
    """tokenizer.json without the truncation/padding state the last training call left in the
    backend (a checkpoint's file said max_length 32, the target length); transformers resets it on
    every call anyway, but a reader of the raw file (tokenizers, JS) must not inherit it."""
    tok.backend_tokenizer.no_truncation()
    tok.backend_tokenizer.no_padding()
    tok.save_pretrained(str(out))


def export_cross_encoder(ckpt: Path, out: Path, int8: bool = True) -> None:
    torch.set_num_threads(2)
    model = BertForSequenceClassification.from_pretrained(str(ckpt))
    model.eval()
    onnx_export_from_model(model, str(out), task="text-classification", do_validation=False)
    _save_tokenizer(PreTrainedTokenizerFast.from_pretrained(str(ckpt)), out)
    if int8:
        quantize_file(out / "model.onnx", out / f"model{QUANTIZED}.onnx")


EXTRACTIVE_OUTPUTS = ("start_logits", "end_logits", "relevance_logits")


def export_extractive(ckpt: Path, out: Path, int8: bool = True) -> None:
    """model.onnx (+ model_quantized.onnx): the id tensors the encoder reads in (BERT's three,
    MPNet's two: no token types), span and selection logits out."""
    torch.set_num_threads(2)
    model, tok = load_checkpoint(ckpt)
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    inputs = reader_inputs(model.config)
    enc = tok(["who wrote it"], ["Title: some passage text"], return_tensors="pt")
    axes = {0: "batch", 1: "tokens"}
    torch.onnx.export(
        model, tuple(enc[k] for k in inputs), str(out / "model.onnx"), dynamo=False,
        input_names=list(inputs), output_names=list(EXTRACTIVE_OUTPUTS), opset_version=17,
        dynamic_axes={**{k: axes for k in inputs}, "start_logits": axes, "end_logits": axes, "relevance_logits": {0: "batch"}},
    )
    if int8:
        quantize_file(out / "model.onnx", out / f"model{QUANTIZED}.onnx")
    _save_tokenizer(tok, out)
    # config.json last: a folder that has it holds a whole model, even if an export was killed.
    config = model.config.to_dict()
    config["architectures"] = [type(model).__name__]
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")


def extractive_parity(ckpt: Path, out: Path, pairs: list[tuple[str, str]], name: str = "model.onnx") -> float:
    """Max abs difference of the three outputs, PyTorch against onnxruntime (padding excluded)."""
    model, tok = load_checkpoint(ckpt)
    model.eval()
    inputs = reader_inputs(model.config)
    enc = tok([p[0] for p in pairs], [p[1] for p in pairs], padding=True, return_tensors="pt")
    with torch.no_grad():
        want = [t.numpy() for t in model(**{k: enc[k] for k in inputs})]
    got = session(out / name).run(None, {k: enc[k].numpy() for k in inputs})
    mask = enc["attention_mask"].numpy().astype(bool)
    return max(float(np.abs(want[0] - got[0])[mask].max()), float(np.abs(want[1] - got[1])[mask].max()), float(np.abs(want[2] - got[2]).max()))


def quantize_file(src: Path, dst: Path) -> None:
    """Dynamic int8: QInt8 weights (per channel, symmetric), uint8 activations at run time.
    Per channel: on a spanseqgen1 checkpoint, next-token KL to fp32 0.0006 vs 0.0014 per tensor
    (argmax equal on both; files 0.5% larger). reduce_range (7-bit) was no better."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # "consider pre-processing" and per-node chatter
    try:
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True, reduce_range=False)
    finally:
        root.setLevel(level)


def quantize_seq2seq(out: Path) -> None:
    """encoder/decoder/decoder_with_past → *_quantized.onnx, then the merged int8 decoder."""
    from optimum.onnx import merge_decoders

    for name in SEQ2SEQ_SPLIT:
        quantize_file(out / f"{name}.onnx", out / f"{name}{QUANTIZED}.onnx")
    # strict=False as in optimum's exporter: decoder_with_past has no cross-attention outputs.
    merge_decoders(out / f"decoder_model{QUANTIZED}.onnx", out / f"decoder_with_past_model{QUANTIZED}.onnx",
                   save_path=out / f"{MERGED}{QUANTIZED}.onnx", strict=False)


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _graphs(g)


def weight_report(path: Path) -> dict[str, Any]:
    """Initializer counts and bytes by dtype in the main graph and, separately, in subgraphs (the
    If branches of a merged decoder), and the int8 ops that run (MatMulInteger etc.)."""
    model = onnx.load(str(path))
    graphs = list(_graphs(model.graph))
    res: dict[str, Any] = {"file_bytes": path.stat().st_size, "n_subgraphs": len(graphs) - 1}
    ops: Counter[str] = Counter()
    for key, part in (("main", graphs[:1]), ("subgraphs", graphs[1:])):
        count: Counter[str] = Counter()
        nbytes: Counter[str] = Counter()
        for g in part:
            for init in g.initializer:
                dtype = onnx.TensorProto.DataType.Name(init.data_type).lower()
                count[dtype] += 1
                nbytes[dtype] += int(np.prod(init.dims, dtype=np.int64)) * onnx.helper.tensor_dtype_to_np_dtype(init.data_type).itemsize
            ops.update(n.op_type for n in g.node)
        res[key] = {"initializers": dict(count), "bytes": dict(nbytes)}
    res["ops"] = {k: ops[k] for k in ("MatMulInteger", "DynamicQuantizeLinear", "DequantizeLinear", "MatMul") if k in ops}
    return res


def sizes(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(out.glob("*.onnx"))}


def session(path: Path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def encoder_parity(ckpt: Path, out: Path, texts: list[str]) -> float:
    """Max abs difference between torch's and onnxruntime's encoder outputs."""
    model, tok = load_seq2seq(ckpt)
    model.eval()
    enc = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        want = model.model.encoder(input_ids=enc.input_ids, attention_mask=enc.attention_mask).last_hidden_state.numpy()
    got = session(out / "encoder_model.onnx").run(None, {"input_ids": enc.input_ids.numpy(), "attention_mask": enc.attention_mask.numpy()})[0]
    mask = enc.attention_mask.numpy().astype(bool)
    return float(np.abs(want[mask] - got[mask]).max())


def generation_parity(ckpt: Path, out: Path, texts: list[str], max_new_tokens: int = 16) -> tuple[list[list[int]], list[list[int]]]:
    """Greedy generations from transformers and from the ONNX files (optimum's ORT model)."""
    from optimum.onnxruntime import ORTModelForSeq2SeqLM

    model, tok = load_seq2seq(ckpt)
    model.eval()
    ort_model = ORTModelForSeq2SeqLM.from_pretrained(str(out))
    want, got = [], []
    for t in texts:
        enc = tok([t], return_tensors="pt")
        kw = {"max_new_tokens": max_new_tokens, "num_beams": 1, "do_sample": False}
        with torch.no_grad():
            want.append(model.generate(**enc, **kw)[0].tolist())
            got.append(ort_model.generate(**enc, **kw)[0].tolist())
    return want, got


def cross_encoder_parity(ckpt: Path, out: Path, pairs: list[tuple[str, str]]) -> float:
    model = BertForSequenceClassification.from_pretrained(str(ckpt))
    model.eval()
    tok = PreTrainedTokenizerFast.from_pretrained(str(ckpt))
    enc = tok([p[0] for p in pairs], [p[1] for p in pairs], padding=True, return_tensors="pt")
    with torch.no_grad():
        want = model(**enc).logits.numpy()
    sess = session(out / "model.onnx")
    feeds = {i.name: enc[i.name].numpy() for i in sess.get_inputs()}
    got = sess.run(None, feeds)[0]
    return float(np.abs(want - got).max())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.export_onnx")
    ap.add_argument("kind", choices=["seq2seq", "cross-encoder", "extractive"])
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--int8", action=argparse.BooleanOptionalAction, default=True,
                    help="also write *_quantized.onnx (dynamic int8; default on)")
    a = ap.parse_args(argv)
    exporters = {"seq2seq": export_seq2seq, "cross-encoder": export_cross_encoder, "extractive": export_extractive}
    exporters[a.kind](a.checkpoint, a.out, int8=a.int8)
    print(f"export: {a.out}: {sorted(p.name for p in a.out.iterdir())}")
    print(json.dumps({"onnx_bytes": sizes(a.out)}))


if __name__ == "__main__":
    main()
