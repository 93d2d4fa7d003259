"""A parity fixture for the TypeScript ONNX reader: a tiny BART, its ONNX export (fp32 and int8)
and reference generations from transformers' `generate` (the torch model).

`PYTHONPATH=train python train/tests/fixture.py --out DIR [--seed 0] [--source builtin|squad|auto] [--steps 300]`

1. A tiny `BartForConditionalGeneration` (d_model 64, 2 encoder + 2 decoder layers, 4 heads, FFN
   128, random init) with the project's tokenizer and special tokens, built by warm_start's
   `load_tokenizer` / `bart_config` / `set_layer_norm_eps` (LayerNorm eps 1e-12 as in production).
2. Trained for a few hundred steps (train_seq2seq's `encode`: target tokens + [SEP], no [CLS]) on a
   copy task: `question [SEP] title: text` → the answer span(s) of the text joined by " <SEP> ".
   Examples: the built-in list below (the default, `builtin`), so that every machine makes the
   same model whether or not ../shared is beside the project (the tests that read the fixture
   must give the same results on a fresh clone as in CI); `squad` uses SQuAD dev
   (../shared/data/squad/dev-v1.1.json), `auto` SQuAD when present; two held-out examples are
   never trained on.
3. Exported with export_onnx (fp32 + int8) into DIR; generation_config.json holds every setting
   explicitly (transformers' own save drops defaults).
4. DIR/reference.json: cases (settings × inputs, one-by-one and padded batches) with inputs,
   input_ids, the exact generation settings, output ids, scores and text, the ONNX files' inputs
   and outputs, the transformers quirks a reimplementation must copy ("notes"), and checks of
   greedy generation through onnxruntime (optimum's ORTModelForSeq2SeqLM and a plain loop over
   the merged decoder) for fp32 and int8.
"""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse
import json
import random
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers
from transformers import BartForConditionalGeneration, BertConfig, BertForSequenceClassification, GenerationConfig, PreTrainedTokenizerFast

from ambigqa_train import export_onnx
from ambigqa_train.common import lr_at
from ambigqa_train.data import Passage, reader_input
from ambigqa_train.train_seq2seq import encode
from ambigqa_train.warm_start import ANSWER_SEP, bart_config, load_cross_encoder_tokenizer, load_tokenizer, set_layer_norm_eps

SQUAD_DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "squad" / "dev-v1.1.json"
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
        "hidden_act": "gelu", "max_position_embeddings": 512, "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0}
DECODER_LAYERS = 2
TRAIN = {"max_source_len": 128, "max_target_len": 24, "batch_size": 16, "lr": 3e-3, "warmup": 30}


@dataclass(frozen=True)
class Example:
    question: str
    title: str
    text: str
    answers: tuple[str, ...]

    @property
    def input(self) -> str:
        return reader_input(self.question, [Passage(self.title, self.text)])

    @property
    def target(self) -> str:
        return f" {ANSWER_SEP} ".join(self.answers)


def _ex(q: str, title: str, text: str, *answers: str) -> Example:
    for a in answers:
        assert a in text, (a, text)
    return Example(q, title, text, answers)


_MARS = "Mars has two small moons, Phobos and Deimos, discovered by Asaph Hall in 1877."
_APOLLO = "Neil Armstrong and Buzz Aldrin landed on the Moon on 20 July 1969, and Armstrong stepped out first."
_MSFT = "Microsoft was founded by Bill Gates and Paul Allen on April 4, 1975, in Albuquerque, New Mexico."
_GOLD = "Gold is a chemical element with the symbol Au, from the Latin word aurum, and atomic number 79."
_STATES = "There are fifty states in the United States, the last two admitted being Alaska and Hawaii in 1959."

