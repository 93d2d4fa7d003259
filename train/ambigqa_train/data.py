"""Training sets from ../shared/data, never from an eval-300 question.

`python -m ambigqa_train.data build --data ../shared/data --out data/train` writes JSON Lines:
- reranker-{train,heldout}.jsonl: {id, source, question, title, text, label, answers}
  positives: NQ-open test gold paragraphs, SQuAD train question + paragraph, qa-feedback
  passages; negatives: other questions' positives from the same source (`neg: "random"`).
  `ambigqa data build` then mines BM25 hard negatives over the eval-300 corpus into
  reranker-groups-{train,heldout}.jsonl (src/training/hard-negatives.ts).
- spanseqgen1-{train,heldout}.jsonl: {id, source, input, target}: `question [SEP] title: text`
  → one answer, from SQuAD train and NQ-open gold paragraphs.
- spanseqgen2-{train,heldout}.jsonl: {id, qid, source, input, titles, target, answers}: `question [SEP]
  title: text [SEP] ...` (at most 3 passages of at most 100 words, those holding an answer
  first) → every answer's first alias joined by ` <SEP> ` in annotation order; `answers` keeps
  the aliases. Sources: ASQA dev-train ids (knowledge snippets), qa-feedback's 500 AmbigNQ
  train questions (their passages, AmbigNQ answers), the 200 ASQA train records (pair contexts
  and knowledge), and any other AmbigNQ train question with passages in ../shared/data (none:
  dropped and counted). A question none of whose passages holds an answer is dropped.
- reader2-train.jsonl (`mix`, once `ambigqa data build` has mined the hard negatives): stage 2
  x 8, QD, and distractor reading (a reranker group's gold passage among two of its BM25 hard
  negatives → its answer); reading-heldout.jsonl: the same from the held-out groups.
- qd-{train,heldout}.jsonl: {id, qid, source, input, target}: `prompt question [SEP] target
  answer [SEP] other answers joined by " <SEP> " [SEP] title: text ...` → the disambiguated
  question (first `|` alternative), from AmbigNQ train multipleQAs and the ASQA qa_pairs of the
  training ids; passages where the question has some (else the input ends after the answers).

Examples are identified as `<source>:<index>` (stage 2: `<source>:<AmbigNQ id>`, QD:
`<source>:<AmbigNQ id>:<annotation>.<pair>`); the held-out ids are the lists in
train/splits/*-heldout.txt (written once by `splits`, then kept in the repo). Stage 2 and QD are
held out by the prompt question alone, so a question is on the same side in both sets and
whatever its source.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import html
import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SPLITS_DIR = Path(__file__).resolve().parents[1] / "splits"
SEP = " [SEP] "
ANSWER_SEP = " <SEP> "  # between answers in targets (and in QD inputs); the tokenizer's added token
PASSAGE_WORDS = 100  # a passage is cropped to this many words (DPR's psgs_w100 unit)
MAX_PASSAGES = 3  # per stage-2 / QD input: the model reads 256-384 word pieces
AMBIG_HELDOUT = 0.04  # stage 2 and QD: share of questions held out
MAX_ALIAS_WORDS = 64  # longer "answers" are annotation debris (one AmbigNQ answer is a 953-word table)


def norm_question(q: str) -> str:
    return re.sub(r"\W+", " ", q.lower()).strip()


@dataclass(frozen=True)
class Eval300:
    ids: frozenset[str]
    questions: frozenset[str]
    # Their disambiguated questions (AmbigNQ dev_light and ASQA dev qa_pairs, every `|` alternative).
    disambiguated: frozenset[str] = frozenset()

    def excludes(self, qid: str | None, question: str) -> bool:
        return (qid is not None and qid in self.ids) or norm_question(question) in self.questions

    def excludes_related(self, qid: str | None, *questions: str) -> bool:
        """`excludes`, and also any of `questions` equal to an eval-300 prompt or disambiguated question."""
        if qid is not None and qid in self.ids:
            return True
        return any(norm_question(q) in self.questions or norm_question(q) in self.disambiguated for q in questions)


# The project's second evaluation set (AmbigNQ dev ids outside eval-300, read from ASQA dev):
# as held out from every training set as eval-300 is. Until 2026-11-27 it was not: `data build`
# drew 162 of its 324 questions into SpanSeqGen's stage 2 and 282 into QD through ASQA dev-train.
SECOND_SET = Path(__file__).resolve().parents[1] / "splits" / "asqa-second.txt"


def load_eval300(data: Path, second: Path | None = SECOND_SET) -> Eval300:
    """eval-300's questions, and the second set's (`second`, when given and present): what no
    training set may hold."""
    ids = frozenset(x.strip() for x in (data / "splits/eval-300.txt").read_text().split() if x.strip())
    dev = json.loads((data / "ambignq/dev_light.json").read_text())
    qs = frozenset(norm_question(r["question"]) for r in dev if r["id"] in ids)
    assert len(qs) == len(ids), "every eval-300 id must be an AmbigNQ dev id"
    if second is not None and second.exists():
        ids |= frozenset(x.strip() for x in second.read_text().split() if x.strip())
        qs = frozenset(norm_question(r["question"]) for r in dev if r["id"] in ids)
    dq = {norm_question(alt) for r in dev if r["id"] in ids for a in r["annotations"]
          if a["type"] == "multipleQAs" for p in a["qaPairs"] for alt in p["question"].split("|")}
    asqa = data / "asqa/asqa_dev.json"
    if asqa.exists():
        dq |= {norm_question(alt) for r in json.loads(asqa.read_text()) if r["id"] in ids
               for p in r["qa_pairs"] for alt in p["question"].split("|")}
    return Eval300(ids, qs, frozenset(dq - {""}))


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


# --- Stage 2 (answer sets) and QD (question disambiguation): AmbigNQ-style questions ---------

Answers = list[list[str]]  # per answer, its aliases (the first is the target's)


@dataclass(frozen=True)
class Passage:
    title: str
    text: str

    def render(self) -> str:
        return f"{self.title}: {self.text}" if self.title else self.text


def reader_input(question: str, passages: Iterable[Passage]) -> str:
    """`question [SEP] title: text [SEP] ...`: what SpanSeqGen reads. reader/reader-input.ts writes
    the same bytes at serving time; test/reader-input.test.ts compares the two."""
    return SEP.join([question, *(p.render() for p in passages)])


@dataclass
class Pair:
    """One disambiguation: the disambiguated question, its answer's aliases, its own context."""
    question: str
    answer: list[str]
    context: Passage | None = None


