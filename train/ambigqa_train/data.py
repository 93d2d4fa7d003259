"""Training sets from ../shared/data, never from an eval-300 question.

`python -m ambigqa_train.data build --data ../shared/data --out data/train` writes JSON Lines:
- reranker-{train,heldout}.jsonl: {id, source, question, title, text, label}
  positives: NQ-open test gold paragraphs, SQuAD train question + paragraph, qa-feedback
  passages; negatives: other questions' positives from the same source (`neg: "random"`).
  BM25 hard negatives over the eval-300 corpus are to be added (see train/README.md).
- spanseqgen1-{train,heldout}.jsonl: {id, source, input, target}: `question [SEP] title: text`
  → one answer, from SQuAD train and NQ-open gold paragraphs.

Examples are identified as `<source>:<index>`; the held-out ids are the lists in
train/splits/*-heldout.txt (written once by `splits`, then kept in the repo).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPLITS_DIR = Path(__file__).resolve().parents[1] / "splits"
SEP = " [SEP] "


def norm_question(q: str) -> str:
    return re.sub(r"\W+", " ", q.lower()).strip()


@dataclass(frozen=True)
class Eval300:
    ids: frozenset[str]
    questions: frozenset[str]

    def excludes(self, qid: str | None, question: str) -> bool:
        return (qid is not None and qid in self.ids) or norm_question(question) in self.questions


def load_eval300(data: Path) -> Eval300:
    ids = frozenset(x.strip() for x in (data / "splits/eval-300.txt").read_text().split() if x.strip())
    dev = json.loads((data / "ambignq/dev_light.json").read_text())
    qs = frozenset(norm_question(r["question"]) for r in dev if r["id"] in ids)
    assert len(qs) == len(ids), "every eval-300 id must be an AmbigNQ dev id"
    return Eval300(ids, qs)


@dataclass(frozen=True)
class Gold:
    id: str
    source: str
    question: str
    title: str
    text: str
    answers: tuple[str, ...]


def nq_gold(data: Path) -> Iterator[Gold]:
    with gzip.open(data / "corpus/nq-open-test-gold.jsonl.gz", "rt") as f:
        for i, line in enumerate(f):
            r = json.loads(line)
            ctx = next((c for c in r["ctxs"] if c.get("isgold")), r["ctxs"][0] if r["ctxs"] else None)
            if ctx is None:
                continue
            yield Gold(f"nq-gold:{i}", "nq-gold", r["question"], ctx["title"], ctx["text"], tuple(r["answers"]))


def squad_train(data: Path) -> Iterator[Gold]:
    d = json.load(gzip.open(data / "squad/train-v1.1.json.gz", "rt"))
    i = 0
    for art in d["data"]:
        title = art["title"].replace("_", " ")
        for p in art["paragraphs"]:
            for qa in p["qas"]:
                yield Gold(f"squad:{i}", "squad", qa["question"], title, p["context"], (qa["answers"][0]["text"],))
                i += 1


def qa_feedback(data: Path) -> Iterator[Gold]:
    rows = json.loads((data / "corpus/qa-feedback-ambignq-train500.json").read_text())
    import ast

    for i, r in enumerate(rows):
        passages = r["passages"]
        if isinstance(passages, str):
            passages = ast.literal_eval(passages)
        for j, p in enumerate(passages):
            content: str = p["content"]
            title = p.get("wikipage") or content.split("\n", 1)[0]
            yield Gold(f"qa-feedback:{i}.{j}", "qa-feedback", r["question"], title, content, ())


def is_heldout(example_id: str, fraction: float) -> bool:
    h = int(hashlib.sha256(example_id.encode()).hexdigest()[:8], 16)
    return h / 0xFFFFFFFF < fraction


def read_split(name: str) -> frozenset[str]:
    path = SPLITS_DIR / f"{name}-heldout.txt"
    if not path.exists():
        raise FileNotFoundError(f"{path} missing: run `python -m ambigqa_train.data splits`")
    return frozenset(path.read_text().split())


def write_splits(data: Path, fraction: float = 0.02) -> None:
    SPLITS_DIR.mkdir(parents=True, exist_ok=True)
    sets = {"reranker": [*nq_gold(data), *squad_train(data), *qa_feedback(data)],
            "spanseqgen1": [*nq_gold(data), *squad_train(data)]}
    for name, golds in sets.items():
        # Held out by question, so a question's passages never straddle the split.
        ids = sorted({g.id for g in golds if is_heldout(g.source + ":" + norm_question(g.question), fraction)})
        (SPLITS_DIR / f"{name}-heldout.txt").write_text("\n".join(ids) + "\n")
        print(f"splits: {name}-heldout.txt {len(ids)} ids")


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"data: {path} {len(rows)} examples")


def build(data: Path, out: Path, seed: int = 13, squad_limit: int | None = None) -> dict[str, int]:
    ev = load_eval300(data)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    excluded = 0
    squad = list(squad_train(data))[: squad_limit] if squad_limit else list(squad_train(data))
    golds: list[Gold] = []
    for g in [*nq_gold(data), *squad, *qa_feedback(data)]:
        if ev.excludes(None, g.question):
            excluded += 1
            continue
        golds.append(g)
    print(f"data: {excluded} examples dropped as eval-300 questions")

    held = read_split("reranker")
    rr: dict[str, list[dict[str, Any]]] = {"train": [], "heldout": []}
    by_source: dict[str, list[Gold]] = {}
    for g in golds:
        by_source.setdefault(g.source, []).append(g)
    for src, gs in by_source.items():
        for g in gs:
            part = "heldout" if g.id in held else "train"
            rr[part].append({"id": g.id, "source": src, "question": g.question, "title": g.title, "text": g.text, "label": 1})
            neg = gs[rng.randrange(len(gs))]
            if norm_question(neg.question) != norm_question(g.question) and neg.text != g.text:
                rr[part].append({"id": g.id + ":neg", "source": src, "question": g.question, "title": neg.title,
                                 "text": neg.text, "label": 0, "neg": "random"})
    for part, rows in rr.items():
        rng.shuffle(rows)
        _write(out / f"reranker-{part}.jsonl", rows)
        counts[f"reranker-{part}"] = len(rows)

    held = read_split("spanseqgen1")
    s1: dict[str, list[dict[str, Any]]] = {"train": [], "heldout": []}
    for g in golds:
        if g.source == "qa-feedback" or not g.answers:
            continue
        part = "heldout" if g.id in held else "train"
        s1[part].append({"id": g.id, "source": g.source, "input": g.question + SEP + f"{g.title}: {g.text}",
                         "target": g.answers[0], "answers": list(g.answers)})
    for part, rows in s1.items():
        rng.shuffle(rows)
        _write(out / f"spanseqgen1-{part}.jsonl", rows)
        counts[f"spanseqgen1-{part}"] = len(rows)
    return counts


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.data")
    ap.add_argument("command", choices=["build", "splits"])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--out", type=Path, default=Path("data/train"))
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args(argv)
    if a.command == "splits":
        write_splits(a.data)
    else:
        counts = build(a.data, a.out, a.seed)
        print(json.dumps(counts))


if __name__ == "__main__":
    main()
