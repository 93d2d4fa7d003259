"""LoRA adapters on the pretrained decoder (lm_base.py) for question disambiguation and SpanSeqGen.

Two steps, so that the machine that trains needs no tokenizer and no network:
  prepare (here, CPU): examples.jsonl from `lm-pack` (token ids from llama.cpp's tokenizer) → the kept
    vocabulary, the examples with ids renumbered into it (tokens.npz), the base model's raw tensors in
    parts (lm_base.pack), and the ids whose piece holds a newline (a generated line stops there).
  train (CPU or GPU): per run in the config, a LoRA adapter trained on the task's `train` examples
    (loss on the target tokens only), saved as adapter-<run>.safetensors (A and B per projection,
    float16, in transformers' names), then the held-out examples generated greedily the way serving
    does (forced segments fed, each line generated until a newline) into generated-<run>.jsonl with
    ids in the base model's own vocabulary.

  python -m ambigqa_train.train_lm_adapter prepare --examples E.jsonl --gguf BASE.gguf --out PACK --parts 2
  python -m ambigqa_train.train_lm_adapter train --pack PACK --config configs/lm-adapters.json --out OUT --device cuda
"""
from __future__ import annotations

import argparse
import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import lm_base
from .common import pick_device, read_jsonl, write_atomic

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
REFERENCE_IDS = [2, 3026, 1602, 3602, 212360, 236789, 236751, 5410, 2229, 855, 236881, 107]


# --- prepare -----------------------------------------------------------------------------------

def prepare(examples: Path, gguf: Path, out: Path, parts: int) -> dict[str, Any]:
    from gguf import GGUFReader
    rows = read_jsonl(examples)
    used: set[int] = {0, 1, 2, 3, *REFERENCE_IDS}
    for r in rows:
        used.update(r["prefix"])
        for s in r["steps"]:
            used.update(s["forced"])
            used.update(s["target"])
    reader = GGUFReader(str(gguf))
    f = reader.fields["tokenizer.ggml.tokens"]
    pieces = [bytes(f.parts[i]).decode("utf-8", "replace") for i in f.data]
    # Every piece that ends a line may stop generation, kept or not in the data, so keep them all.
    newline = {i for i, p in enumerate(pieces) if "\n" in p or p == "<0x0A>"}
    kept = np.array(sorted(used | newline), dtype=np.int64)
    remap = {int(t): i for i, t in enumerate(kept)}
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "vocab.npy", kept)
    renumbered = (dict(r, prefix=[remap[t] for t in r["prefix"]],
                       steps=[dict(s, forced=[remap[t] for t in s["forced"]], target=[remap[t] for t in s["target"]])
                              for s in r["steps"]]) for r in rows)
    write_atomic(out / "examples.jsonl", "".join(json.dumps(r) + "\n" for r in renumbered))
    (out / "stop-ids.json").write_text(json.dumps(sorted(remap[t] for t in newline) + [remap[1]]))
    stats = lm_base.pack(gguf, kept, out, parts)
    # Logits of a fixed text from the packed model here (transformers 4.x, CPU): `train` compares its
    # own build against them before it spends any time (another transformers, another device).
    ref = [remap[t] for t in REFERENCE_IDS]
    with torch.no_grad():
        logits = lm_base.build_model(out)(input_ids=torch.tensor([ref])).logits[0].numpy()
    np.savez(out / "reference.npz", ids=np.array(ref), logits=logits)
    return {"examples": len(rows), "vocab": len(kept), "newline_ids": len(newline), **stats}


# --- LoRA --------------------------------------------------------------------------------------