@dataclass
class Ambig:
    """A prompt question with its answer set, passages and disambiguations (per annotation)."""
    qid: str
    source: str
    question: str
    answers: Answers
    passages: list[Passage]
    annotations: list[list[Pair]] = field(default_factory=list)


def first_alt(question: str) -> str:
    """AmbigNQ/ASQA disambiguated questions may list rephrasings as `a|b`: the first."""
    return question.split("|")[0].strip()


def clean_aliases(aliases: list[str]) -> list[str]:
    """Aliases without blanks and without debris longer than MAX_ALIAS_WORDS words."""
    return [" ".join(a.split()) for a in aliases if a and a.strip() and len(a.split()) <= MAX_ALIAS_WORDS]


def dedupe_answers(answers: Answers) -> Answers:
    """Clean aliases; drop answers left without any and answers whose first alias repeats an
    earlier one (normalised)."""
    out: Answers = []
    seen: set[str] = set()
    for aliases in answers:
        aliases = clean_aliases(aliases)
        if not aliases or norm_question(aliases[0]) in seen:
            continue
        seen.add(norm_question(aliases[0]))
        out.append(aliases)
    return out


def _mentions(words: list[str], answers: Answers) -> list[tuple[int, int, int]]:
    """(answer index, first word, last word) of every alias occurrence, on normalised tokens."""
    toks: list[str] = []
    owner: list[int] = []
    for i, w in enumerate(words):
        for t in norm_question(w).split():
            toks.append(t)
            owner.append(i)
    joined = " " + " ".join(toks) + " "
    found: list[tuple[int, int, int]] = []
    for a, aliases in enumerate(answers):
        for alias in aliases:
            at = norm_question(alias).split()
            if not at or " " + " ".join(at) + " " not in joined:
                continue
            n = len(at)
            found += [(a, owner[i], owner[i + n - 1]) for i in range(len(toks) - n + 1) if toks[i : i + n] == at]
    return found


