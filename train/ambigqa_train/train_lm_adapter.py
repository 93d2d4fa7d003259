"""LoRA adapters on the pretrained decoder (lm_base.py) for question disambiguation and SpanSeqGen.

Two steps, so that the machine that trains needs no tokenizer and no network:
  prepare (here, CPU): examples.jsonl from `lm-pack` (token ids from llama.cpp's tokenizer) → the kept
    vocabulary, the examples with ids renumbered into it (tokens.npz), the base model's raw tensors in
    parts (lm_base.pack), and the ids whose piece holds a newline (a generated line stops there).
  train (CPU or GPU): per run in the config, a LoRA adapter trained on the task's `train` examples
    (loss on the target tokens only), saved as adapter-<run>.safetensors (A and B per projection,
    float16, in transformers' names), then the held-out examples generated greedily the way serving
    does (forced segments fed, each line generated until a newline) into generated-<run>.jsonl with
    ids in the base model's own vocabulary. On the CPU a run takes hours: every `checkpoint_s` (config,
    default 300 s) its state is saved in OUT/checkpoint-<run>/ (lm_resume.py), and the same command
    after a stop resumes it to the adapter an uninterrupted run makes; finished runs are skipped.
  check-clean: the decoders' files of `data/train` hold no eval-300 and no second-set question.

  python -m ambigqa_train.train_lm_adapter prepare --examples E.jsonl --gguf BASE.gguf --out PACK --parts 2
  python -m ambigqa_train.train_lm_adapter train --pack PACK --config configs/lm-adapters.json --out OUT --device cuda
  python -m ambigqa_train.train_lm_adapter train --pack PACK --config configs/lm-adapters-cpu.json --out OUT --threads 1
  python -m ambigqa_train.train_lm_adapter check-clean --data ../data/train --shared ../../shared/data
"""
from __future__ import annotations

import argparse
import json
import math
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import lm_base, lm_resume
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

class Stopped(Exception):
    """A run stopped on request (StopRequest): the same command again resumes it."""


class StopRequest:
    """When to stop. `install()` makes SIGTERM and SIGINT ask for it: within the training steps the
    step under way ends and the checkpoint is saved first; anywhere else (building the model, the
    held-out loss, generating) Stopped is raised at once, as those are redone on resume from the
    checkpoint saved when training ended. `at_step` stops after that step (tests)."""

    def __init__(self, at_step: int | None = None) -> None:
        self.at_step = at_step
        self.asked = False
        self.soft = False  # True while train_run is within its steps

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.asked = True
        if not self.soft:
            raise Stopped(f"stopped by signal {signum}")

    def __call__(self, step: int) -> bool:
        return self.asked or step == self.at_step