BUILTIN: tuple[Example, ...] = (
    _ex("who wrote the novel dracula", "Dracula", "Dracula is an 1897 Gothic horror novel by Irish author Bram Stoker.", "Bram Stoker"),
    _ex("when did the titanic sink", "Titanic", "RMS Titanic sank in the early morning hours of 15 April 1912 in the North Atlantic Ocean.", "15 April 1912"),
    _ex("what is the capital of australia", "Canberra", "Canberra is the capital city of Australia, while Sydney is its largest city.", "Canberra"),
    _ex("who painted the mona lisa", "Mona Lisa", "The Mona Lisa is a half-length portrait painting by the Italian artist Leonardo da Vinci.", "Leonardo da Vinci"),
    _ex("when was the harry potter movie released", "Harry Potter (film series)", "The first film was released in 2001 and the final film, Deathly Hallows Part 2, was released in 2011.", "2001", "2011"),
    _ex("who played the joker in the dark knight", "The Dark Knight", "Heath Ledger played the Joker in The Dark Knight, a role later taken by Joaquin Phoenix in Joker.", "Heath Ledger"),
    _ex("who played the joker", "Joker (character)", "The Joker has been portrayed by Jack Nicholson in 1989 and by Heath Ledger in 2008.", "Jack Nicholson", "Heath Ledger"),
    _ex("how many moons does mars have", "Moons of Mars", _MARS, "two"),
    _ex("what are the moons of mars called", "Moons of Mars", _MARS, "Phobos", "Deimos"),
    _ex("who discovered penicillin", "Penicillin", "Penicillin was discovered in 1928 by the Scottish scientist Alexander Fleming at St Mary's Hospital in London.", "Alexander Fleming"),
    _ex("where is the eiffel tower located", "Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.", "Paris"),
    _ex("when did world war ii end", "World War II", "World War II ended in Europe on 8 May 1945 and in Asia on 2 September 1945.", "8 May 1945", "2 September 1945"),
    _ex("who is the author of pride and prejudice", "Pride and Prejudice", "Pride and Prejudice is an 1813 novel of manners written by Jane Austen.", "Jane Austen"),
    _ex("what is the largest planet in the solar system", "Jupiter", "Jupiter is the fifth planet from the Sun and the largest in the Solar System.", "Jupiter"),
    _ex("who was the first man on the moon", "Apollo 11", _APOLLO, "Neil Armstrong"),
    _ex("who landed on the moon in apollo 11", "Apollo 11", _APOLLO, "Neil Armstrong", "Buzz Aldrin"),
    _ex("what is the boiling point of water", "Water", "At sea level pure water boils at 100 degrees Celsius, or 212 degrees Fahrenheit.", "100 degrees Celsius", "212 degrees Fahrenheit"),
    _ex("who composed the four seasons", "The Four Seasons (Vivaldi)", "The Four Seasons is a group of four violin concertos by the Italian composer Antonio Vivaldi, written around 1718.", "Antonio Vivaldi"),
    _ex("when was the declaration of independence signed", "United States Declaration of Independence", "The Declaration was adopted on July 4, 1776, and most delegates signed it on August 2, 1776.", "July 4, 1776", "August 2, 1776"),
    _ex("what language is spoken in brazil", "Brazil", "Portuguese is the official and most widely spoken language of Brazil.", "Portuguese"),
    _ex("who founded microsoft", "Microsoft", _MSFT, "Bill Gates", "Paul Allen"),
    _ex("when was microsoft founded", "Microsoft", _MSFT, "April 4, 1975"),
    _ex("what is the tallest mountain in the world", "Mount Everest", "Mount Everest, on the border of Nepal and China, is Earth's highest mountain above sea level.", "Mount Everest"),
    _ex("who sang thriller", "Thriller (song)", "Thriller is a song by the American singer Michael Jackson, released as a single in 1983.", "Michael Jackson"),
    _ex("how many players are on a soccer team", "Association football", "Each team has eleven players on the pitch, one of whom is the goalkeeper.", "eleven"),
    _ex("who invented the telephone", "Telephone", "Alexander Graham Bell was awarded the first patent for the telephone in 1876, though Elisha Gray filed a caveat the same day.", "Alexander Graham Bell", "Elisha Gray"),
    _ex("what is the currency of japan", "Japanese yen", "The yen is the official currency of Japan and the third most traded currency after the dollar and the euro.", "yen"),
    _ex("when did the berlin wall fall", "Berlin Wall", "The Berlin Wall fell on 9 November 1989, and its demolition officially began in June 1990.", "9 November 1989"),
    _ex("who wrote romeo and juliet", "Romeo and Juliet", "Romeo and Juliet is a tragedy written by William Shakespeare early in his career.", "William Shakespeare"),
    _ex("what is the chemical symbol for gold", "Gold", _GOLD, "Au"),
    _ex("what is the atomic number of gold", "Gold", _GOLD, "79"),
    _ex("who was the first president of the united states", "George Washington", "George Washington served as the first president of the United States from 1789 to 1797.", "George Washington"),
    _ex("where were the 2024 summer olympics held", "2024 Summer Olympics", "The 2024 Summer Olympics were held in Paris, with some events in Marseille and Tahiti.", "Paris"),
    _ex("who directed jurassic park", "Jurassic Park (film)", "Jurassic Park is a 1993 science fiction film directed by Steven Spielberg and produced by Kathleen Kennedy.", "Steven Spielberg"),
    _ex("who won the fifa world cup in 2018", "2018 FIFA World Cup", "France won the 2018 World Cup, beating Croatia 4-2 in the final in Moscow.", "France"),
    _ex("what is the longest river in the world", "Nile", "The Nile is usually regarded as the longest river in the world, though some measurements favour the Amazon.", "Nile", "Amazon"),
    _ex("when did the first iphone come out", "iPhone (1st generation)", "The first iPhone was announced by Steve Jobs on January 9, 2007, and released on June 29, 2007.", "January 9, 2007", "June 29, 2007"),
    _ex("who plays harry potter", "Daniel Radcliffe", "Daniel Radcliffe is an English actor best known for playing Harry Potter in the film series.", "Daniel Radcliffe"),
    _ex("what is the speed of light", "Speed of light", "The speed of light in vacuum is exactly 299,792,458 metres per second.", "299,792,458 metres per second"),
    _ex("who discovered the law of gravity", "Isaac Newton", "Isaac Newton formulated the law of universal gravitation in his Principia, published in 1687.", "Isaac Newton"),
    _ex("how many states are in the united states", "U.S. state", _STATES, "fifty"),
    _ex("which states joined the union in 1959", "U.S. state", _STATES, "Alaska", "Hawaii"),
    _ex("who is the lead singer of queen", "Queen (band)", "Freddie Mercury was the lead vocalist of Queen until his death, after which Adam Lambert toured with the band.", "Freddie Mercury", "Adam Lambert"),
    _ex("what year did the cold war end", "Cold War", "The Cold War is generally considered to have ended with the dissolution of the Soviet Union in 1991.", "1991"),
    _ex("what is the population of canada", "Canada", "Canada had a population of about 40 million people in 2023, most living near the southern border.", "about 40 million"),
    _ex("who wrote the lord of the rings", "The Lord of the Rings", "The Lord of the Rings is an epic fantasy novel by the English author J. R. R. Tolkien.", "J. R. R. Tolkien"),
    _ex("when does the new season of stranger things come out", "Stranger Things", "The fourth season premiered in May 2022, and the fifth and final season premiered in November 2025.", "May 2022", "November 2025"),
    _ex("what is the smallest country in the world", "Vatican City", "Vatican City is the smallest sovereign state in the world by both area and population.", "Vatican City"),
    _ex("who was the british prime minister during world war ii", "Prime Minister of the United Kingdom", "Neville Chamberlain led Britain into the war in 1939, and Winston Churchill replaced him in May 1940.", "Neville Chamberlain", "Winston Churchill"),
    _ex("where is the great barrier reef", "Great Barrier Reef", "The Great Barrier Reef lies in the Coral Sea, off the coast of Queensland, Australia.", "Queensland, Australia"),
)
# Never trained on (both sources): inputs the model has not memorised, for flatter distributions.
HELDOUT: tuple[Example, ...] = (
    _ex("who wrote the origin of species", "On the Origin of Species", "On the Origin of Species is a work of scientific literature by Charles Darwin, published on 24 November 1859.", "Charles Darwin"),
    _ex("when were the pyramids of giza built", "Giza pyramid complex", "The pyramids of Giza were built during the Fourth Dynasty, between about 2600 and 2500 BC.", "2600", "2500 BC"),
)


