"""The extractive reader (DPR's reader, the AmbigQA paper's "Thresholding + QD" baseline): an
encoder (BERT, or MPNet for the base-size reader) reads `[CLS] question [SEP] title: text [SEP]`
(MPNet: `<s> question </s></s> title: text </s>`) one passage at a time and gives

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
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn
from transformers import (
    AutoConfig,
    BertConfig,
    BertModel,
    BertPreTrainedModel,
    MPNetConfig,
    MPNetModel,
    MPNetPreTrainedModel,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerFast,
)

from .data import Passage, crop


def _heads(model: nn.Module, hidden: int) -> None:
    model.qa_outputs = nn.Linear(hidden, 2)
    model.qa_classifier = nn.Linear(hidden, 1)


def _logits(model: nn.Module, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    start, end = model.qa_outputs(states).unbind(-1)
    return start, end, model.qa_classifier(states[:, 0]).squeeze(-1)


class ExtractiveReader(BertPreTrainedModel):
    """On BERT (the shipped reader, e5-small-v2): question and passage told apart by token types."""

    config_class = BertConfig
    # The id tensors it reads: the tokenizer's output and the ONNX graph's inputs.
    inputs = ("input_ids", "attention_mask", "token_type_ids")

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False)
        _heads(self, config.hidden_size)
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return _logits(self, self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state)


class MPNetExtractiveReader(MPNetPreTrainedModel):
    """On MPNet (the base-size reader, all-mpnet-base-v2): `<s> question </s></s> passage </s>`,
    no token types (MPNet has none)."""

    config_class = MPNetConfig
    inputs = ("input_ids", "attention_mask")

    def __init__(self, config: MPNetConfig) -> None:
        super().__init__(config)
        self.mpnet = MPNetModel(config, add_pooling_layer=False)
        _heads(self, config.hidden_size)
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return _logits(self, self.mpnet(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state)


# model_type → the reader on that encoder.
READERS: dict[str, type[ExtractiveReader] | type[MPNetExtractiveReader]] = {"bert": ExtractiveReader, "mpnet": MPNetExtractiveReader}


def reader_class(config: PretrainedConfig) -> type[ExtractiveReader] | type[MPNetExtractiveReader]:
    if config.model_type not in READERS:
        raise ValueError(f"no extractive reader on a {config.model_type!r} encoder (known: {', '.join(READERS)})")
    return READERS[config.model_type]


def reader_inputs(config: PretrainedConfig) -> tuple[str, ...]:
    return reader_class(config).inputs


def with_reader_inputs(tok: PreTrainedTokenizerFast, config: PretrainedConfig) -> PreTrainedTokenizerFast:
    """The tokenizer giving exactly the ids the reader reads (transformers 5 drops token_type_ids
    unless the tokenizer asks for them, and the BERT reader reads them)."""
    tok.model_input_names = list(reader_inputs(config))
    return tok


def load_tokenizer(folder: Path, config: PretrainedConfig) -> PreTrainedTokenizerFast:
    return with_reader_inputs(PreTrainedTokenizerFast.from_pretrained(str(folder)), config)


def load_checkpoint(folder: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    """A saved reader checkpoint, on whichever encoder its config names, and its tokenizer."""
    config = AutoConfig.from_pretrained(str(folder))
    return reader_class(config).from_pretrained(str(folder)), load_tokenizer(folder, config)


def from_encoder(encoder: PreTrainedModel, seed: int) -> PreTrainedModel:
    """The reader on a pretrained encoder's weights; the two heads start fresh (seeded)."""
    torch.manual_seed(seed)
    model = reader_class(encoder.config)(encoder.config)
    missing, unexpected = model.base_model.load_state_dict(encoder.state_dict(), strict=False)
    # A sentence encoder's pooler is not read: the reader reads every token's state.
    unexpected = [k for k in unexpected if not k.startswith("pooler.")]
    if missing or unexpected:
        raise ValueError(f"encoder weights do not fit the reader: missing {missing}, unknown {unexpected}")
    return model