def train_run(model: Any, run: dict[str, Any], rows: list[dict[str, Any]], device: Any, log: Any,
              budget_s: float | None = None, resume: Path | None = None, checkpoint_s: float = 300.0,
              should_stop: StopRequest | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Trains the run's adapter. `budget_s` (None: none) cuts it at that many seconds of training,
    the schedule fitted to it. With `resume` (a checkpoint file, lm_resume.py), it starts from the
    checkpoint there when there is one, saves one every `checkpoint_s` seconds and once trained,
    and ends with the tensors an uninterrupted run ends with. `should_stop`, asked after every
    step, ends it with Stopped once that step is saved."""
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
    # Where the run stands; with the epoch's batch order (example indices) and the generators'
    # states, all that the next step depends on.
    pos: dict[str, Any] = {"step": 0, "epoch": 0, "batch": 0, "seen_tokens": 0, "elapsed_s": 0.0,
                           "trained": False, "stopped": False}
    order: list[list[int]] | None = None
    expected = lm_resume.fingerprint(run, [e.id for e in train], device)
    state = lm_resume.load(resume, expected) if resume is not None else None
    if state is not None:
        for n, w in wrapped.items():
            w.lora_A.data.copy_(state["lora"][n]["A"])
            w.lora_B.data.copy_(state["lora"][n]["B"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        plan["total"] = state["plan_total"]
        pos, order = dict(state["position"]), state["order"]
        lm_resume.restore_rng(state["rng"], rng)
        log(f"{run['name']}: resumed at step {pos['step']}/{plan['total']} (epoch {pos['epoch'] + 1}, "
            f"{pos['elapsed_s']:.0f} s trained before)" + (", training done" if pos["trained"] else ""))
    trained_before = bool(pos["trained"])
    index = {id(e): i for i, e in enumerate(train)}
    t0, tokens0, step0, base_s = time.time(), pos["seen_tokens"], pos["step"], pos["elapsed_s"]
    cpu0 = time.process_time()  # on a shared CPU, the pace the job would have with its threads to itself
    last_save = last_log = t0

    def elapsed() -> float:
        return base_s + time.time() - t0

    def save() -> None:
        assert resume is not None
        pos["elapsed_s"] = elapsed()
        lm_resume.save(resume, {
            "fingerprint": expected, "plan_total": plan["total"], "position": dict(pos), "order": order,
            "lora": {n: {"A": w.lora_A.detach().cpu().clone(), "B": w.lora_B.detach().cpu().clone()} for n, w in wrapped.items()},
            "optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "rng": lm_resume.rng_states(rng, device)})

    micro = run.get("micro_tokens", run["tokens_per_batch"])
    model.train()
    if should_stop is not None:
        should_stop.soft = True
    try:
        while not pos["trained"]:
            if order is None:
                order = [[index[id(e)] for e in b] for b in batches(train, run["tokens_per_batch"], rng)]
            done = False
            while pos["batch"] < len(order) and not done:
                loss, tokens = accumulate(model, [train[i] for i in order[pos["batch"]]], micro, device)
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                pos["batch"] += 1
                pos["step"] += 1
                pos["seen_tokens"] += tokens
                step = pos["step"]
                if step == 20 and budget_s is not None:
                    # The schedule decays to zero within the time budget: at this step's pace, fewer steps
                    # than planned may fit, and a run cut off at full learning rate is worse than a shorter one.
                    fit = int(budget_s / (elapsed() / step))
                    if fit < plan["total"]:
                        log(f"{run['name']}: {plan['total']} steps do not fit {budget_s:.0f} s; planning {fit}")
                        plan["total"] = fit
                now = time.time()
                if step % 25 == 0 or step == plan["total"] or now - last_log >= 60:
                    pace = (now - t0) / max(step - step0, 1)
                    log(f"{run['name']} epoch {pos['epoch'] + 1} step {step}/{plan['total']} loss {loss.item():.4f} "
                        f"{(pos['seen_tokens'] - tokens0) / (now - t0):.0f} tokens/s "
                        f"ETA {max(plan['total'] - step, 0) * pace / 60:.0f} min "
                        f"({(pos['seen_tokens'] - tokens0) / max(time.process_time() - cpu0, 1e-9):.0f} tokens per CPU second)")
                    last_log = now
                done = step >= plan["total"] or (budget_s is not None and elapsed() > budget_s)
                if done:
                    break
                stop = should_stop is not None and should_stop(step)
                if resume is not None and (stop or now - last_save >= checkpoint_s):
                    save()
                    last_save = time.time()
                    log(f"{run['name']}: checkpoint at step {step} ({last_save - now:.1f} s to save)")
                if stop:
                    raise Stopped(f"{run['name']}: stopped after step {step}" + (", checkpoint saved" if resume else ""))
            if done or pos["epoch"] + 1 >= run["epochs"]:
                pos["trained"] = True
                pos["stopped"] = pos["step"] < per_epoch * run["epochs"]
                if pos["stopped"]:
                    log(f"{run['name']}: stopping at step {pos['step']} of {per_epoch * run['epochs']} "
                        f"(time budget {budget_s} s)")
            else:
                pos["epoch"] += 1
                pos["batch"] = 0
                order = None
    finally:
        if should_stop is not None:
            should_stop.soft = False
    if resume is not None and not trained_before:
        save()  # the held-out loss and the generation that follow may be stopped too
    if should_stop is not None and should_stop.asked:  # asked during the last step
        raise Stopped(f"{run['name']}: stopped once trained" + (", checkpoint saved" if resume else ""))
    model.eval()
    seconds = pos["elapsed_s"] if trained_before else elapsed()
    stats = {"run": run["name"], "task": run["task"], "examples": len(train), "steps": pos["step"],
             "epochs": round(pos["step"] / per_epoch, 2),
             "seconds": round(seconds, 1), "tokens_per_s": round(pos["seen_tokens"] / max(seconds, 1e-9)),
             "stopped_early": pos["stopped"]}
    return wrapped, stats


def accumulate(model: Any, batch: list[Example], micro_tokens: int, device: Any) -> tuple[torch.Tensor, int]:
    """The batch's loss (mean over its target tokens) backpropagated in pieces of at most
    `micro_tokens` padded tokens: each piece's mean weighted by its share of the batch's target
    tokens, so the gradients add up to the whole batch's (on the CPU a 12,288-token batch at once
    holds over 20 GB of activations). Returns the loss (a tensor: no device sync here) and the
    batch's tokens."""
    pieces: list[list[Example]] = [[]]
    for e in batch:  # `batches` sorted them by length: pieces pad little
        if pieces[-1] and (len(pieces[-1]) + 1) * max(len(x.ids) for x in [*pieces[-1], e]) > micro_tokens:
            pieces.append([])
        pieces[-1].append(e)
    if len(pieces) == 1:  # as before accumulation existed (the GPU's batches)
        inputs = collate(batch, device)
        loss = model(**inputs).loss
        loss.backward()
        return loss.detach(), int(inputs["attention_mask"].sum())
    targets = sum(sum(1 for t in e.labels[1:] if t != -100) for e in batch)
    total, tokens = torch.zeros((), device=device), 0
    for piece in pieces:
        inputs = collate(piece, device)
        n = int((inputs["labels"][:, 1:] != -100).sum())
        loss = model(**inputs).loss * (n / targets)
        loss.backward()
        total += loss.detach()
        tokens += int(inputs["attention_mask"].sum())
    return total, tokens


