"""Democratic co-training (AmbigQA, Min et al. 2020, Algorithm 1) with extractive readers.

`python -m ambigqa_train.cotrain run --config train/configs/cotrain-e5.json`

The paper's committee is SpanSeqGen models that vote with the known answer forced as the first
output. The default reader here is extractive, so the committee votes with its spans instead: a
member "predicts" on a single-answer example the answer set the serving reader would return over
the example's passages (spans merged by normalised text, kept while within `keep` of the best,
as reader/extractive-reader.ts does); the known answer is given, and what the vote counts is
every *other* answer in that set.

Committee k (1-based) is C members fine-tuned from `init` on D_full plus the silver examples of
iterations < k, each with its own seed (its own data order and dropout); for
k <= N it then votes on the examples still waiting in D_partial:
- an extra answer predicted by more than C/2 members makes the example multi-answer (the known
  answer plus every such answer);
- no member predicting anything beyond the known answer makes it single-answer;
- anything else waits for the next iteration.
Committee N+1 is the co-trained ensemble; committee 1 is the plain ensemble (D_full only).

Every step writes its output atomically (or line by line, resumed by id), and every random
choice comes from (seed, step), so a run killed at any point and started again ends with the
same files. Layout under `out`:
  committee-k/member-c/checkpoint   training state (resumed) then the final model
  committee-k/member-c/done.json    the member's training finished
  committee-k/votes-c.jsonl         member c's answer sets on the waiting examples (k <= N)
  silver-k.jsonl                    every example voted on in iteration k, with its votes
  partial.jsonl, full.jsonl         D_partial and D_full as read (fixed at the first start)

`device` in the config (cpu, cuda or auto, default cpu; `--device` overrides it) is where every
member trains and votes; on CUDA fp32 with TF32 matmuls. The files are the same on both devices
(a GPU's sums differ in the last bits, so its votes need not equal the CPU's).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizerFast

from .common import add_device_argument, device_of, load_config, model_device, read_jsonl, run_steps, setup, to_device, write_atomic
from .data import SEP, Passage, crop, load_eval300
from .extractive import NEG, ExtractiveReader, answer_token_spans, best_spans, encode, passage_text
from .train_extractive import normalize

Example = dict[str, Any]


def log(event: dict[str, Any]) -> None:
    """One JSON progress line (the TypeScript job reads these)."""
    print(json.dumps(event), flush=True)


def write_jsonl(path: Path, rows: list[Example]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


# ---- the two data sets, in one shape: {id, source, question, passages: ["title: text"], titles, answers: [[alias]]}
# (the titles, because a span keeps to one field of `title: text`: extractive.field_at, issue 47)


def full_examples(path: Path, limit: int | None) -> list[Example]:
    """D_full: the stage-2 multi-answer sets (spanseqgen2-train.jsonl, already free of eval-300),
    their passages as the stage-2 input holds them."""
    rows = []
    for r in read_jsonl(path, limit):
        passages = r["input"].split(SEP)[1:]
        if len(r.get("titles", [])) != len(passages):
            raise ValueError(f"{path}: row {r['id']} has no title for each passage (built before they were written): run `npx ambigqa data build` again")
        rows.append({"id": r["id"], "source": r["source"], "question": r["question"], "passages": passages, "titles": r["titles"], "answers": r["answers"]})
    return rows


def partial_examples(path: Path, sources: list[str], limit: int, negatives: int, words: int, data: Path, seed: int) -> list[Example]:
    """D_partial: single-answer reader groups (`sources`, e.g. NQ-open with its gold paragraph) as
    the gold passage cropped around the answer and its first hard negatives; never an eval-300
    question, checked here again although `data build` already drops them."""
    ev = load_eval300(data)
    rows = [r for r in read_jsonl(path) if r["source"] in sources and not ev.excludes_related(None, r["question"])]
    random.Random(seed).shuffle(rows)
    out = []
    for r in rows[:limit]:
        answers = [r["answers"]]
        ps = [r["positive"], *r["negatives"][:negatives]]
        cuts = [crop(Passage(p["title"], p["text"]), answers, words)[0] for p in ps]
        # The gold passage first would teach nothing a vote needs; a fixed shuffle hides it.
        random.Random(f"{seed}:{r['id']}").shuffle(cuts)
        out.append({"id": r["id"], "source": r["source"], "question": r["question"], "passages": [passage_text(c.title, c.text) for c in cuts],
                    "titles": [c.title for c in cuts], "answers": answers})
    return out


# ---- training: every answer of the set is a target, over all the example's passages


def set_loss(model: ExtractiveReader, tok: PreTrainedTokenizerFast, ex: Example, max_len: int, words: int) -> torch.Tensor | None:
    """-mean over answers of log P(answer) (start and end normalised over every passage's tokens
    at once, as the single-answer loss), plus selection: -log P(a passage holding an answer).
    The mean over answers puts mass on each answer, not only on the easiest (a multi-answer
    reader must rank all of them above the threshold)."""
    texts = [" ".join(t.split()[: words + 8]) for t in ex["passages"]]
    cuts = [len(" ".join(t.split())) for t in ex["titles"]]  # the title as the line above spaces it
    enc = encode(tok, [ex["question"]] * len(texts), texts, max_len)
    device = model_device(model)
    start, end, relevance = model(**to_device(enc.features, device))
    n, length = start.shape
    span_mask = enc.span_mask.to(device)
    s = start.masked_fill(~span_mask, NEG).view(-1).log_softmax(0)
    e = end.masked_fill(~span_mask, NEG).view(-1).log_softmax(0)
    losses, holding = [], set()
    for aliases in ex["answers"]:
        starts, ends = [], []
        for p in range(n):
            for a, z in answer_token_spans(enc.texts[p], enc.offsets[p], enc.span_mask[p], aliases, cuts[p]):
                starts.append(p * length + a)
                ends.append(p * length + z)
                holding.add(p)
        if starts:
            losses.append(-(s[torch.tensor(starts, device=device)].logsumexp(0) + e[torch.tensor(ends, device=device)].logsumexp(0)))
    if not losses:
        return None
    selection = -relevance.log_softmax(0)[torch.tensor(sorted(holding), device=device)].logsumexp(0)
    return torch.stack(losses).mean() + selection


def train_member(cfg: dict[str, Any], rows: list[Example], seed: int, member_dir: Path, device: torch.device | None = None) -> dict[str, Any] | None:
    """Trains one member to cfg["steps"] (resuming its checkpoint) on `device` (default: the
    config's); returns run_steps' result, None when it had finished before."""
    done = member_dir / "done.json"
    if done.exists():
        return None
    device = device if device is not None else device_of(cfg)
    ckpt = member_dir / "checkpoint"
    start_step, source = 0, Path(cfg["init"])
    if (ckpt / "state.pt").exists():
        source = ckpt
        start_step = int(torch.load(ckpt / "state.pt", weights_only=False, map_location="cpu")["step"])
    model = ExtractiveReader.from_pretrained(str(source)).to(device)
    tok = PreTrainedTokenizerFast.from_pretrained(str(source))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01)
    if source == ckpt:
        opt.load_state_dict(torch.load(ckpt / "state.pt", weights_only=False, map_location="cpu")["optimizer"])
    model.train()
    max_len, words = int(cfg["max_len"]), int(cfg.get("words", 100))
    step = [start_step]

    def loss_of(batch: list[Example]) -> torch.Tensor:
        # Dropout drawn from (seed, step), so a resumed member trains exactly as an unbroken one.
        torch.manual_seed(seed * 1_000_003 + step[0])
        step[0] += 1
        losses = [x for x in (set_loss(model, tok, ex, max_len, words) for ex in batch) if x is not None]
        return torch.stack(losses).mean() if losses else sum(p.sum() * 0 for p in model.parameters())  # type: ignore[return-value]

    result = run_steps(model, tok, opt, rows, {**cfg, "stop_at": cfg["steps"]}, seed, start_step, ckpt, loss_of, "examples_per_s")
    write_atomic(done, json.dumps({"step": result["step"], "seed": seed, "rows": len(rows)}))
    return result


# ---- voting


def contains(longer: list[str], shorter: list[str]) -> bool:
    n = len(shorter)
    return any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))


@torch.no_grad()
def answer_set(model: ExtractiveReader, tok: PreTrainedTokenizerFast, ex: Example, cfg: dict[str, Any]) -> list[tuple[str, float]]:
    """The answer set the serving reader would give over these passages (extractive-reader.ts
    `answerSet`): spans merged by normalised text, kept while >= vote_keep x the best (stricter
    than serving's keep: a silver answer should be one the member is sure of), an answer inside a
    better one's words dropped."""
    enc = encode(tok, [ex["question"]] * len(ex["passages"]), ex["passages"], int(cfg["max_len"]))
    # The span search is many small steps over the logits: on the CPU, wherever the model runs.
    start, end, relevance = (t.cpu() for t in model(**to_device(enc.features, model_device(model))))
    merged: dict[str, list[Any]] = {}
    for span in best_spans(enc, start, end, relevance, top=5, title_lengths=[len(t) for t in ex["titles"]]):
        key = normalize(span.text)
        if not key:
            continue
        if key in merged:
            merged[key][1] += math.exp(span.score)
        else:
            merged[key] = [span.text.strip(), math.exp(span.score)]
    ranked = sorted(merged.values(), key=lambda x: -x[1])
    kept: list[tuple[str, float]] = []
    for text, p in ranked:
        if len(kept) >= int(cfg.get("max_answers", 5)) or p < float(cfg["vote_keep"]) * ranked[0][1]:
            break
        w = normalize(text).split()
        if any(len(normalize(k).split()) > len(w) and contains(normalize(k).split(), w) for k, _ in kept):
            continue
        kept.append((text, round(p, 6)))
    return kept


def matches_known(text: str, known: list[str]) -> bool:
    """Equal to, inside, or around one of the known answer's aliases."""
    w = normalize(text).split()
    return any(k and (w == k or contains(k, w) or contains(w, k)) for k in (normalize(a).split() for a in known))


def extras(answers: list[tuple[str, float]], known: list[str]) -> list[str] | None:
    """The answers beyond the known one; None when the set misses the known answer. The
    paper's member is forced to start from the known answer and then says what comes next; an
    extractive member that does not find the known answer at all is not answering this question,
    so it abstains instead of voting for its mistakes."""
    if not any(matches_known(text, known) for text, _ in answers):
        return None
    return [text for text, _ in answers if normalize(text) and not matches_known(text, known)]


def predict_member(cfg: dict[str, Any], member_dir: Path, waiting: list[Example], votes_path: Path, label: str, device: torch.device | None = None) -> None:
    """Member's answer sets on every waiting example, appended line by line; a restart keeps the
    whole lines written and goes on from the first example without one."""
    done: set[str] = set()
    if votes_path.exists():
        raw = votes_path.read_text()
        lines = raw.split("\n")
        whole = [line for line in lines[:-1] if line]  # a last line without "\n" was cut by the kill
        votes_path.write_text("".join(line + "\n" for line in whole))
        done = {json.loads(line)["id"] for line in whole}
    todo = [ex for ex in waiting if ex["id"] not in done]
    if not todo:
        return
    model = ExtractiveReader.from_pretrained(str(member_dir / "checkpoint")).to(device if device is not None else device_of(cfg)).eval()
    tok = PreTrainedTokenizerFast.from_pretrained(str(member_dir / "checkpoint"))
    t0 = time.time()
    with votes_path.open("a") as f:
        for i, ex in enumerate(todo, 1):
            answers = answer_set(model, tok, ex, cfg)
            f.write(json.dumps({"id": ex["id"], "answers": answers, "extra": extras(answers, ex["answers"][0])}, ensure_ascii=False) + "\n")
            f.flush()
            if i % int(cfg.get("log_every_examples", 50)) == 0 or i == len(todo):
                rate = i / max(1e-9, time.time() - t0)
                log({"stage": "predict", "member": label, "done": len(done) + i, "total": len(waiting),
                     "examples_per_s": round(rate, 2), "eta_s": round((len(todo) - i) / rate)})


def vote(waiting: list[Example], votes: list[dict[str, dict[str, Any]]], committee: int) -> list[Example]:
    """Every waiting example with its votes and the decision (multi / single / wait)."""
    rows = []
    for ex in waiting:
        # An abstaining member (None: it missed the known answer) votes for no extra answer.
        per_member = [votes[c][ex["id"]]["extra"] or [] for c in range(committee)]
        counts: dict[str, int] = {}
        shown: dict[str, str] = {}
        for extra in per_member:
            for key in dict.fromkeys(normalize(x) for x in extra):  # a member votes once per answer
                counts[key] = counts.get(key, 0) + 1
        for extra in per_member:
            for x in extra:
                shown.setdefault(normalize(x), x)
        elected = [shown[k] for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n > committee / 2]
        decision = "multi" if elected else "single" if not counts else "wait"
        rows.append({"id": ex["id"], "question": ex["question"], "known": ex["answers"][0][0], "decision": decision,
                     "votes": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
                     "members": [votes[c][ex["id"]]["extra"] for c in range(committee)],
                     "answers": [ex["answers"][0], *[[a] for a in elected]] if decision == "multi" else ex["answers"] if decision == "single" else None})
    return rows


# ---- the loop


@dataclass
class Layout:
    out: Path

    def committee(self, k: int) -> Path:
        return self.out / f"committee-{k}"

    def member(self, k: int, c: int) -> Path:
        return self.committee(k) / f"member-{c}"

    def silver(self, k: int) -> Path:
        return self.out / f"silver-{k}.jsonl"


def fixed_sets(cfg: dict[str, Any], layout: Layout, seed: int) -> tuple[list[Example], list[Example]]:
    """D_full and D_partial, read once and kept: a restart must not see other data."""
    full_path, partial_path = layout.out / "full.jsonl", layout.out / "partial.jsonl"
    if not full_path.exists():
        write_jsonl(full_path, full_examples(Path(cfg["full_file"]), cfg.get("full_limit")))
    if not partial_path.exists():
        write_jsonl(partial_path, partial_examples(Path(cfg["partial_file"]), list(cfg["partial_sources"]), int(cfg["partial_limit"]),
                                                   int(cfg.get("negatives", 2)), int(cfg.get("words", 100)), Path(cfg["data"]), seed))
    return read_jsonl(full_path), read_jsonl(partial_path)


def silver_training(layout: Layout, upto: int, partial: dict[str, Example]) -> list[Example]:
    rows = []
    for k in range(1, upto + 1):
        for r in read_jsonl(layout.silver(k)):
            if r["decision"] != "wait":
                ex = partial[r["id"]]
                rows.append({**ex, "answers": r["answers"], "source": f"silver-{k}:{r['decision']}"})
    return rows


def hold_lock(out: Path) -> None:
    """One run per folder: a second start while the first lives would write the same files."""
    lock = out / "run.lock"
    try:
        pid = int(lock.read_text())
        os.kill(pid, 0)
        if pid != os.getpid():
            raise SystemExit(f"co-training: {out} is being written by process {pid}; wait for it or stop it first")
    except (FileNotFoundError, ValueError, ProcessLookupError):
        pass
    write_atomic(lock, str(os.getpid()))


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    seed, committee, iterations = int(cfg.get("seed", 0)), int(cfg["committee"]), int(cfg["iterations"])
    device = device_of(cfg)
    setup(seed)
    # Two cores are shared with other jobs; one thread each is also what makes a run repeatable.
    torch.set_num_threads(int(cfg.get("threads", 1)))
    layout = Layout(Path(cfg["out"]))
    layout.out.mkdir(parents=True, exist_ok=True)
    hold_lock(layout.out)
    full, partial = fixed_sets(cfg, layout, seed)
    by_id = {ex["id"]: ex for ex in partial}
    log({"stage": "data", "full": len(full), "partial": len(partial)})
    t_run = time.time()
    for k in range(1, iterations + 2):
        rows = full + silver_training(layout, k - 1, by_id)
        for c in range(committee):
            # Members differ in their seed: data order and dropout (the paper's SpanSeqGen members
            # differ in answer order too; a loss over the answer set has no order).
            member_seed = seed + 100 * k + c
            log({"stage": "train", "committee": k, "member": c, "rows": len(rows), "seed": member_seed})
            train_member(cfg, rows, member_seed, layout.member(k, c), device)
        if k > iterations or layout.silver(k).exists():
            continue
        decided = {r["id"] for j in range(1, k) for r in read_jsonl(layout.silver(j)) if r["decision"] != "wait"}
        waiting = [ex for ex in partial if ex["id"] not in decided]
        votes = []
        for c in range(committee):
            path = layout.committee(k) / f"votes-{c}.jsonl"
            predict_member(cfg, layout.member(k, c), waiting, path, f"{k}.{c}", device)
            votes.append({r["id"]: r for r in read_jsonl(path)})
        silver = vote(waiting, votes, committee)
        write_jsonl(layout.silver(k), silver)
        counts = {d: sum(r["decision"] == d for r in silver) for d in ("multi", "single", "wait")}
        log({"stage": "vote", "iteration": k, **counts})
    summary = {"committees": iterations + 1, "members": committee, "seconds_this_start": round(time.time() - t_run, 1),
               "silver": [summary_of(read_jsonl(layout.silver(k))) for k in range(1, iterations + 1)]}
    write_atomic(layout.out / "summary.json", json.dumps(summary, indent=1))
    return summary


def summary_of(silver: list[Example]) -> dict[str, Any]:
    hist: dict[str, int] = {}
    for r in silver:
        top = str(max(r["votes"].values(), default=0))
        hist[top] = hist.get(top, 0) + 1
    return {d: sum(r["decision"] == d for r in silver) for d in ("multi", "single", "wait")} | {"top_vote": dict(sorted(hist.items()))}


def fingerprint(out: Path) -> str:
    """A hash of everything a run decides (silver sets, votes, final weights): equal runs, equal hashes."""
    h = hashlib.sha256()
    for path in sorted(out.rglob("*")):
        if path.is_file() and (path.suffix in (".jsonl", ".safetensors") or path.name == "done.json"):
            h.update(str(path.relative_to(out)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.cotrain")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--config", type=Path, required=True)
    add_device_argument(r, "where the members train and vote")
    f = sub.add_parser("fingerprint")
    f.add_argument("out", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "run":
        log({"stage": "done", "summary": run(load_config(a.config, a.device))})
    else:
        print(fingerprint(a.out))


if __name__ == "__main__":
    main()