def squad_examples(path: Path, n: int = 50) -> list[Example]:
    """The first question of the first two paragraphs of each SQuAD dev article, with the sentence
    holding the answer as the text; every third example also asks for the title as a second span
    (both are spans of the input)."""
    data = json.loads(path.read_text())["data"]
    out: list[Example] = []
    for article in data:
        title = article["title"].replace("_", " ")
        for para in article["paragraphs"][:2]:
            ctx = para["context"]
            for qa in para["qas"][:1]:
                ans = qa["answers"][0]
                start = ans["answer_start"]
                bounds = [0] + [m.end() for m in re.finditer(r"(?<=[.!?])\s+", ctx)] + [len(ctx) + 1]
                lo = max(b for b in bounds if b <= start)
                hi = min(b for b in bounds if b > start)
                sent = ctx[lo:hi].strip()
                if not (6 <= len(sent.split()) <= 35) or ans["text"] not in sent or len(ans["text"].split()) > 5:
                    continue
                answers: tuple[str, ...] = (ans["text"],)
                if len(out) % 3 == 2 and title.lower() not in ans["text"].lower():
                    answers = (ans["text"], title)
                out.append(Example(qa["question"].strip(), title, sent, answers))
            if len(out) >= n:
                return out
    return out


def load_examples(source: str) -> tuple[list[Example], str]:
    if source in ("auto", "squad") and SQUAD_DEV.exists():
        return squad_examples(SQUAD_DEV), f"squad:{SQUAD_DEV.name}"
    if source == "squad":
        raise FileNotFoundError(SQUAD_DEV)
    return list(BUILTIN), "builtin"


def build_tiny(seed: int) -> tuple[BartForConditionalGeneration, PreTrainedTokenizerFast]:
    """warm_start's tokenizer and BART config at a tiny size; no forced EOS (see notes)."""
    torch.manual_seed(seed)
    tok = load_tokenizer()
    config = bart_config(tok, cast(Any, SimpleNamespace(config=BertConfig(**TINY))), DECODER_LAYERS)
    config.forced_eos_token_id = None
    model = BartForConditionalGeneration(config)
    set_layer_norm_eps(model)
    return model, tok


def train_tiny(model: BartForConditionalGeneration, tok: PreTrainedTokenizerFast, examples: list[Example],
               steps: int, seed: int) -> float:
    """Trains only the rows of the tied embedding whose token ids occur in the training inputs and
    targets (plus the special ones): a step embeds through that sub-table and takes the softmax
    over it, since the 30,523-row table (output projection, its gradient and Adam over it) would
    dominate a step of a 64-wide model. Afterwards the sub-table is written back and every other
    id gets final_logits_bias -20 (their rows are untrained noise), so generation over the full
    vocabulary behaves like the trained softmax."""
    from transformers.models.bart.modeling_bart import shift_tokens_right

    rows = [{"input": e.input, "target": e.target} for e in examples]
    used = {tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.unk_token_id, tok.convert_tokens_to_ids(ANSWER_SEP)}
    for r in rows:
        used.update(tok(r["input"]).input_ids)
        used.update(tok(r["target"], add_special_tokens=False).input_ids)
    shared = model.model.shared.weight
    cand = torch.tensor(sorted(used))
    remap = torch.zeros(model.config.vocab_size, dtype=torch.long)
    remap[cand] = torch.arange(len(cand))
    sub = torch.nn.Parameter(shared.detach()[cand].clone())
    bias = torch.nn.Parameter(torch.zeros(len(cand)))
    params = [p for n, p in model.named_parameters() if p is not shared] + [sub, bias]
    opt = torch.optim.AdamW(params, lr=TRAIN["lr"], weight_decay=0.0)
    rng = random.Random(seed)
    model.train()
    order: list[int] = []
    losses: list[float] = []
    bs = int(TRAIN["batch_size"])
    for step in range(steps):
        while len(order) < bs:
            more = list(range(len(rows)))
            rng.shuffle(more)
            order += more
        batch, order = [rows[i] for i in order[:bs]], order[bs:]
        for g in opt.param_groups:
            g["lr"] = lr_at(step, TRAIN["lr"], int(TRAIN["warmup"]), steps)
        b = encode(tok, batch, TRAIN)
        labels = b["labels"]
        dec_in = shift_tokens_right(labels, model.config.pad_token_id, model.config.decoder_start_token_id)
        h = model.model(inputs_embeds=sub[remap[b["input_ids"]]], attention_mask=b["attention_mask"],
                        decoder_inputs_embeds=sub[remap[dec_in]]).last_hidden_state
        logits = h @ sub.T + bias
        target = torch.where(labels == -100, labels, remap[labels.clamp(min=0)])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, len(cand)), target.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        shared[cand] = sub
        model.final_logits_bias.fill_(-20.0)
        model.final_logits_bias[0, cand] = bias
    model.tie_weights()
    return float(np.mean(losses[-20:]))


