"""Train the BART seq2seq (SpanSeqGen, QD) from a config file and a seed; checkpoints and resumes.

`python -m ambigqa_train.train_seq2seq --config train/configs/spanseqgen1-tiny.json --seed 0`
Config keys: out, train_file, limit, max_source_len, max_target_len, warm, decoder_layers,
batch_size, lr, warmup, steps, log_every, save_every, init, tie_embeddings (default true: the
output projection is the embedding matrix), freeze_encoder (default false: the encoder runs
without gradients), encoder_lr (default lr: the encoder's own learning rate), pointer_weight
(default 0: the copy pointer loss on cross-attention, see copy_guide.py), readout_init (default
false: on a fresh warm start, initialise the last decoder layer to read tokens out of encoder
states), pointer (default "answers": copy answer spans from the passages; "edit": copy the
prompt question and insert from the rest of the input, for question disambiguation), device
(cpu, cuda or auto, default cpu; --device overrides it: on CUDA fp32 with TF32 matmuls).
`init` (optional): a checkpoint folder (model + tokenizer, e.g. stage 1's
`checkpoints/spanseqgen1/seed-0/checkpoint`) to start from instead of the MiniLM warm start
(`warm`, `decoder_layers` then do not apply); optimizer and step start fresh. A run that has
its own checkpoint resumes from that and ignores `init`.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from transformers import BartForConditionalGeneration, PreTrainedTokenizerFast

from .common import add_device_argument, device_of, load_config, model_device, read_jsonl, run_steps, setup, to_device
from .copy_guide import copy_pointers, edit_pointers, pointer_loss, readout_init, use_eager_attention
from .warm_start import ANSWER_SEP, build_bart, load_tokenizer, set_layer_norm_eps


def load_seq2seq(path: Path) -> tuple[BartForConditionalGeneration, PreTrainedTokenizerFast]:
    model = BartForConditionalGeneration.from_pretrained(str(path))
    set_layer_norm_eps(model)
    return model, load_tokenizer(path)


def encode(tok: PreTrainedTokenizerFast, batch: list[dict[str, Any]], cfg: dict[str, Any]) -> dict[str, torch.Tensor]:
    enc = tok([r["input"] for r in batch], max_length=cfg["max_source_len"], truncation=True, padding=True, return_tensors="pt")
    # Targets: answer tokens then [SEP] (eos); no [CLS] (the decoder start is added by shifting).
    tgt = tok([r["target"] for r in batch], max_length=cfg["max_target_len"], truncation=True, padding=True,
              add_special_tokens=False, return_tensors="pt")
    eos = torch.full((len(batch), 1), tok.pad_token_id)
    labels = torch.cat([tgt.input_ids, eos], dim=1)
    lengths = tgt.attention_mask.sum(1)
    labels[torch.arange(len(batch)), lengths] = tok.eos_token_id
    labels[labels == tok.pad_token_id] = -100
    return {"input_ids": enc.input_ids, "attention_mask": enc.attention_mask, "labels": labels}


def train(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    device = device_of(cfg)
    setup(seed)
    out = Path(cfg["out"]) / f"seed-{seed}"
    ckpt = out / "checkpoint"
    rows = read_jsonl(Path(cfg["train_file"]), cfg.get("limit"))
    if (ckpt / "state.pt").exists():
        model, tok = load_seq2seq(ckpt)
        state = torch.load(ckpt / "state.pt", weights_only=False, map_location="cpu")
        print(f"train: resuming {ckpt} at step {state['step']}")
    elif cfg.get("init"):
        init = Path(cfg["init"])
        if not (init / "config.json").exists():
            raise FileNotFoundError(f"init checkpoint {init} missing: train the model it names first")
        model, tok = load_seq2seq(init)
        state = {"step": 0}
        print(f"train: starting from {init}")
    else:
        model, tok = build_bart(cfg.get("decoder_layers", 2), seed=seed, warm=cfg.get("warm", True), tie=cfg.get("tie_embeddings", True))
        state = {"step": 0}
        if cfg.get("readout_init"):
            acc = readout_init(model, [encode(tok, rows[i : i + 50], cfg) for i in range(0, min(len(rows), 400), 50)])
            print(f"train: readout initialised (top-1 token from encoder state {acc:.3f})")
    if cfg.get("pointer_weight"):
        use_eager_attention(model)
    # Before the optimizer's state is loaded: load_state_dict puts that state on the parameters' device.
    model.to(device)
    encoder = [p for n, p in model.named_parameters() if n.startswith("model.encoder.")]
    rest = [p for n, p in model.named_parameters() if not n.startswith("model.encoder.")]
    opt = torch.optim.AdamW([{"params": rest, "base_lr": cfg["lr"]},
                             {"params": encoder, "base_lr": cfg.get("encoder_lr", cfg["lr"])}], lr=cfg["lr"], weight_decay=0.01)
    if "optimizer" in state:
        opt.load_state_dict(state["optimizer"])
    model.train()
    return run_steps(model, tok, opt, rows, cfg, seed, int(state["step"]), ckpt, loss_fn(model, tok, cfg), "examples_per_s")


def loss_fn(model: BartForConditionalGeneration, tok: PreTrainedTokenizerFast, cfg: dict[str, Any]) -> Any:
    """Cross-entropy, plus `pointer_weight` times the copy pointer loss. With `freeze_encoder` the
    encoder runs without gradients (about 3x cheaper steps on two cores)."""
    weight = float(cfg.get("pointer_weight", 0.0))
    answer_sep = tok.convert_tokens_to_ids(ANSWER_SEP)
    device = model_device(model)

    def loss(batch: list[dict[str, Any]]) -> torch.Tensor:
        on_cpu = encode(tok, batch, cfg)
        inputs = to_device(on_cpu, device)
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        if cfg.get("freeze_encoder"):
            with torch.no_grad():
                encoded = model.model.encoder(input_ids=ids, attention_mask=mask)
            out = model(encoder_outputs=encoded, attention_mask=mask, labels=inputs["labels"], output_attentions=weight > 0)
        else:
            out = model(**inputs, output_attentions=weight > 0)
        if weight == 0:
            return out.loss
        # The pointers are found by Python loops over token lists: from the CPU copies, then moved.
        if cfg.get("pointer") == "edit":
            ptr = edit_pointers(on_cpu["input_ids"], on_cpu["labels"], tok.sep_token_id)
        else:
            ptr = copy_pointers(on_cpu["input_ids"], on_cpu["labels"], tok.sep_token_id, answer_sep)
        return out.loss + weight * pointer_loss(out.cross_attentions[-1], ptr.to(device))

    return loss


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.train_seq2seq")
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    add_device_argument(ap)
    a = ap.parse_args(argv)
    cfg = load_config(a.config, a.device)
    print(json.dumps(train(cfg, a.seed)))


if __name__ == "__main__":
    main()
