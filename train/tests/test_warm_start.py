import torch

from ambigqa_train.warm_start import ANSWER_SEP, build_bart, build_cross_encoder, load_bert

SENTENCES = [
    "When did the Harry Potter movie come out?",
    "Dexter is an American crime drama television series that aired on Showtime from 2006 to 2013.",
]


def test_bart_encoder_equals_bert() -> None:
    model, tok = build_bart()
    bert = load_bert()
    model.eval()
    enc = tok(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        want = bert(input_ids=enc.input_ids, attention_mask=enc.attention_mask).last_hidden_state
        got = model.model.encoder(input_ids=enc.input_ids, attention_mask=enc.attention_mask).last_hidden_state
    mask = enc.attention_mask.bool()
    diff = (want[mask] - got[mask]).abs().max().item()
    assert diff < 1e-4, diff


def test_special_tokens() -> None:
    model, tok = build_bart()
    assert tok.convert_tokens_to_ids(ANSWER_SEP) == len(tok) - 1
    assert model.config.vocab_size == len(tok)
    assert model.config.decoder_start_token_id == tok.cls_token_id
    assert model.config.eos_token_id == tok.sep_token_id
    n = sum(p.numel() for p in model.parameters())
    assert 25e6 < n < 30e6, n


def test_cross_encoder_scores() -> None:
    model, tok = build_cross_encoder()
    model.eval()
    enc = tok([SENTENCES[0]], [SENTENCES[1]], return_tensors="pt")
    with torch.no_grad():
        assert model(**enc).logits.shape == (1, 1)