# ---------------------------------------------------------------------------------------------
# Generation settings: base_generation() is generation_config.json; every case lists its own.

def base_generation(tok: PreTrainedTokenizerFast) -> dict[str, Any]:
    return {
        "decoder_start_token_id": tok.cls_token_id, "bos_token_id": tok.cls_token_id,
        "eos_token_id": tok.sep_token_id, "pad_token_id": tok.pad_token_id,
        "forced_bos_token_id": None, "forced_eos_token_id": None,
        "max_length": 20, "min_length": 0, "num_beams": 1, "num_return_sequences": 1,
        "length_penalty": 1.0, "no_repeat_ngram_size": 0, "early_stopping": False,
        "do_sample": False, "repetition_penalty": 1.0, "encoder_no_repeat_ngram_size": 0,
        "bad_words_ids": None, "num_beam_groups": 1, "use_cache": True,
    }


SETTINGS: dict[str, dict[str, Any]] = {
    "greedy": {"num_beams": 1, "max_length": 20},
    "beam4": {"num_beams": 4, "max_length": 20, "length_penalty": 1.0, "early_stopping": True},
    "beam4_lp2_nr2": {"num_beams": 4, "max_length": 20, "length_penalty": 2.0, "no_repeat_ngram_size": 2,
                      "early_stopping": False},
    "beam4_return4": {"num_beams": 4, "max_length": 20, "length_penalty": 1.0, "early_stopping": True,
                      "num_return_sequences": 4},
    "beam4_max6": {"num_beams": 4, "max_length": 6, "length_penalty": 1.0, "early_stopping": False},
    "greedy_max6_forced_eos": {"num_beams": 1, "max_length": 6, "forced_eos_token_id": "eos"},
    "beam4_max6_forced_eos": {"num_beams": 4, "max_length": 6, "length_penalty": 1.0, "early_stopping": False,
                              "num_return_sequences": 2, "forced_eos_token_id": "eos"},
    "prefix_greedy": {"num_beams": 1, "max_new_tokens": 12, "prefix": True},
    "prefix_beam4": {"num_beams": 4, "max_new_tokens": 12, "length_penalty": 1.0, "early_stopping": True,
                     "prefix": True},
}
RECORDED = ("num_beams", "max_length", "max_new_tokens", "min_length", "length_penalty", "no_repeat_ngram_size",
            "early_stopping", "num_return_sequences", "decoder_start_token_id", "bos_token_id", "eos_token_id",
            "pad_token_id", "forced_bos_token_id", "forced_eos_token_id", "do_sample", "repetition_penalty",
            "encoder_no_repeat_ngram_size", "num_beam_groups", "use_cache")


def prefix_ids(tok: PreTrainedTokenizerFast, answer: str, keep: int | None = None) -> list[int]:
    """[decoder start] + the answer's tokens (first `keep`) + the `<SEP>` id."""
    ids = tok(answer, add_special_tokens=False).input_ids
    return [tok.cls_token_id, *(ids if keep is None else ids[:keep]), tok.convert_tokens_to_ids(ANSWER_SEP)]