def add_lora(model: Any, rank: int, alpha: float, dropout: float, seed: int) -> dict[str, Any]:
    """Wraps each targeted nn.Linear with a rank-`rank` update B·A·x·alpha/rank (B starts at zero,
    so the wrapped model starts equal to the base); freezes everything else. Returns the wrappers."""
    from torch import nn

    class LoRALinear(nn.Module):
        def __init__(self, base: nn.Linear) -> None:
            super().__init__()
            self.base = base
            self.lora_A = nn.Parameter(torch.empty(rank, base.in_features, device=base.weight.device))
            self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank, device=base.weight.device))
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
            self.scale = alpha / rank
            self.drop = nn.Dropout(dropout)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.base(x) + (self.drop(x) @ self.lora_A.t() @ self.lora_B.t()) * self.scale

    torch.manual_seed(seed)
    for p in model.parameters():
        p.requires_grad_(False)
    wrapped: dict[str, Any] = {}
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if child_name in TARGETS and isinstance(child, nn.Linear):
                w = LoRALinear(child)
                setattr(module, child_name, w)
                wrapped[f"{name}.{child_name}"] = w
    return wrapped


def adapter_tensors(wrapped: dict[str, Any]) -> dict[str, Any]:
    return {f"{n}.lora_{k}.weight": getattr(w, f"lora_{k}").detach().to("cpu").half().contiguous()
            for n, w in wrapped.items() for k in ("A", "B")}


# --- data --------------------------------------------------------------------------------------

@dataclass
class Example:
    id: str
    ids: list[int]
    labels: list[int]


def task_examples(rows: list[dict[str, Any]], run: dict[str, Any], split: str) -> list[Example]:
    """The run's task's examples of one split that fit its max_len."""
    return [e for r in rows if r["task"] == run["task"] and r["split"] == split
            if (e := training_example(r, run["max_len"])) is not None]


def training_example(r: dict[str, Any], max_len: int) -> Example | None:
    ids = list(r["prefix"])
    labels = [-100] * len(ids)
    for s in r["steps"]:
        ids += s["forced"] + s["target"]
        labels += [-100] * len(s["forced"]) + s["target"]
    if len(ids) > max_len:
        return None
    return Example(r["id"], ids, labels)


def batches(examples: list[Example], tokens_per_batch: int, rng: random.Random) -> list[list[Example]]:
    """Similar lengths together (less padding), at most `tokens_per_batch` padded tokens a batch."""
    order = sorted(examples, key=lambda e: (len(e.ids), rng.random()))
    out: list[list[Example]] = []
    cur: list[Example] = []
    for e in order:
        if cur and (len(cur) + 1) * max(len(x.ids) for x in [*cur, e]) > tokens_per_batch:
            out.append(cur)
            cur = []
        cur.append(e)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def collate(batch: list[Example], device: Any) -> dict[str, Any]:
    n = max(len(e.ids) for e in batch)
    ids = torch.zeros((len(batch), n), dtype=torch.long)
    labels = torch.full((len(batch), n), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), n), dtype=torch.long)
    for i, e in enumerate(batch):
        ids[i, :len(e.ids)] = torch.tensor(e.ids)
        labels[i, :len(e.labels)] = torch.tensor(e.labels)
        mask[i, :len(e.ids)] = 1
    return {"input_ids": ids.to(device), "labels": labels.to(device), "attention_mask": mask.to(device)}


# --- train and generate ------------------------------------------------------------------------

