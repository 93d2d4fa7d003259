"""The extractive reader (DPR's reader, the AmbigQA paper's "Thresholding + QD" baseline): a BERT
encoder reads `[CLS] question [SEP] title: text [SEP]` one passage at a time and gives

- `relevance_logits` [batch]: the passage selection score, from the [CLS] state;
- `start_logits`, `end_logits` [batch, tokens]: span scores over the passage's tokens.

Training groups are one gold passage and its hard negatives. The selection loss is a softmax over
the group; the span loss normalises start (and end) scores over every passage token of the
group at once ("shared normalisation"), so that a span's score says how it compares with spans of
the other passages, not only with its own passage's: the server ranks spans across 10-100
passages, and a head trained on gold passages alone ranks them badly (issue 15's measurement).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import BertConfig, BertModel, BertPreTrainedModel, PreTrainedTokenizerFast

from .data import Passage, crop


class ExtractiveReader(BertPreTrainedModel):
    config_class = BertConfig

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.qa_classifier = nn.Linear(config.hidden_size, 1)
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        states = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
        start, end = self.qa_outputs(states).unbind(-1)
        return start, end, self.qa_classifier(states[:, 0]).squeeze(-1)


def from_encoder(bert: BertModel, seed: int) -> ExtractiveReader:
    """The reader on a pretrained encoder's weights; the two heads start fresh (seeded)."""
    torch.manual_seed(seed)
    model = ExtractiveReader(bert.config)
    model.bert.load_state_dict(bert.state_dict())
    return model


def passage_text(title: str, text: str) -> str:
    """The second segment, as every reader input writes a passage (reader/reader-input.ts)."""
    return f"{title}: {text}"


@dataclass
class Encoded:
    features: dict[str, torch.Tensor]
    # Passage tokens a span may use: the second segment, its closing [SEP] excluded.
    span_mask: torch.Tensor
    # Tokens that begin / end a whole word (no span starts or ends inside a word).
    word_start: torch.Tensor
    word_end: torch.Tensor
    offsets: list[list[tuple[int, int]]]
    texts: list[str]


def encode(tok: PreTrainedTokenizerFast, questions: list[str], passages: list[str], max_len: int) -> Encoded:
    enc = tok(questions, passages, max_length=max_len, truncation="only_second", padding=True,
              return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping").tolist()
    n, length = enc["input_ids"].shape
    span_mask = torch.zeros(n, length, dtype=torch.bool)
    word_start = torch.zeros(n, length, dtype=torch.bool)
    word_end = torch.zeros(n, length, dtype=torch.bool)
    for i in range(n):
        seq = enc.sequence_ids(i)
        words = enc.word_ids(i)
        for t in range(length):
            if seq[t] != 1:
                continue
            span_mask[i, t] = True
            word_start[i, t] = t == 0 or seq[t - 1] != 1 or words[t - 1] != words[t]
            word_end[i, t] = t + 1 >= length or seq[t + 1] != 1 or words[t + 1] != words[t]
    return Encoded(dict(enc), span_mask, word_start, word_end, [[(a, b) for a, b in o] for o in offsets], passages)


def answer_token_spans(text: str, offsets: list[tuple[int, int]], mask: torch.Tensor, answers: list[str]) -> list[tuple[int, int]]:
    """Token spans of every case-insensitive, whole-word occurrence of any alias in the passage."""
    spans: set[tuple[int, int]] = set()
    for alias in answers:
        alias = alias.strip()
        if not alias:
            continue
        for m in re.finditer(r"(?<!\w)" + re.escape(alias) + r"(?!\w)", text, re.IGNORECASE):
            toks = [t for t, (a, b) in enumerate(offsets) if mask[t] and b > a and a < m.end() and b > m.start()]
            if toks:
                spans.add((toks[0], toks[-1]))
    return sorted(spans)


def group_passages(group: dict[str, Any], negatives: int, words: int) -> tuple[list[str], bool]:
    """The gold passage cropped around its answer, then its first `negatives` hard negatives, each
    at most `words` words (serving reads 100-word DPR passages); and whether the crop kept an answer."""
    gold, got = crop(Passage(group["positive"]["title"], group["positive"]["text"]), [group["answers"]], words)
    texts = [passage_text(gold.title, gold.text)]
    for n in group["negatives"][:negatives]:
        neg, _ = crop(Passage(n["title"], n["text"]), [group["answers"]], words)
        texts.append(passage_text(neg.title, neg.text))
    return texts, bool(got)


NEG = -1e4


def group_loss(model: ExtractiveReader, tok: PreTrainedTokenizerFast, groups: list[dict[str, Any]], negatives: int, max_len: int, words: int) -> torch.Tensor:
    """Selection cross-entropy over each group plus the shared-normalised span loss of its gold spans."""
    texts = [group_passages(g, negatives, words)[0] for g in groups]
    width = min(len(t) for t in texts)
    questions = [g["question"] for g, t in zip(groups, texts) for _ in t[:width]]
    enc = encode(tok, questions, [p for t in texts for p in t[:width]], max_len)
    start, end, relevance = model(**enc.features)
    b, length = len(groups), start.shape[1]
    selection = nn.functional.cross_entropy(relevance.view(b, width), torch.zeros(b, dtype=torch.long))
    start = start.masked_fill(~enc.span_mask, NEG).view(b, width * length).log_softmax(-1)
    end = end.masked_fill(~enc.span_mask, NEG).view(b, width * length).log_softmax(-1)
    span_losses = []
    for g, group in enumerate(groups):
        row = g * width  # the gold passage is the first of its group
        spans = answer_token_spans(enc.texts[row], enc.offsets[row], enc.span_mask[row], group["answers"])
        if not spans:
            continue
        s = torch.tensor([a for a, _ in spans])
        e = torch.tensor([z for _, z in spans])
        span_losses.append(-(start[g, s].logsumexp(0) + end[g, e].logsumexp(0)))
    span = torch.stack(span_losses).mean() if span_losses else start.new_zeros(())
    return selection + span


@dataclass
class Span:
    passage: int
    text: str
    score: float


def best_spans(enc: Encoded, start: torch.Tensor, end: torch.Tensor, relevance: torch.Tensor, max_tokens: int = 10, top: int = 5) -> list[Span]:
    """The best whole-word spans over the passages, scored log P(passage) + start + end (start and
    end log-softmaxed over all the passages' tokens together, as trained)."""
    n, length = start.shape
    passage_lp = relevance.log_softmax(0)
    s_lp = start.masked_fill(~(enc.span_mask & enc.word_start), NEG).view(-1).log_softmax(0).view(n, length)
    e_lp = end.masked_fill(~(enc.span_mask & enc.word_end), NEG).view(-1).log_softmax(0).view(n, length)
    out: list[Span] = []
    for p in range(n):
        # score[i, j] for spans i..j of at most max_tokens tokens
        scores = s_lp[p][:, None] + e_lp[p][None, :]
        i, j = torch.meshgrid(torch.arange(length), torch.arange(length), indexing="ij")
        scores = scores.masked_fill((j < i) | (j - i >= max_tokens), float("-inf"))
        flat = scores.view(-1).topk(min(top, length * length))
        for value, index in zip(flat.values.tolist(), flat.indices.tolist()):
            if value <= NEG / 2:
                break
            a, z = divmod(index, length)
            text = enc.texts[p][enc.offsets[p][a][0] : enc.offsets[p][z][1]]
            out.append(Span(p, text, value + float(passage_lp[p])))
    return sorted(out, key=lambda s: -s.score)