def run_case(model: BartForConditionalGeneration, tok: PreTrainedTokenizerFast, name: str, setting: str,
             examples: list[Example]) -> dict[str, Any]:
    spec = dict(SETTINGS[setting])
    use_prefix = spec.pop("prefix", False)
    if spec.get("forced_eos_token_id") == "eos":
        spec["forced_eos_token_id"] = tok.sep_token_id
    texts = [e.input for e in examples]
    enc = tok(texts, padding=True, return_tensors="pt")
    kwargs: dict[str, Any] = dict(spec)
    prefixes = None
    if use_prefix:
        lens = [len(tok(e.answers[0], add_special_tokens=False).input_ids) for e in examples]
        keep = None if len(examples) == 1 else min(lens)  # a batch needs prefixes of one length
        prefixes = [prefix_ids(tok, e.answers[0], keep) for e in examples]
        kwargs["decoder_input_ids"] = torch.tensor(prefixes)
    resolved, _ = model._prepare_generation_config(None, **spec)
    settings = {k: getattr(resolved, k) for k in RECORDED}
    prompt_len = len(prefixes[0]) if prefixes else 1
    if "max_new_tokens" in spec:  # what generate derives: decoder prompt length + max_new_tokens
        settings["max_length"] = prompt_len + spec["max_new_tokens"]
    with torch.no_grad():
        out = model.generate(**enc, **kwargs, return_dict_in_generate=True, output_scores=True, output_logits=True)
    seqs = out.sequences
    beam = spec["num_beams"] > 1
    if beam:
        trans = model.compute_transition_scores(seqs, out.scores, out.beam_indices, normalize_logits=False)
        beam_idx = out.beam_indices
    else:
        trans = model.compute_transition_scores(seqs, out.scores, normalize_logits=True)
        beam_idx = None
    eos, sep = tok.sep_token_id, tok.convert_tokens_to_ids(ANSWER_SEP)
    outputs = []
    for r in range(seqs.shape[0]):
        row = seqs[r].tolist()
        gen = row[prompt_len:]
        steps = len(gen)
        if beam:
            steps = int((beam_idx[r] >= 0).sum())
        elif eos in gen:
            steps = gen.index(eos) + 1
        toks = gen[:steps]
        raw = []
        for s, t in enumerate(toks):
            src = int(beam_idx[r, s]) if beam_idx is not None else r
            raw.append(float(torch.log_softmax(out.logits[s][src].double(), -1)[t]))
        ts = [float(x) for x in trans[r, :steps]]
        answers, cur = [], []  # every answer after the start token, a forced prefix's included
        for t in row[1:prompt_len] + toks + [sep]:
            if t == sep:
                answers.append(tok.decode(cur, skip_special_tokens=True, clean_up_tokenization_spaces=False).strip())
                cur = []
            else:
                cur.append(t)
        item: dict[str, Any] = {
            "input_index": r // settings["num_return_sequences"],
            "sequence": row,
            "tokens": row[: prompt_len + steps],
            "generated_length": steps,
            "ends_with_eos": bool(toks and toks[-1] == eos),
            "token_logprobs": raw,
            "sum_logprob": float(sum(raw)),
            "transition_scores": ts,
            "sum_transition_scores": float(sum(ts)),
            "text": tok.decode(row, skip_special_tokens=True, clean_up_tokenization_spaces=False),
            "text_with_special": tok.decode(row[: prompt_len + steps], skip_special_tokens=False,
                                            clean_up_tokenization_spaces=False),
            "answers": answers,
        }
        if beam:
            item["sequence_score"] = float(out.sequences_scores[r])
            lp = settings["length_penalty"]
            assert abs(item["sum_transition_scores"] / steps**lp - item["sequence_score"]) < 1e-4, (name, r)
        outputs.append(item)
    if beam:
        fill = {t for o in outputs for t in o["sequence"][prompt_len + o["generated_length"]:]}
        assert fill <= {eos}, fill  # beam search pads with eos (pad id 0 is falsy), see notes
    return {
        "name": name, "setting": setting, "batch_size": len(texts),
        "inputs": texts,
        "input_ids": [tok(t).input_ids for t in texts],
        "padded_input_ids": enc.input_ids.tolist(), "attention_mask": enc.attention_mask.tolist(),
        "decoder_input_ids": prefixes,
        "decoder_prompt_length": prompt_len,
        "generation": settings,
        "sequences_shape": list(seqs.shape),
        "outputs": outputs,
    }


# ---------------------------------------------------------------------------------------------
# ONNX: inputs/outputs of the files, and greedy generation through onnxruntime.

def _io(values: Any) -> list[dict[str, Any]]:
    return [{"name": v.name, "dtype": onnx.TensorProto.DataType.Name(v.type.tensor_type.elem_type).lower(),
             "shape": [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]} for v in values]


def onnx_io(out: Path) -> dict[str, Any]:
    res = {}
    for name in ("encoder_model", "decoder_model", "decoder_with_past_model", "decoder_model_merged"):
        m = onnx.load(str(out / f"{name}.onnx"), load_external_data=False)
        res[f"{name}.onnx"] = {"opset": m.opset_import[0].version, "inputs": _io(m.graph.input), "outputs": _io(m.graph.output)}
    return res


def onnx_greedy(out: Path, encoder: str, decoder: str, input_ids: np.ndarray, attention_mask: np.ndarray,
                start: int, eos: int, pad: int, max_length: int) -> list[list[int]]:
    """The merged decoder's protocol, as the TypeScript engine drives it: step 0 with
    use_cache_branch=[false] and empty past (batch, heads, 0, head_dim) for every past input;
    later steps feed only the last token, use_cache_branch=[true], the decoder self-attention
    `present.*.decoder.*` of the previous step and the cross-attention `present.*.encoder.*` of
    step 0 (the with-past branch returns placeholders for those), and still encoder_hidden_states."""
    enc = export_onnx.session(out / encoder)
    dec = export_onnx.session(out / decoder)
    h = enc.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})[0]
    b = input_ids.shape[0]
    past_inputs = [i for i in dec.get_inputs() if i.name.startswith("past_key_values.")]
    past = {i.name: np.zeros((b, int(i.shape[1]), 0, int(i.shape[3])), np.float32) for i in past_inputs}
    names = [o.name for o in dec.get_outputs()]
    ids = np.full((b, 1), start, np.int64)
    seqs = ids.copy()
    done = np.zeros(b, bool)
    for step in range(max_length - 1):
        feeds = {"input_ids": ids, "encoder_hidden_states": h, "encoder_attention_mask": attention_mask,
                 "use_cache_branch": np.array([step > 0]), **past}
        outs = dict(zip(names, dec.run(None, feeds)))
        nxt = np.where(done, pad, outs["logits"][:, -1].argmax(-1))
        seqs = np.concatenate([seqs, nxt[:, None]], 1)
        done |= nxt == eos
        for n in past:
            if step == 0 or ".decoder." in n:
                past[n] = outs[n.replace("past_key_values.", "present.")]
        ids = nxt[:, None].astype(np.int64)
        if done.all():
            break
    return [s.tolist() for s in seqs]