def heldout_loss(model: Any, rows: list[dict[str, Any]], run: dict[str, Any], device: Any) -> float:
    held = task_examples(rows, run, "heldout")[:run.get("heldout_limit")]
    total, count = 0.0, 0
    with torch.no_grad():
        for b in batches(held, run.get("micro_tokens", run["tokens_per_batch"]), random.Random(0)):
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


def train(pack: Path, config: dict[str, Any], out: Path, device_name: str, only: list[str] | None,
          threads: int | None = None, should_stop: StopRequest | None = None) -> None:
    """Each run of the config in turn into `out`. A run whose adapter and generated lines are both
    there is done and skipped; one with a checkpoint (config `checkpoint_s`, default 300 s; null:
    none) resumes from it, so the same command after a stop goes on where it was."""
    from safetensors.torch import save_file
    out.mkdir(parents=True, exist_ok=True)
    logf = (out / "log.txt").open("a")

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    threads = threads if threads is not None else config.get("threads")
    if threads is not None:
        # On a shared CPU the job takes what it is given and no more (interop too: one pool).
        torch.set_num_threads(int(threads))
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already set in this process (tests)
            pass
    checkpoint_s = config.get("checkpoint_s", 300.0)
    device = pick_device(device_name)  # fp32 with TF32 on CUDA
    if device.type == "cuda":
        log(f"device {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    else:
        log(f"device cpu, {torch.get_num_threads()} threads, torch {torch.__version__}")
    import transformers
    log(f"transformers {transformers.__version__}")
    runs = [r for r in config["runs"] if not only or r["name"] in only]
    before = {s["run"]: s for s in (json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else [])}
    todo = [r for r in runs if not finished(out, r["name"])]
    summary: list[dict[str, Any]] = [before.get(r["name"], {"run": r["name"]}) for r in runs if r not in todo]
    for r in runs:
        if r not in todo:
            log(f"run {r['name']}: adapter and generated lines there already; skipped")
    if not todo:
        write_atomic(out / "summary.json", json.dumps(summary, indent=1) + "\n")
        log("done")
        return
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
    for run in todo:
        model = base  # its weights stay frozen: unwrapping the LoRA layers (finally) restores the base
        ckpt = lm_resume.checkpoint_path(out, run["name"]) if checkpoint_s is not None else None
        try:
            wrapped, stats = train_run(model, run, rows, device, log, run.get("budget_s"), ckpt,
                                       float(checkpoint_s or 0), should_stop)
            save_file(adapter_tensors(wrapped), str(out / f"adapter-{run['name']}.safetensors"),
                      metadata={"rank": str(run["rank"]), "alpha": str(run["alpha"]), "task": run["task"]})
            stats["heldout_loss"] = round(heldout_loss(model, rows, run, device), 4)
            log(json.dumps(stats))
            t1 = time.time()
            gen = generate(model, rows, run["task"], stop_ids, device, batch_size=run.get("generate_batch", 64),
                           limit=run.get("heldout_limit"))
            for g in gen:
                g["generated"] = [[int(vocab[t]) for t in line] for line in g["generated"]]
            write_atomic(out / f"generated-{run['name']}.jsonl", "".join(json.dumps(g) + "\n" for g in gen))
            stats["generate_s"] = round(time.time() - t1, 1)
            summary.append(stats)
            if ckpt is not None:
                lm_resume.remove(ckpt)  # done: the adapter and the generated lines say so now
        except Stopped as e:
            log(f"{e}; the same command again resumes it")
            write_atomic(out / "summary.json", json.dumps(summary, indent=1) + "\n")
            raise
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


def finished(out: Path, run_name: str) -> bool:
    return (out / f"adapter-{run_name}.safetensors").exists() and (out / f"generated-{run_name}.jsonl").exists()


def check_clean(data: Path, shared: Path, packed: Path | None = None) -> dict[str, int]:
    """The decoders' training files of `data` (ambigqa data build) hold no eval-300 and no second-set
    question (train/splits/asqa-second.txt), by id or by question text, nor do the examples packed
    from them (`packed`, lm-pack's examples.jsonl, by id): what the adapters trained on them must
    never have seen. Raises ValueError naming the first few that do."""
    from .data import load_eval300
    held = load_eval300(shared)
    counts: dict[str, int] = {}
    bad: list[str] = []
    for name in ("qd-train", "qd-heldout", "spanseqgen2-train", "spanseqgen2-heldout"):
        path = data / f"{name}.jsonl"
        if not path.exists():
            raise ValueError(f"{path} is missing (ambigqa data build)")
        rows = read_jsonl(path)
        counts[name] = len(rows)
        bad += [f"{name}:{r['id']}" for r in rows if held.excludes(r.get("qid"), r["question"])]
    if packed is not None:
        # lm-pack keeps data build's ids: `source:qid` (SpanSeqGen) and `source:qid:prompt` (QD).
        rows = read_jsonl(packed)
        counts["packed"] = len(rows)
        bad += [f"packed:{r['id']}" for r in rows if r["id"].split(":")[1] in held.ids]
    if bad:
        raise ValueError(f"{len(bad)} rows of {data} are eval-300 or second-set questions "
                         f"(e.g. {', '.join(bad[:5])}): rebuild it with the current `ambigqa data build`")
    return {**counts, "held_out_ids": len(held.ids)}


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
    t.add_argument("--threads", type=int, help="torch threads (default: the config's `threads`, else torch's own)")
    c = sub.add_parser("check-clean")
    c.add_argument("--data", type=Path, required=True, help="ambigqa data build's output (data/train)")
    c.add_argument("--shared", type=Path, required=True, help="the shared data folder (../shared/data)")
    c.add_argument("--packed", type=Path, help="lm-pack's examples.jsonl, checked by id too")
    a = ap.parse_args(argv)
    if a.command == "prepare":
        print(json.dumps(prepare(a.examples, a.gguf, a.out, a.parts)))
    elif a.command == "check-clean":
        try:
            print(json.dumps(check_clean(a.data, a.shared, a.packed)))
        except ValueError as e:
            raise SystemExit(f"check-clean: {e}") from None
    else:
        # SIGTERM (scripts/train-lm-cpu stop, a shutdown) or Ctrl-C: StopRequest, then exit 75
        # (EX_TEMPFAIL: the same command resumes).
        stop = StopRequest()
        stop.install()
        try:
            train(a.pack, json.loads(a.config.read_text()), a.out, a.device, a.only, a.threads, stop)
        except Stopped:
            raise SystemExit(75) from None


if __name__ == "__main__":
    main()