def from_quantized_onnx(folder: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    """An exported reader folder (config.json, tokenizer.json, model_quantized.onnx: what
    assets/models/extractive ships) back as a trainable model: the int8 weights dequantised exactly
    (onnx_weights.quantized_state_dict). A machine that cannot receive 133 MB of fp32 weights starts
    from the 34 MB int8 file this way."""
    import onnx

    from .onnx_weights import quantized_state_dict

    config = AutoConfig.from_pretrained(str(folder))
    model = reader_class(config)(config)
    state = quantized_state_dict(onnx.load(str(folder / "model_quantized.onnx")).graph)
    # Positions are a buffer transformers makes itself, not a weight.
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise ValueError(f"{folder}/model_quantized.onnx: weights not recovered {missing}, unknown {unexpected}")
    return model, load_tokenizer(folder, config)


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
    # Per row: which sequence each token belongs to (-1 special/padding) and its word (-1 none).
    seq = torch.tensor([[-1 if x is None else x for x in enc.sequence_ids(i)] for i in range(n)])
    word = torch.tensor([[-1 if x is None else x for x in enc.word_ids(i)] for i in range(n)])
    span_mask = seq == 1
    before = nn.functional.pad(span_mask, (1, 0))[:, :-1]
    after = nn.functional.pad(span_mask, (0, 1))[:, 1:]
    word_before = nn.functional.pad(word, (1, 0), value=-2)[:, :-1]
    word_after = nn.functional.pad(word, (0, 1), value=-2)[:, 1:]
    word_start = span_mask & (~before | (word_before != word))
    word_end = span_mask & (~after | (word_after != word))
    return Encoded(dict(enc), span_mask, word_start, word_end, [[(a, b) for a, b in o] for o in offsets], passages)


# What may stand between a title's echo and the subject's name again: an article, a quote.
ECHO_LEAD = re.compile("^(?:(?:the|a|an) )?[\"'\u201c\u2018]?")


def field_at(passage: str, title_length: int) -> Callable[[int], int]:
    """The fields of `title: text` a span keeps to, by character: 0 the title, 1 the title's echo at
    the text's start (DPR's first passage of an article: "Dominic Janes Dominic Janes (born ..."),
    2 the rest of the text, -1 the separator. reader/extractive-reader.ts passageFields, which says why."""
    title, text = passage[:title_length], passage[title_length + 2 :]
    start = title_length + 2
    head = title.split(" ")[0].lower()
    rest = text[title_length + 1 :].lower()

    def opens_with_head(s: str) -> bool:
        return s.startswith(head) and not s[len(head) : len(head) + 1].isalnum()

    echo = head != "" and text.startswith(title + " ") and (opens_with_head(rest) or opens_with_head(ECHO_LEAD.sub("", rest, count=1)))
    end = start + title_length if echo else start
    return lambda at: 0 if at < title_length else -1 if at < start else 1 if at < end else 2


def answer_token_spans(text: str, offsets: list[tuple[int, int]], mask: torch.Tensor, answers: list[str],
                       title_length: int | None = None) -> list[tuple[int, int]]:
    """Token spans of every case-insensitive, whole-word occurrence of any alias in the passage;
    with `title_length` (the title's characters in `title: text`), each within one field (field_at):
    a reader taught a span across would return one (issue 47's "Dominic Janes Dominic Janes")."""
    field = None if title_length is None else field_at(text, title_length)
    spans: set[tuple[int, int]] = set()
    for alias in answers:
        alias = alias.strip()
        if not alias:
            continue
        for m in re.finditer(r"(?<!\w)" + re.escape(alias) + r"(?!\w)", text, re.IGNORECASE):
            if field is not None and not 0 <= field(m.start()) == field(m.end() - 1):
                continue
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


def group_title_lengths(group: dict[str, Any], negatives: int) -> list[int]:
    """The title lengths of group_passages' texts, in its order (cropping keeps a title whole)."""
    return [len(p["title"]) for p in [group["positive"], *group["negatives"][:negatives]]]


NEG = -1e4


def prepare_groups(tok: PreTrainedTokenizerFast, groups: list[dict[str, Any]], negatives: int, max_len: int, words: int) -> dict[str, Any]:
    """What group_loss computes on the CPU (picklable, for DataLoader workers): the tokenised
    passages of each group (gold first), the span mask, and each gold passage's answer token spans."""
    texts = [group_passages(g, negatives, words)[0] for g in groups]
    width = min(len(t) for t in texts)
    questions = [g["question"] for g, t in zip(groups, texts) for _ in t[:width]]
    enc = encode(tok, questions, [p for t in texts for p in t[:width]], max_len)
    # Lists, as a DataLoader hands them back (it turns tuples into lists).
    spans = [[[a, z] for a, z in answer_token_spans(enc.texts[g * width], enc.offsets[g * width], enc.span_mask[g * width], group["answers"],
                                                     len(group["positive"]["title"]))] for g, group in enumerate(groups)]
    return {"n": len(groups), "width": width, "features": enc.features, "span_mask": enc.span_mask, "spans": spans}


def prepared_loss(model: PreTrainedModel, batch: dict[str, Any]) -> torch.Tensor:
    """Selection cross-entropy over each group plus the shared-normalised span loss of its gold
    spans, on the model's device."""
    device = next(model.parameters()).device
    start, end, relevance = model(**{k: v.to(device) for k, v in batch["features"].items()})
    b, width, length = batch["n"], batch["width"], start.shape[1]
    span_mask = batch["span_mask"].to(device)
    selection = nn.functional.cross_entropy(relevance.view(b, width), torch.zeros(b, dtype=torch.long, device=device))
    start = start.masked_fill(~span_mask, NEG).view(b, width * length).log_softmax(-1)
    end = end.masked_fill(~span_mask, NEG).view(b, width * length).log_softmax(-1)
    span_losses = []
    # The gold passage is the first of its group, so its tokens are the first `length` of the row.
    for g, spans in enumerate(batch["spans"]):
        if not spans:
            continue
        s = torch.tensor([a for a, _ in spans], device=device)
        e = torch.tensor([z for _, z in spans], device=device)
        span_losses.append(-(start[g, s].logsumexp(0) + end[g, e].logsumexp(0)))
    span = torch.stack(span_losses).mean() if span_losses else start.new_zeros(())
    return selection + span


def group_loss(model: PreTrainedModel, tok: PreTrainedTokenizerFast, groups: list[dict[str, Any]], negatives: int, max_len: int, words: int) -> torch.Tensor:
    """prepare_groups then prepared_loss, in one process."""
    return prepared_loss(model, prepare_groups(tok, groups, negatives, max_len, words))


# A Wikipedia citation mark: "[2]", "[109]".
MARK = r"\[\d{1,3}\]"
CITATION = re.compile(MARK)
CITATIONS_AT_END = re.compile(rf"[,;:]?(?:\s*{MARK})+\s*$")
CITATIONS_AT_START = re.compile(rf"^\s*(?:{MARK}\s*)+")


def without_citations(text: str) -> str | None:
    """The span without the Wikipedia citation marks at its ends ("Ouagadougou[2]" → "Ouagadougou"),
    or None for one with a mark inside ("Richard Petty,[5] Dale Earnhardt"): reader/extractive-reader.ts
    withoutCitations, which says why."""
    trimmed = CITATIONS_AT_START.sub("", CITATIONS_AT_END.sub("", text, count=1), count=1)
    return None if CITATION.search(trimmed) else trimmed


@dataclass
class Span:
    passage: int
    text: str
    score: float


def best_spans(enc: Encoded, start: torch.Tensor, end: torch.Tensor, relevance: torch.Tensor, max_tokens: int = 10, top: int = 5,
               title_lengths: list[int] | None = None) -> list[Span]:
    """The best whole-word spans over the passages, scored log P(passage) + start + end (start and
    end log-softmaxed over all the passages' tokens together, as trained). With `title_lengths` (each
    passage's title, in characters of its `title: text`), a span lies in one field (field_at), as
    the serving reader's (reader/extractive-reader.ts scoreSpans); citation marks at a span's ends
    cut, and one with a mark inside left out (without_citations), as its candidates are."""
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
        if title_lengths is not None:
            # Each token's field; -1 for the separator, a token across fields, or one not the passage's.
            at = field_at(enc.texts[p], title_lengths[p])
            field = torch.tensor([at(a) if b > a and at(a) == at(b - 1) else -1 for a, b in enc.offsets[p]])
            scores = scores.masked_fill((field[:, None] != field[None, :]) | (field[:, None] < 0), float("-inf"))
        flat = scores.view(-1).topk(min(top, length * length))
        for value, index in zip(flat.values.tolist(), flat.indices.tolist()):
            if value <= NEG / 2:
                break
            a, z = divmod(index, length)
            text = without_citations(enc.texts[p][enc.offsets[p][a][0] : enc.offsets[p][z][1]])
            if text:
                out.append(Span(p, text, value + float(passage_lp[p])))
    return sorted(out, key=lambda s: -s.score)