SHORT_WORDS = 64


def crop(p: Passage, answers: Answers, words: int = PASSAGE_WORDS) -> tuple[Passage, frozenset[int]]:
    """The passage cut to at most `words` words: the window holding the most answers (else its
    start); with the indices of the answers the result contains."""
    ws = p.text.split()
    men = _mentions(ws, answers)
    if len(ws) <= words:
        return Passage(p.title, " ".join(ws)), frozenset(a for a, _, _ in men)
    best, got = 0, frozenset(a for a, s, e in men if e < words)
    for _, s0, _ in men:
        s = min(max(0, s0 - words // 5), len(ws) - words)
        inside = frozenset(a for a, s1, e1 in men if s1 >= s and e1 < s + words)
        if len(inside) > len(got):
            best, got = s, inside
    return Passage(p.title, " ".join(ws[best : best + words])), got


def select_passages(passages: list[Passage], answers: Answers, first: int | None = None,
                    k: int = MAX_PASSAGES) -> tuple[list[Passage], frozenset[int]]:
    """At most k cropped passages, greedily by answers not yet covered (with `first`, a passage
    holding that answer leads), then the rest in order. Returns them and the answers covered."""
    cands = [crop(p, answers) for p in passages]
    chosen: list[int] = []
    covered: frozenset[int] = frozenset()
    if first is not None:
        lead = [i for i, (_, a) in enumerate(cands) if first in a]
        if lead:
            i = max(lead, key=lambda j: (len(cands[j][1]), -j))
            chosen.append(i)
            covered = cands[i][1]
    while len(chosen) < k:
        rest = [i for i in range(len(cands)) if i not in chosen]
        if not rest:
            break
        i = max(rest, key=lambda j: (len(cands[j][1] - covered), len(cands[j][1]), -j))
        chosen.append(i)
        covered |= cands[i][1]
    return [cands[i][0] for i in chosen], covered


def group_snippets(snippets: list[Passage], words: int = PASSAGE_WORDS) -> list[Passage]:
    """Short evidence sentences (ASQA knowledge) joined per Wikipedia page into passages of at
    most `words` words, pages in order of first appearance; exact repeats dropped."""
    pages: dict[str, list[str]] = {}
    for s in snippets:
        text = " ".join(s.text.split())
        if text and text not in pages.setdefault(s.title, []):
            pages[s.title].append(text)
    out: list[Passage] = []
    for title, texts in pages.items():
        cur: list[str] = []
        for t in texts:
            if cur and len(" ".join([*cur, t]).split()) > words:
                out.append(Passage(title, " ".join(cur)))
                cur = []
            cur.append(t)
        if cur:
            out.append(Passage(title, " ".join(cur)))
    return out


def _knowledge(record: dict[str, Any]) -> list[Passage]:
    return [Passage(html.unescape(k.get("wikipage") or ""), k["content"])
            for a in record.get("annotations", []) for k in a.get("knowledge", []) if k.get("content")]


def _asqa_pairs(record: dict[str, Any]) -> list[Pair]:
    pairs = []
    for p in record["qa_pairs"]:
        ctx = p.get("context")
        own = Passage(html.unescape(p.get("wikipage") or ""), ctx) if ctx and ctx != "No context provided" else None
        pairs.append(Pair(first_alt(p["question"]), list(p["short_answers"]), own))
    return pairs


def asqa_dev_train(data: Path) -> list[Ambig]:
    """ASQA dev records whose ids are in splits/asqa-dev-train.txt; passages: their knowledge
    snippets grouped per page (ASQA dev has no pair contexts; `wikipages` are titles only)."""
    ids = set((data / "splits/asqa-dev-train.txt").read_text().split())
    out = []
    for r in json.loads((data / "asqa/asqa_dev.json").read_text()):
        if r["id"] in ids:
            pairs = _asqa_pairs(r)
            out.append(Ambig(r["id"], "asqa-dev", r["question"], [p.answer for p in pairs],
                             group_snippets(_knowledge(r)), [pairs]))
    return out


def asqa_train(data: Path) -> list[Ambig]:
    """The 200 ASQA train records (AmbigNQ train ids); passages: pair contexts, then knowledge."""
    out = []
    with (data / "asqa/asqa_train_sample200.jsonl").open() as f:
        for line in f:
            r = json.loads(line)
            pairs = _asqa_pairs(r)
            own = [p.context for p in pairs if p.context is not None]
            out.append(Ambig(r["sample_id"], "asqa-train", r["ambiguous_question"], [p.answer for p in pairs],
                             group_snippets(own + _knowledge(r)), [pairs]))
    return out


def ambignq_answers(record: dict[str, Any]) -> Answers:
    """The answer set of an AmbigNQ light record: of its annotations the one with the most
    answers (multipleQAs → every pair's answer, singleAnswer → one), the first on ties."""
    best: Answers = []
    for a in record["annotations"]:
        ans = [list(p["answer"]) for p in a["qaPairs"]] if a["type"] == "multipleQAs" else [list(a["answer"])]
        if len(ans) > len(best):
            best = ans
    return best


def ambignq_train(data: Path) -> list[Ambig]:
    """AmbigNQ train_light, no passages yet (see `attach_passages`)."""
    out = []
    for r in json.loads((data / "ambignq/train_light.json").read_text()):
        anns = [[Pair(first_alt(p["question"]), list(p["answer"])) for p in a["qaPairs"]]
                for a in r["annotations"] if a["type"] == "multipleQAs"]
        out.append(Ambig(r["id"], "ambignq-train", r["question"], ambignq_answers(r), [], anns))
    return out


def qa_feedback_ambig(data: Path, train: list[Ambig]) -> tuple[list[Ambig], int]:
    """qa-feedback's 500 AmbigNQ train questions with their passages. The file has no ids and
    only long-form answers: id and answer set come from train_light by normalised question.
    Returns the records and how many questions train_light lacks."""
    import ast

    by_q = {norm_question(t.question): t for t in train}
    out, missing = [], 0
    for r in json.loads((data / "corpus/qa-feedback-ambignq-train500.json").read_text()):
        t = by_q.get(norm_question(r["question"]))
        if t is None:
            missing += 1
            continue
        raw = r["passages"]
        if isinstance(raw, str):
            raw = ast.literal_eval(raw)
        ps = []
        for p in raw:
            title = html.unescape(p.get("wikipage") or "")
            head, _, body = p["content"].partition("\n")
            # Most contents start with "Title\n\n"; drop that line, the title is rendered anyway.
            text = body if head.strip() == title and body.strip() else p["content"]
            ps.append(Passage(title, text))
        out.append(Ambig(t.qid, "qa-feedback", r["question"], t.answers, ps, t.annotations))
    return out, missing


@dataclass
class AmbigSources:
    asqa_dev: list[Ambig]
    qa_feedback: list[Ambig]
    asqa_train: list[Ambig]
    ambignq_train: list[Ambig]
    qa_feedback_missing: int
    # Passages for an AmbigNQ train question from any file that covers it, by normalised question.
    pool: dict[str, list[Passage]]


def load_ambig(data: Path) -> AmbigSources:
    train = ambignq_train(data)
    qf, missing = qa_feedback_ambig(data, train)
    at = asqa_train(data)
    pool: dict[str, list[Passage]] = {}
    for a in [*qf, *at]:
        pool.setdefault(norm_question(a.question), []).extend(a.passages)
    return AmbigSources(asqa_dev_train(data), qf, at, train, missing, pool)


def spanseqgen2_examples(src: AmbigSources, ev: Eval300) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Stage-2 rows (no split yet) and counts: kept per source and drops per reason."""
    rows: list[dict[str, Any]] = []
    stats: dict[str, int] = {}

    def bump(key: str, n: int = 1) -> None:
        stats[key] = stats.get(key, 0) + n

    covered = {norm_question(a.question) for a in [*src.qa_feedback, *src.asqa_train]}
    rest = []
    for a in src.ambignq_train:
        if norm_question(a.question) in covered:
            bump("ambignq-train:in-qa-feedback-or-asqa-train")
        else:
            rest.append(Ambig(a.qid, a.source, a.question, a.answers, src.pool.get(norm_question(a.question), []), a.annotations))
    for a in [*src.asqa_dev, *src.qa_feedback, *src.asqa_train, *rest]:
        answers = dedupe_answers(a.answers)
        if ev.excludes_related(a.qid, a.question):
            bump(f"{a.source}:dropped-eval300")
            continue
        if not answers:
            bump(f"{a.source}:dropped-no-answers")
            continue
        if not a.passages:
            bump(f"{a.source}:dropped-no-passages")
            continue
        passages, seen = select_passages(a.passages, answers)
        if not seen:
            bump(f"{a.source}:dropped-no-answer-in-passages")
            continue
        bump(a.source)
        bump(f"{a.source}:answers", len(answers))
        bump(f"{a.source}:duplicate-answers-merged", len(a.answers) - len(answers))
        bump(f"{a.source}:answers-not-in-input", len(answers) - len(seen))
        rows.append({"id": f"{a.source}:{a.qid}", "qid": a.qid, "source": a.source, "question": a.question,
                     "input": reader_input(a.question, passages), "titles": [p.title for p in passages],
                     "target": ANSWER_SEP.join(x[0] for x in answers), "answers": answers})
    return rows, stats


def qd_input(prompt: str, answer: str, others: list[str], passages: list[Passage]) -> str:
    """`prompt [SEP] answer [SEP] other answers joined by " <SEP> " [SEP] title: text ...`; the
    other-answers slot stays (empty) when passages follow, trailing empty slots are dropped.
    reader/reader-input.ts writes the same bytes (test/reader-input.test.ts)."""
    parts = [prompt, answer, ANSWER_SEP.join(others), *(p.render() for p in passages)]
    while parts and not parts[-1].strip():
        parts.pop()
    return " ".join(SEP.join(parts).split())


def qd_examples(src: AmbigSources, ev: Eval300) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """QD rows (no split yet) and counts. One row per disambiguation; a (prompt, disambiguated
    question) pair seen from an earlier source (ASQA dev, ASQA train, then AmbigNQ train) is
    skipped."""
    rows: list[dict[str, Any]] = []
    stats: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()

    def bump(key: str, n: int = 1) -> None:
        stats[key] = stats.get(key, 0) + n

    train = [Ambig(a.qid, a.source, a.question, a.answers, src.pool.get(norm_question(a.question), []), a.annotations)
             for a in src.ambignq_train]
    for a in [*src.asqa_dev, *src.asqa_train, *train]:
        for ai, pairs in enumerate(a.annotations):
            answers = [clean_aliases(p.answer) for p in pairs]
            for pi, p in enumerate(pairs):
                key = (norm_question(a.question), norm_question(p.question))
                if not p.question or not answers[pi]:
                    bump(f"{a.source}:dropped-empty")
                    continue
                if key in seen:
                    bump(f"{a.source}:dropped-duplicate")
                    continue
                seen.add(key)
                if ev.excludes_related(a.qid, a.question, p.question):
                    bump(f"{a.source}:dropped-eval300")
                    continue
                target = answers[pi][0]
                others: list[str] = []
                known = {norm_question(target)}
                for o in answers:
                    if o and norm_question(o[0]) not in known:
                        known.add(norm_question(o[0]))
                        others.append(o[0])
                cands = a.passages
                if p.context is not None:  # the pair's own paragraph (ASQA train) leads
                    own = " ".join(p.context.text.split())
                    cands = [p.context, *(c for c in a.passages if own not in c.text)]
                passages, _ = select_passages(cands, answers, first=pi) if cands else ([], frozenset())
                bump(a.source)
                bump(f"{a.source}:with-passages", 1 if passages else 0)
                bump(f"{a.source}:target-equals-prompt", 1 if key[0] == key[1] else 0)
                rows.append({"id": f"{a.source}:{a.qid}:{ai}.{pi}", "qid": a.qid, "source": a.source,
                             "question": a.question,
                             "input": qd_input(a.question, target, others, passages),
                             "target": p.question, "answer": target})
    return rows, stats


def ambig_heldout(question: str) -> bool:
    """Stage 2 and QD: held out by the normalised prompt question only (no source prefix)."""
    return is_heldout(norm_question(question), AMBIG_HELDOUT)


SETS = ("reranker", "spanseqgen1", "spanseqgen2", "qd")


def write_splits(data: Path, fraction: float = 0.02, names: tuple[str, ...] = SETS) -> None:
    SPLITS_DIR.mkdir(parents=True, exist_ok=True)
    if {"reranker", "spanseqgen1"} & set(names):
        sets = {"reranker": [*nq_gold(data), *squad_train(data), *qa_feedback(data)],
                "spanseqgen1": [*nq_gold(data), *squad_train(data)]}
        for name, golds in sets.items():
            if name not in names:
                continue
            # Held out by question, so a question's passages never straddle the split.
            ids = sorted({g.id for g in golds if is_heldout(g.source + ":" + norm_question(g.question), fraction)})
            (SPLITS_DIR / f"{name}-heldout.txt").write_text("\n".join(ids) + "\n")
            print(f"splits: {name}-heldout.txt {len(ids)} ids")
    if {"spanseqgen2", "qd"} & set(names):
        src, ev = load_ambig(data), load_eval300(data)
        for name, make in (("spanseqgen2", spanseqgen2_examples), ("qd", qd_examples)):
            if name not in names:
                continue
            rows, _ = make(src, ev)
            ids = sorted(r["id"] for r in rows if ambig_heldout(r["question"]))
            (SPLITS_DIR / f"{name}-heldout.txt").write_text("\n".join(ids) + "\n")
            qs = len({norm_question(r["question"]) for r in rows if r["id"] in set(ids)})
            print(f"splits: {name}-heldout.txt {len(ids)} of {len(rows)} ids ({len(ids) / len(rows):.1%}), {qs} questions")


def write_tune_split(data: Path) -> None:
    """splits/reader-tune.txt: qa-feedback's AmbigNQ train questions, where the extractive
    reader's settings (passages read, answer-set margin and floor) are chosen. The reader never
    trains on them and the eval-300 store holds their passages, so settings never see eval-300."""
    records, _ = qa_feedback_ambig(data, ambignq_train(data))
    ids = sorted({r.qid for r in records})
    (SPLITS_DIR / "reader-tune.txt").write_text("\n".join(ids) + "\n")
    print(f"splits: reader-tune.txt {len(ids)} AmbigNQ train ids")


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"data: {path} {len(rows)} examples")


def build(data: Path, out: Path, seed: int = 13, squad_limit: int | None = None,
          sets: tuple[str, ...] = SETS) -> dict[str, int]:
    ev = load_eval300(data)
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    if {"reranker", "spanseqgen1"} & set(sets):
        counts |= build_passage_sets(data, out, ev, seed, squad_limit)
    if {"spanseqgen2", "qd"} & set(sets):
        counts |= build_ambig_sets(data, out, ev, seed, tuple(x for x in sets if x in ("spanseqgen2", "qd")))
    return counts


def build_passage_sets(data: Path, out: Path, ev: Eval300, seed: int, squad_limit: int | None) -> dict[str, int]:
    """Reranker pairs and SpanSeqGen stage 1 (both always, from one pass)."""
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
            rr[part].append({"id": g.id, "source": src, "question": g.question, "title": g.title, "text": g.text, "label": 1,
                             "answers": list(g.answers)})
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
        # The same examples with the passage cut to SHORT_WORDS words around the answer: a copy
        # skill learnt on short inputs is about twice cheaper per step on two cores.
        short = []
        for r in rows:
            title, text = r["input"].split(SEP, 1)[1].split(": ", 1)
            cut, got = crop(Passage(title, text), [r["answers"]], SHORT_WORDS)
            if got:
                short.append({**r, "input": r["input"].split(SEP, 1)[0] + SEP + f"{cut.title}: {cut.text}"})
        _write(out / f"spanseqgen1-short-{part}.jsonl", short)
        counts[f"spanseqgen1-short-{part}"] = len(short)
    return counts


def build_ambig_sets(data: Path, out: Path, ev: Eval300, seed: int,
                     sets: tuple[str, ...] = ("spanseqgen2", "qd")) -> dict[str, int]:
    """SpanSeqGen stage 2 and QD; prints counts per source and drops per reason."""
    src = load_ambig(data)
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    print(f"data: qa-feedback questions not found in AmbigNQ train_light: {src.qa_feedback_missing}")
    for name, make in (("spanseqgen2", spanseqgen2_examples), ("qd", qd_examples)):
        if name not in sets:
            continue
        rows, stats = make(src, ev)
        held = read_split(name)
        parts: dict[str, list[dict[str, Any]]] = {"train": [], "heldout": []}
        for r in rows:
            parts["heldout" if r["id"] in held else "train"].append(r)
        for part, prs in parts.items():
            rng.shuffle(prs)
            _write(out / f"{name}-{part}.jsonl", prs)
            counts[f"{name}-{part}"] = len(prs)
            for r in prs:
                key = f"{name}-{part}:{r['source']}"
                counts[key] = counts.get(key, 0) + 1
        print(f"data: {name} " + json.dumps(dict(sorted(stats.items()))))
    return counts


READER2_STAGE2_REPEAT = 8
READING_DISTRACTORS = 2  # hard negatives beside the gold passage in a distractor reading example


def distractor_reading(groups: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """Reading among distractors, as the reader reads at serving time (the retriever's top
    passages, most of them without the answer): the gold passage, cropped to PASSAGE_WORDS words
    around its answer, first or second among READING_DISTRACTORS BM25 hard negatives (so it
    survives a 384-token budget), → its first answer. Rows from reranker-groups-*.jsonl."""
    rows = []
    for g in groups:
        gold, got = crop(Passage(g["positive"]["title"], g["positive"]["text"]), [g["answers"]])
        if not got:
            continue
        passages = [Passage(n["title"], n["text"]) for n in g["negatives"][:READING_DISTRACTORS]]
        passages.insert(rng.randrange(2), gold)
        rows.append({"id": f"reading:{g['id']}", "source": "reading-" + g["source"], "question": g["question"],
                     "input": reader_input(g["question"], passages), "target": g["answers"][0],
                     "answers": list(g["answers"])})
    return rows


def write_reader2(out: Path, seed: int = 13) -> dict[str, int]:
    """The stage-2 mix. One model serves answer sets, reading and disambiguation (one ~50 MB
    int8 model to ship, not two): stage 2 repeated READER2_STAGE2_REPEAT times (it is 16x
    smaller than QD), distractor reading from the reranker's hard-negative groups (written by
    `ambigqa data build` after this package's `build`: BM25 is TypeScript), and QD."""
    rng = random.Random(seed)
    groups = out / "reranker-groups-train.jsonl"
    if not groups.exists():
        raise FileNotFoundError(f"{groups} missing: run `npx ambigqa data build` (it mines the hard negatives)")
    stage2 = _read(out / "spanseqgen2-train.jsonl")
    reading = distractor_reading(_read(groups), rng)
    rows = [r for _ in range(READER2_STAGE2_REPEAT) for r in stage2] + reading + _read(out / "qd-train.jsonl")
    rng.shuffle(rows)
    _write(out / "reader2-train.jsonl", rows)
    counts = {"reader2-train": len(rows), "reader2-train:reading": len(reading)}
    held = out / "reranker-groups-heldout.jsonl"
    if held.exists():  # bench/reading's distractor set
        heldout = distractor_reading(_read(held), rng)
        _write(out / "reading-heldout.jsonl", heldout)
        counts["reading-heldout"] = len(heldout)
    return counts


def _read(path: Path) -> list[dict[str, Any]]:
    with path.open() as f:
        return [json.loads(line) for line in f]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.data")
    ap.add_argument("command", choices=["build", "splits", "mix", "tune-split"],
                    help="build: the sets; mix: reader2-train.jsonl once the hard negatives exist; splits: held-out lists; "
                         "tune-split: the extractive reader's tuning questions")
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--out", type=Path, default=Path("data/train"))
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--only", nargs="+", choices=SETS, default=list(SETS),
                    help="the sets to build or to write held-out lists for (default: all)")
    a = ap.parse_args(argv)
    if a.command == "splits":
        write_splits(a.data, names=tuple(a.only))
    elif a.command == "tune-split":
        write_tune_split(a.data)
    elif a.command == "mix":
        print(json.dumps(write_reader2(a.out, a.seed)))
    else:
        counts = build(a.data, a.out, a.seed, sets=tuple(a.only))
        print(json.dumps(counts))


if __name__ == "__main__":
    main()