def train_run(model: Any, run: dict[str, Any], rows: list[dict[str, Any]], device: Any, log: Any,
              budget_s: float) -> tuple[dict[str, Any], dict[str, Any]]:
    rng = random.Random(run.get("seed", 13))
    wrapped = add_lora(model, run["rank"], run["alpha"], run.get("dropout", 0.05), run.get("seed", 13))
    train = task_examples(rows, run, "train")
    if not train:
        raise ValueError(f"run {run['name']}: no {run['task']} training examples")
    params = [p for w in wrapped.values() for p in (w.lora_A, w.lora_B)]
    opt = torch.optim.AdamW(params, lr=run["lr"], weight_decay=0.0)
    per_epoch = len(batches(train, run["tokens_per_batch"], random.Random(0)))
    plan = {"total": per_epoch * run["epochs"]}
    warm = max(1, int(0.03 * plan["total"]))

    def lr_at(s: int) -> float:
        total = plan["total"]
        return min(1.0, (s + 1) / warm) * max(0.0, 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    model.train()
    t0, step, seen_tokens, stopped = time.time(), 0, 0, False
    for epoch in range(run["epochs"]):
        for b in batches(train, run["tokens_per_batch"], rng):
            inputs = collate(b, device)
            loss = model(**inputs).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            seen_tokens += int(inputs["attention_mask"].sum())
            if step == 20:
                # The schedule decays to zero within the time budget: at this step's pace, fewer steps
                # than planned may fit, and a run cut off at full learning rate is worse than a shorter one.
                fit = int(budget_s / ((time.time() - t0) / step))
                if fit < plan["total"]:
                    log(f"{run['name']}: {plan['total']} steps do not fit {budget_s:.0f} s; planning {fit}")
                    plan["total"] = fit
            if step % 25 == 0 or step == plan["total"]:
                log(f"{run['name']} epoch {epoch + 1} step {step}/{plan['total']} loss {loss.item():.4f} "
                    f"{seen_tokens / (time.time() - t0):.0f} tokens/s")
            if step >= plan["total"] or time.time() - t0 > budget_s:
                stopped = step < per_epoch * run["epochs"]
                if stopped:
                    log(f"{run['name']}: stopping at step {step} of {per_epoch * run['epochs']} (time budget {budget_s:.0f} s)")
                break
        if stopped:
            break
    model.eval()
    stats = {"run": run["name"], "task": run["task"], "examples": len(train), "steps": step,
             "epochs": round(step / per_epoch, 2),
             "seconds": round(time.time() - t0, 1), "tokens_per_s": round(seen_tokens / (time.time() - t0)),
             "stopped_early": stopped}
    return wrapped, stats


def heldout_loss(model: Any, rows: list[dict[str, Any]], run: dict[str, Any], device: Any) -> float:
    held = task_examples(rows, run, "heldout")[:run.get("heldout_limit")]
    total, count = 0.0, 0
    with torch.no_grad():
        for b in batches(held, run["tokens_per_batch"], random.Random(0)):
            inputs = collate(b, device)
            n = int((inputs["labels"][:, 1:] != -100).sum())
            total += model(**inputs).loss.item() * n
            count += n
    return total / max(count, 1)


def generate(model: Any, rows: list[dict[str, Any]], task: str, stop_ids: list[int], device: Any,
             max_new: int = 48, batch_size: int = 64, limit: int | None = None) -> list[dict[str, Any]]:
    """Greedy, as serving decodes: the prefix, then per step its forced ids and a generated line
    that ends at the first id holding a newline. Steps run in rounds across examples (round k is
    every example's k-th step), left-padded, without a cache between rounds."""
    held = [r for r in rows if r["task"] == task and r["split"] == "heldout"][:limit]
    seqs = {r["id"]: list(r["prefix"]) for r in held}
    outs: dict[str, list[list[int]]] = {r["id"]: [] for r in held}
    stop = set(stop_ids)
    rounds = max((len(r["steps"]) for r in held), default=0)
    for k in range(rounds):
        todo = [r for r in held if len(r["steps"]) > k]
        for i in range(0, len(todo), batch_size):
            chunk = todo[i:i + batch_size]
            inputs = [seqs[r["id"]] + r["steps"][k]["forced"] for r in chunk]
            n = max(len(x) for x in inputs)
            ids = torch.zeros((len(chunk), n), dtype=torch.long)
            mask = torch.zeros((len(chunk), n), dtype=torch.long)
            for j, x in enumerate(inputs):
                ids[j, n - len(x):] = torch.tensor(x)
                mask[j, n - len(x):] = 1
            with torch.no_grad():
                g = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), do_sample=False,
                                   max_new_tokens=max_new, eos_token_id=stop_ids, pad_token_id=0)
            for j, r in enumerate(chunk):
                new: list[int] = []
                for t in g[j, n:].tolist():
                    new.append(t)
                    if t in stop:
                        break
                outs[r["id"]].append(new)
                seqs[r["id"]] = inputs[j] + new
    return [{"id": r["id"], "generated": outs[r["id"]], "references": [s["text"] for s in r["steps"]]} for r in held]


