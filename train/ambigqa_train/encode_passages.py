"""Encode a store's passages with a sentence encoder in PyTorch, on a GPU when there is one: the
path `ambigqa index encode --device cuda` runs (issue 26). The ONNX path (retriever/dense-vectors.ts
with onnxruntime-node) stays the default on the CPU; this one writes the same vectors, in the same
table, in the same layout:

- the encoder is rebuilt from the folder `scripts/assets` made (models/encoders/<name>/model.onnx,
  every weight inside): fp32 graphs through `onnx_weights.bert_state_dict`, int8 ones (`-int8`)
  dequantised (`quantized_state_dict`: W = (q - zero point) x scale, the values the int8 graph
  multiplies by; its activations are not quantised here, so int8 vectors agree less closely than
  fp32 ones: cosine 0.9961 at worst on 1,000 demo passages, against 0.9999999);
- tokenised as retriever/dense-encoder.ts does: tokenizer.json as is (no truncation of its own),
  the model's passage prefix ("passage: " for e5), cut at 256 tokens with [SEP] kept last; a
  passage reads `title. text` (`passageText`);
- pooled as that model is (mean over the real tokens, or [CLS] for bge), L2-normalised;
- written to `dense_vectors` (model, first_rowid, last_rowid, dim, data = float32 little-endian,
  row by row) in chunks of consecutive rowids, each chunk one transaction, so a killed run resumes
  at the first chunk not written, as the TypeScript encoder does (and either resumes the other's).

`python -m ambigqa_train.encode_passages --store data/store --model e5-small-v2 --device cuda`
The CLI holds the store's build lock while this runs; run by hand, nothing else may write the store.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from tokenizers import Tokenizer
from transformers import BertModel

from .common import DEVICES, pick_device
from .onnx_weights import ENCODERS_DIR, bert_config, bert_state_dict, quantized_state_dict

# retriever/dense-encoder.ts: the JS tokenizer ignores tokenizer.json's truncation, so it cuts here.
MAX_TOKENS = 256
CHUNK_SIZE = 1024


@dataclass(frozen=True)
class Conventions:
    pooling: str  # "mean" or "cls"
    query_prefix: str
    passage_prefix: str


# The same table as CONVENTIONS in retriever/dense-encoder.ts.
CONVENTIONS: dict[str, Conventions] = {
    "e5-small-v2": Conventions("mean", "query: ", "passage: "),
    "bge-small-en-v1.5": Conventions("cls", "Represent this sentence for searching relevant passages: ", ""),
    "all-minilm-l6-v2": Conventions("mean", "", ""),
}


def conventions_of(name: str) -> Conventions:
    base = name.removesuffix("-int8")
    if base not in CONVENTIONS:
        raise SystemExit(f"unknown encoder {name!r}: use one of {', '.join(n + s for n in CONVENTIONS for s in ('', '-int8'))}")
    return CONVENTIONS[base]


def recover_encoder(folder: Path) -> BertModel:
    """The encoder of `folder`/model.onnx as a BertModel in eval mode, fp32 or int8 graph alike.

    An int8 graph's weights are dequantised exactly, but its activations are not quantised here:
    the vectors agree with the int8 graph's to cosine 0.9961 at worst (BENCHMARKS.md). Emulating
    onnxruntime's uint8 activations as well (DynamicQuantizeLinear, then an integer matmul) was
    tried and agreed less (0.9955 at worst on 200 passages); why was not found. For the issue's
    0.999, encode with the fp32 encoder (and serve queries with it)."""
    path = folder / "model.onnx"
    if not path.exists():
        raise SystemExit(f"{path} not found: run scripts/assets {folder.name}")
    graph = onnx.load(str(path)).graph
    if any(node.op_type == "MatMulInteger" for node in graph.node):
        state = quantized_state_dict(graph)
        # quantize_dynamic left the embedding tables in fp32 here (no DequantizeLinear): take them as they are.
        for init in graph.initializer:
            if init.name.startswith("embeddings.") and init.name.endswith(".weight") and init.name not in state and init.data_type == onnx.TensorProto.FLOAT:
                state[init.name] = torch.from_numpy(onnx.numpy_helper.to_array(init).copy())
    else:
        state = bert_state_dict(graph)
    model = BertModel(bert_config(state), add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise SystemExit(f"{path}: weights not recovered {missing}, unknown {unexpected}")
    return model.eval()


def passage_text(title: str, text: str) -> str:
    """What an encoder reads of a passage (dense-encoder.ts `passageText`)."""
    return f"{title}. {text}" if title else text


class PassageEncoder:
    """One encoder on one device: texts in, unit vectors (float32) out."""

    def __init__(self, name: str, models_dir: Path, device: torch.device) -> None:
        folder = models_dir / name
        if not (folder / "tokenizer.json").exists():
            raise SystemExit(f"{folder / 'tokenizer.json'} not found: run scripts/assets {name}")
        self.name, self.device, self.conventions = name, device, conventions_of(name)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        sep = self.tokenizer.token_to_id("[SEP]")
        self.sep_id = 102 if sep is None else sep
        self.model = recover_encoder(folder).to(device)

    def token_ids(self, texts: list[str], kind: str = "passage") -> list[list[int]]:
        prefix = self.conventions.passage_prefix if kind == "passage" else self.conventions.query_prefix
        out = []
        for enc in self.tokenizer.encode_batch([prefix + t for t in texts]):
            ids = list(enc.ids)
            out.append(ids if len(ids) <= MAX_TOKENS else ids[: MAX_TOKENS - 1] + [self.sep_id])
        return out

    @torch.no_grad()
    def encode(self, texts: list[str], kind: str = "passage") -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.config.hidden_size), dtype=np.float32)
        encoded = self.token_ids(texts, kind)
        length = max(len(ids) for ids in encoded)
        input_ids = torch.zeros((len(encoded), length), dtype=torch.long)
        mask = torch.zeros((len(encoded), length), dtype=torch.long)
        for i, ids in enumerate(encoded):
            input_ids[i, : len(ids)] = torch.tensor(ids)
            mask[i, : len(ids)] = 1
        input_ids, mask = input_ids.to(self.device), mask.to(self.device)
        hidden = self.model(input_ids=input_ids, attention_mask=mask, token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
        if self.conventions.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            m = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1)
        pooled = pooled / pooled.norm(dim=1, keepdim=True).clamp_min(1e-12)
        return pooled.float().cpu().numpy()


def encode_store(store: Path, name: str, models_dir: Path, device: torch.device, batch_size: int = 32, chunk_size: int = CHUNK_SIZE,
                 stop_after_chunks: int | None = None) -> dict[str, Any]:
    """Every passage of the store not yet encoded with `name`, chunk by chunk (see the module's
    docstring); `stop_after_chunks` ends early, as a kill after that commit would (tests)."""
    db_path = store / "passages.sqlite"
    if not db_path.exists():
        raise SystemExit(f"no store at {store} (passages.sqlite missing): build it with `ambigqa index build`")
    t0 = time.time()
    encoder = PassageEncoder(name, models_dir, device)
    db = sqlite3.connect(str(db_path), isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout = 10000")
        state = db.execute("SELECT value FROM meta WHERE key = 'state'").fetchone()
        if state is None or state[0] != "ready":
            raise SystemExit(f"the store at {store} is not ready (state {state[0] if state else 'unknown'}): finish `ambigqa index build` first")
        db.execute("CREATE TABLE IF NOT EXISTS dense_vectors (model TEXT NOT NULL, first_rowid INTEGER NOT NULL, last_rowid INTEGER NOT NULL, "
                   "dim INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (model, first_rowid))")
        done = db.execute("SELECT max(last_rowid) FROM dense_vectors WHERE model = ?", (name,)).fetchone()[0] or 0
        max_rowid = db.execute("SELECT max(rowid) FROM passages").fetchone()[0] or 0
        total = max_rowid - done
        if done > 0 and total > 0:
            print(json.dumps({"resuming_after_rowid": done, "model": name}), flush=True)
        print(f"encode: {name} on {device.type}", flush=True)
        encoded, chunks, t_enc = 0, 0, time.time()
        for first in range(done + 1, max_rowid + 1, chunk_size):
            last = min(first + chunk_size - 1, max_rowid)
            rows = db.execute("SELECT title, text FROM passages WHERE rowid BETWEEN ? AND ? ORDER BY rowid", (first, last)).fetchall()
            texts = [passage_text(t, x) for t, x in rows]
            # Batches of similar length pad less (as the TypeScript encoder sorts them).
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            vectors = np.zeros((len(texts), encoder.model.config.hidden_size), dtype=np.float32)
            for i in range(0, len(order), batch_size):
                batch = order[i : i + batch_size]
                vectors[batch] = encoder.encode([texts[j] for j in batch])
            db.execute("BEGIN")
            db.execute("INSERT INTO dense_vectors (model, first_rowid, last_rowid, dim, data) VALUES (?, ?, ?, ?, ?)",
                       (name, first, last, vectors.shape[1], vectors.astype("<f4").tobytes()))
            db.execute("COMMIT")
            encoded += len(rows)
            chunks += 1
            rate = encoded / max(1e-9, time.time() - t_enc)
            print(json.dumps({"encoded": done + encoded, "of": max_rowid, "passages_per_s": round(rate, 1), "eta_s": round((total - encoded) / max(1e-9, rate))}), flush=True)
            if stop_after_chunks is not None and chunks >= stop_after_chunks:
                break
    finally:
        db.close()
    return {"encoded": encoded, "seconds": round(time.time() - t0, 3), "device": device.type, "model": name}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.encode_passages")
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--model", default="e5-small-v2-int8")
    ap.add_argument("--models-dir", type=Path, default=ENCODERS_DIR)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--chunk-size", type=int, default=CHUNK_SIZE)
    ap.add_argument("--device", choices=DEVICES, default="cuda")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads (on a GPU, for the host side)")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    device = pick_device(a.device)
    print(json.dumps({"done": encode_store(a.store, a.model, a.models_dir, device, a.batch_size, a.chunk_size)}), flush=True)


if __name__ == "__main__":
    main()