def ort_checks(out: Path, tok: PreTrainedTokenizerFast, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Greedy through onnxruntime (optimum's ORTModelForSeq2SeqLM on the merged decoder, and the
    plain loop above) against the torch tokens of the `greedy` cases, fp32 and int8."""
    from optimum.onnxruntime import ORTModelForSeq2SeqLM

    greedy = [c for c in cases if c["setting"] == "greedy"]
    beam = [c for c in cases if c["setting"] == "beam4" and c["batch_size"] == 1]
    res: dict[str, Any] = {}
    variants = [("fp32", "")]
    if (out / f"{export_onnx.MERGED}{export_onnx.QUANTIZED}.onnx").exists():
        variants.append(("int8", export_onnx.QUANTIZED))
    for variant, q in variants:
        enc_file, dec_file = f"encoder_model{q}.onnx", f"{export_onnx.MERGED}{q}.onnx"
        with tempfile.TemporaryDirectory(prefix="fixture-ort.") as td:
            stage = Path(td)
            for src, dst in ((enc_file, "encoder_model.onnx"), (dec_file, "decoder_model_merged.onnx"),
                             ("config.json", "config.json"), ("generation_config.json", "generation_config.json")):
                (stage / dst).symlink_to((out / src).resolve())
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 2
            ort_model = ORTModelForSeq2SeqLM.from_pretrained(str(stage), use_merged=True, session_options=opts)
            rows: list[dict[str, Any]] = []
            for c in greedy + (beam if variant == "fp32" else []):
                g = c["generation"]
                kw = {k: g[k] for k in ("num_beams", "max_length", "length_penalty", "early_stopping",
                                        "no_repeat_ngram_size", "num_return_sequences", "forced_eos_token_id")}
                enc = tok(c["inputs"], padding=True, return_tensors="pt")
                got = ort_model.generate(**enc, **kw).tolist()
                want = [o["sequence"] for o in c["outputs"]]
                row: dict[str, Any] = {"case": c["name"], "optimum_equal": got == want}
                if c["setting"] == "greedy":
                    loop = onnx_greedy(out, enc_file, dec_file, enc.input_ids.numpy(), enc.attention_mask.numpy(),
                                       g["decoder_start_token_id"], g["eos_token_id"], g["pad_token_id"], g["max_length"])
                    row["loop_equal"] = [s[: len(w)] for s, w in zip(loop, want)] == want
                if got != want:
                    row["optimum_tokens"] = got
                rows.append(row)
        single = [r for r in rows if r["case"].startswith("greedy/")]
        res[variant] = {
            "files": [enc_file, dec_file],
            "greedy_equal": f"{sum(r['optimum_equal'] for r in single)}/{len(single)}",
            "cases": rows,
        }
    return res


ONNX_PROTOCOL = [
    "encoder_model.onnx: input_ids, attention_mask (int64 [batch, enc_len]) -> last_hidden_state (float32 [batch, enc_len, d_model]).",
    "decoder_model_merged.onnx, first step: use_cache_branch = [false] (bool, shape [1]); input_ids = the whole decoder prompt ([CLS] or [CLS]+prefix, int64 [batch, dec_len]); encoder_hidden_states; encoder_attention_mask = the encoder's attention_mask; every past_key_values.{layer}.{decoder|encoder}.{key|value} input fed as an empty float32 [batch, heads, 0, head_dim]. Outputs logits [batch, dec_len, vocab] (use the last position) and present.{layer}.{decoder|encoder}.{key|value} [batch, heads, len, head_dim].",
    "Later steps: use_cache_branch = [true]; input_ids = the last chosen token [batch, 1]; past_key_values.*.decoder.* = the previous step's present.*.decoder.*; past_key_values.*.encoder.* = the FIRST step's present.*.encoder.* (the with-past branch outputs placeholders of shape [0, heads, 1, head_dim] there: never feed them back); encoder_hidden_states must still be fed (an empty [batch, 0, d_model] tensor gives the same logits) and encoder_attention_mask is used by cross-attention. The decoder has no attention-mask input: decoder positions are the past length.",
    "Beam search reorders every past tensor (batch*num_beams rows) by the selected beam indices; the cross-attention ones are the encoder's repeated num_beams times per input (expand the encoder outputs/attention mask input-major: rows b*num_beams .. b*num_beams+num_beams-1 belong to input b).",
    "The *_quantized.onnx files have the same inputs and outputs (int8 only inside: DynamicQuantizeLinear + MatMulInteger, uint8 embedding tables through DequantizeLinear).",
]

NOTES = [
    "Settings: each case's `generation` is the config transformers 4.57 actually resolved (model.generation_config was replaced by an explicit one and config.forced_eos_token_id is null, so nothing comes from BART's or the library's defaults). Greedy = num_beams 1, do_sample false.",
    "Lengths: max_length counts every decoder token including the start token [CLS] and any forced prefix. With max_new_tokens (prefix cases) generate sets max_length = decoder prompt length + max_new_tokens; the recorded max_length is that effective value. min_length (0 here) would also count the start token.",
    "Decoder prompt: without decoder_input_ids generate starts from [decoder_start_token_id]; with them (prefix cases) it uses them as given (they already start with [CLS]; if they did not, [CLS] would be prepended). The prefix tokens are not scored.",
    "Greedy: next token = argmax over the logits after the logits processors (no_repeat_ngram, forced_eos); ties go to the lowest id. Once a row has produced eos, its later tokens are pad_token_id (0); the loop ends when every row has produced eos or the length reaches max_length.",
    "Beam search (transformers 4.57 vectorised implementation): per step log_softmax(raw logits) in float32, then the processors (they act on log-probs here, not on logits: a banned token gets -inf and the rest is NOT renormalised), plus the running beam score. Initial running scores: beam 0 = 0, beams 1..n-1 = -1e9, so step 0 expands beam 0 only. Candidates: top 2*num_beams of the flattened (beam*vocab + token) scores per input (torch.topk, descending).",
    "A candidate is finished if its token is eos or its length reaches max_length (then it has no eos). Candidates are ranked by the UNnormalised accumulated sum; only finished candidates ranked within the first num_beams of the 2*num_beams may enter the hypothesis list (a finished one ranked lower is dropped, not continued); the running beams for the next step are the best num_beams unfinished candidates, in rank order.",
    "Hypothesis score = sum of the path's processed log-probs / L**length_penalty, L = generated tokens including the final eos, excluding the start token and any forced prefix (cur_len + 1 - decoder_prompt_len). The list keeps the best num_beams hypotheses by that score; output order is by score, best first; `sequences_scores` are these scores, and `transition_scores` (compute_transition_scores with beam_indices) are the per-token processed log-probs, summing to the unnormalised score.",
    "early_stopping=true: an input stops accepting hypotheses as soon as it holds num_beams finished ones, and the loop ends when every input is full. early_stopping=false: an input is done once it holds num_beams finished hypotheses and best_running_score / (cur_len - decoder_prompt_len)**length_penalty is not greater than its worst finished score, where cur_len is the length AFTER this step's token (so the running beam's own current length is used, not max_length; early_stopping='never' would use max_length when length_penalty > 0). This heuristic applies with early_stopping=true as well. Once an input is done nothing is added to it. The loop also ends when all candidates reach max_length.",
    "Beam outputs are right-padded to the longest returned hypothesis with eos_token_id (102), not pad: transformers fills with `pad_token_id or eos_token_id` and [PAD] is id 0, which is falsy. Greedy pads with 0. `tokens` in each output is the sequence without that padding.",
    "num_return_sequences k (<= num_beams) returns the best k hypotheses per input, input-major (output r belongs to input r // k).",
    "no_repeat_ngram_size n: before choosing a token, any token t such that (last n-1 tokens, t) already occurs as an n-gram in the decoder sequence so far — including the start token [CLS] and the forced prefix — gets -inf (per hypothesis, on its own sequence).",
    "forced_eos_token_id (production's generation_config.json has 102, from warm_start.bart_config; the fixture's base has null and the *_forced_eos cases set it): when the decoder sequence length is max_length - 1, every score except eos becomes -inf and eos becomes 0. In beam search that 0 replaces eos's log-prob, so the forced eos adds 0 to the sum (it still counts in L). In greedy the raw log-prob of that eos is in token_logprobs, the processed one (0) in transition_scores.",
    "Scores per output: token_logprobs = log_softmax (computed here in float64 from the float32 logits) of the raw model logits at the chosen token (model probability, no processors; for beams along the hypothesis' own beam path); transition_scores = processed log-probs (greedy: log_softmax of the processed logits, i.e. renormalised; beam: the processed log-probs used in the search). sum_logprob / sum_transition_scores are their sums over the generated tokens up to and including eos.",
    "Padding: encoder inputs are right-padded with [PAD]=0 and attention_mask 0 there; the encoder attention mask is also the decoder's encoder_attention_mask. Batched results can differ from one-by-one results in the last float bits only (compare the /single/ and /batch/ cases).",
    "Text: tok.decode(sequence, skip_special_tokens=True, clean_up_tokenization_spaces=False). `<SEP>` (30522) is an additional SPECIAL token, so skip_special_tokens also drops it and the answers run together in `text`; `answers` splits the ids after the start token (forced prefix included, up to and including eos) at 30522 and decodes each part the same way (an empty part is kept).",
    "Model: BART with learned positions offset by 2 (position p uses row p + 2; with a cache the decoder position is the past length), no embedding scaling, exact (erf) GELU, LayerNorm eps 1e-12 baked into the ONNX graphs (the PyTorch BartConfig cannot carry it), tied embeddings and lm_head, final_logits_bias zeros. torch.set_num_threads(2), CPU, float32.",
]


def build(out: Path, seed: int = 0, source: str = "builtin", steps: int = 300, int8: bool = True,
          ort_check: bool = True) -> dict[str, Any]:
    # One torch thread: at this size a second one buys nothing and spins when the other core is
    # busy (a 2-thread step was 10x slower beside a running training job). onnxruntime uses 2.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _build(out, seed, source, steps, int8, ort_check)
    finally:
        torch.set_num_threads(threads)


def _build(out: Path, seed: int, source: str, steps: int, int8: bool, ort_check: bool) -> dict[str, Any]:
    t0 = time.time()
    random.seed(seed)
    np.random.seed(seed)
    out.mkdir(parents=True, exist_ok=True)
    examples, source_name = load_examples(source)
    model, tok = build_tiny(seed)
    loss = train_tiny(model, tok, examples, steps, seed)
    t_train = time.time() - t0

    gen = base_generation(tok)
    model.generation_config = GenerationConfig(**gen)
    # Six inputs: the shortest and longest trained single-answer and two-answer examples, and the two
    # held-out ones (different lengths, so the batch is padded).
    singles = sorted((e for e in examples if len(e.answers) == 1), key=lambda e: len(e.input))
    multis = sorted((e for e in examples if len(e.answers) > 1), key=lambda e: len(e.input))
    chosen = [singles[0], multis[-1], HELDOUT[0], multis[0], singles[-1], HELDOUT[1]]
    cases = []
    for setting in SETTINGS:
        for i, e in enumerate(chosen):
            cases.append(run_case(model, tok, f"{setting}/single/{i}", setting, [e]))
        cases.append(run_case(model, tok, f"{setting}/batch", setting, chosen))
    t_ref = time.time() - t0 - t_train

    fresh = load_tokenizer()  # untouched by training's truncation/padding calls
    export_onnx.export_seq2seq_model(model, fresh, out, int8=int8,
                                     generation_config=gen | {"transformers_version": transformers.__version__})
    t_export = time.time() - t0 - t_train - t_ref

    reference: dict[str, Any] = {
        "format": "ambigqa seq2seq parity fixture v1",
        "seed": seed, "data_source": source_name, "train_examples": len(examples), "train_steps": steps,
        "train_final_loss": round(loss, 4),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "onnxruntime": ort.__version__},
        "model": {"type": "bart", "d_model": TINY["hidden_size"], "encoder_layers": TINY["num_hidden_layers"],
                  "decoder_layers": DECODER_LAYERS, "heads": TINY["num_attention_heads"],
                  "ffn": TINY["intermediate_size"], "vocab_size": len(tok), "layer_norm_eps": 1e-12,
                  "parameters": sum(p.numel() for p in model.parameters())},
        "special_tokens": {"decoder_start/bos/[CLS]": tok.cls_token_id, "eos/[SEP]": tok.sep_token_id,
                           "pad/[PAD]": tok.pad_token_id, "unk/[UNK]": tok.unk_token_id,
                           ANSWER_SEP: tok.convert_tokens_to_ids(ANSWER_SEP)},
        "input_format": "question [SEP] title: text (tokenizer adds [CLS] ... [SEP]); targets: answers joined by ' <SEP> ' then [SEP]",
        "decode": {"skip_special_tokens": True, "clean_up_tokenization_spaces": False},
        "generation_config_json": gen,
        "notes": NOTES,
        "onnx_protocol": ONNX_PROTOCOL,
        "onnx_files": export_onnx.sizes(out),
        "onnx_io": onnx_io(out),
        "cases": cases,
    }
    if int8:
        reference["int8_weights"] = {p.name: export_onnx.weight_report(p) for p in sorted(out.glob("*_quantized.onnx"))}
    if ort_check:
        reference["onnxruntime_greedy"] = ort_checks(out, tok, cases)
    reference["cross_encoder"] = cross_encoder_fixture(out / "cross-encoder", examples, seed)
    (out / "reference.json").write_text(json.dumps(reference, indent=1) + "\n")
    timing = {"train_s": round(t_train, 1), "reference_s": round(t_ref, 1), "export_s": round(t_export, 1),
              "total_s": round(time.time() - t0, 1)}
    return {"out": str(out), "loss": round(loss, 4), "cases": len(cases), **timing,
            "onnxruntime_greedy": {k: v["greedy_equal"] for k, v in (reference.get("onnxruntime_greedy") or {}).items()}}


CROSS_ENCODER_MAX_LEN = 48


def cross_encoder_fixture(out: Path, examples: list[Example], seed: int) -> dict[str, Any]:
    """A tiny random BERT cross-encoder exported as the reranker is (model.onnx, int8 too), with
    torch's logits for (question, `title: text`) pairs encoded as train_reranker encodes them
    (only the passage truncated), some of them long enough to be cut."""
    torch.manual_seed(seed)
    tok = load_cross_encoder_tokenizer()
    model = BertForSequenceClassification(BertConfig(**{**TINY, "vocab_size": len(tok), "num_labels": 1}))
    model.eval()
    with tempfile.TemporaryDirectory(prefix="fixture-ce.") as td:
        model.save_pretrained(td)
        tok.save_pretrained(td)
        export_onnx.export_cross_encoder(Path(td), out)
    pairs = []
    for i, e in enumerate(examples[:8]):
        title, text = e.title, (e.text if len(pairs) % 2 == 0 else " ".join([e.text] * 4))
        if i >= 6:
            # An answer verifier's pair (reader/answer-set-decider.ts verifierPair): the candidate,
            # a literal "[SEP]" that both tokenizers read as the separator, then the title.
            title = f"{' '.join(e.text.split()[:2])} [SEP] {title}"

        enc = tok(e.question, f"{title}: {text}", max_length=CROSS_ENCODER_MAX_LEN, truncation="only_second", return_tensors="pt")
        with torch.no_grad():
            logit = float(model(**enc).logits[0, 0])
        pairs.append({"question": e.question, "title": title, "text": text, "input_ids": enc.input_ids[0].tolist(),
                      "token_type_ids": enc.token_type_ids[0].tolist(), "logit": logit})
    return {"dir": "cross-encoder", "max_len": CROSS_ENCODER_MAX_LEN, "pairs": pairs}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="train/tests/fixture.py")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--source", choices=["auto", "builtin", "squad"], default="builtin")
    ap.add_argument("--steps", type=int, default=300)
    a = ap.parse_args(argv)
    print(json.dumps(build(a.out, a.seed, a.source, a.steps)))


if __name__ == "__main__":
    main()
