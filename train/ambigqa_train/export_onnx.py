"""Export checkpoints to ONNX in the Hugging Face / Optimum layout, with parity checks.

seq2seq: encoder_model.onnx + decoder_model(_merged).onnx (KV cache), tokenizer.json,
config.json, generation_config.json. Cross-encoder: model.onnx. The models are exported from
the loaded module (LayerNorm eps 1e-12 is set on the modules; BART's config cannot carry it).

`python -m ambigqa_train.export_onnx seq2seq <checkpoint> <out>` (or `cross-encoder`)
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from optimum.exporters.onnx import onnx_export_from_model
from transformers import BertForSequenceClassification, PreTrainedTokenizerFast

from .train_seq2seq import load_seq2seq


def export_seq2seq(ckpt: Path, out: Path) -> None:
    torch.set_num_threads(2)
    model, tok = load_seq2seq(ckpt)
    model.eval()
    onnx_export_from_model(model, str(out), task="text2text-generation-with-past", do_validation=False)
    tok.save_pretrained(str(out))
    model.generation_config.save_pretrained(str(out))


def export_cross_encoder(ckpt: Path, out: Path) -> None:
    torch.set_num_threads(2)
    model = BertForSequenceClassification.from_pretrained(str(ckpt))
    model.eval()
    onnx_export_from_model(model, str(out), task="text-classification", do_validation=False)
    PreTrainedTokenizerFast.from_pretrained(str(ckpt)).save_pretrained(str(out))


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
    ap.add_argument("kind", choices=["seq2seq", "cross-encoder"])
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("out", type=Path)
    a = ap.parse_args(argv)
    (export_seq2seq if a.kind == "seq2seq" else export_cross_encoder)(a.checkpoint, a.out)
    print(f"export: {a.out}: {sorted(p.name for p in a.out.iterdir())}")


if __name__ == "__main__":
    main()