def train(pack: Path, config: dict[str, Any], out: Path, device_name: str, only: list[str] | None) -> None:
    from safetensors.torch import save_file
    out.mkdir(parents=True, exist_ok=True)
    logf = (out / "log.txt").open("a")

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    device = pick_device(device_name)  # fp32 with TF32 on CUDA
    if device.type == "cuda":
        log(f"device {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    import transformers
    log(f"transformers {transformers.__version__}")
    rows = read_jsonl(pack / "examples.jsonl")
    stop_ids = json.loads((pack / "stop-ids.json").read_text())
    vocab = np.load(pack / "vocab.npy")
    t0 = time.time()
    base = lm_base.build_model(pack, device.type)
    log(f"base model built in {time.time() - t0:.1f} s, vocabulary {len(vocab)}")
    ref = np.load(pack / "reference.npz")
    with torch.no_grad():
        got = base(input_ids=torch.tensor(ref["ids"][None]).to(device)).logits[0].float().cpu().numpy()
    diff = float(np.abs(got - ref["logits"]).max())
    log(f"reference logits: max difference {diff:.4f} (scale {float(np.abs(ref['logits']).max()):.1f}), "
        f"argmax equal {bool((got.argmax(-1) == ref['logits'].argmax(-1)).all())}")
    if diff > 0.05 * float(np.abs(ref["logits"]).max()):
        raise RuntimeError("the base model built here does not compute what it computed where it was packed")
    summary: list[dict[str, Any]] = []
    for run in config["runs"]:
        if only and run["name"] not in only:
            continue
        model = base  # its weights stay frozen: unwrapping the LoRA layers (finally) restores the base
        try:
            wrapped, stats = train_run(model, run, rows, device, log, run.get("budget_s", 1e9))
            save_file(adapter_tensors(wrapped), str(out / f"adapter-{run['name']}.safetensors"),
                      metadata={"rank": str(run["rank"]), "alpha": str(run["alpha"]), "task": run["task"]})
            stats["heldout_loss"] = round(heldout_loss(model, rows, run, device), 4)
            log(json.dumps(stats))
            t1 = time.time()
            gen = generate(model, rows, run["task"], stop_ids, device, limit=run.get("heldout_limit"))
            for g in gen:
                g["generated"] = [[int(vocab[t]) for t in line] for line in g["generated"]]
            write_atomic(out / f"generated-{run['name']}.jsonl", "".join(json.dumps(g) + "\n" for g in gen))
            stats["generate_s"] = round(time.time() - t1, 1)
            summary.append(stats)
        except Exception as e:  # one run's failure must not cost the others their minutes
            log(f"run {run['name']} failed: {type(e).__name__}: {e}")
            summary.append({"run": run["name"], "error": f"{type(e).__name__}: {e}"})
        finally:
            # Unwrap: the next run starts from the base model again.
            for name, module in list(model.named_modules()):
                for child_name, child in list(module.named_children()):
                    if hasattr(child, "lora_A"):
                        setattr(module, child_name, child.base)
        write_atomic(out / "summary.json", json.dumps(summary, indent=1) + "\n")
    log("done")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.train_lm_adapter")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--examples", type=Path, required=True)
    p.add_argument("--gguf", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--parts", type=int, default=2)
    t = sub.add_parser("train")
    t.add_argument("--pack", type=Path, required=True)
    t.add_argument("--config", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--device", default="cpu")
    t.add_argument("--only", nargs="*")
    a = ap.parse_args(argv)
    if a.command == "prepare":
        print(json.dumps(prepare(a.examples, a.gguf, a.out, a.parts)))
    else:
        train(a.pack, json.loads(a.config.read_text()), a.out, a.device, a.only)


if __name__ == "__main__":
    main()
