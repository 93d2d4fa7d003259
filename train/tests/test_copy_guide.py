"""The copy pointer targets, the pointer loss and the readout initialisation."""
import math

import torch

from ambigqa_train.copy_guide import copy_pointers, edit_pointers, pointer_loss, readout_init
from ambigqa_train.train_seq2seq import encode
from ambigqa_train.warm_start import ANSWER_SEP, build_bart

SEP, ASEP = 102, 30522


def test_pointers_follow_each_answer_in_the_passages() -> None:
    # [CLS] q1 q2 [SEP] a b c d e [SEP]   labels: b c <SEP> e [SEP]   and an answer not in the input
    src = torch.tensor([[101, 7, 8, SEP, 11, 12, 13, 14, 15, SEP]])
    labels = torch.tensor([[12, 13, ASEP, 15, SEP, -100], [99, SEP, -100, -100, -100, -100]])
    ptr = copy_pointers(torch.cat([src, src]), labels, SEP, ASEP)
    assert ptr[0].tolist() == [5, 6, 7, 8, 9, -1]
    assert ptr[1].tolist() == [-1] * 6


def test_pointers_skip_question_tokens() -> None:
    src = torch.tensor([[101, 12, SEP, 11, 12, SEP]])
    labels = torch.tensor([[12, SEP]])
    assert copy_pointers(src, labels, SEP, ASEP)[0].tolist() == [4, 5]


def test_edit_pointers_copy_the_prompt_and_insert_from_the_evidence() -> None:
    # [CLS] when did x x come [SEP] ans [SEP] in 2017 [SEP]   rewrite: when did x in 2017 x new come [SEP]
    src = torch.tensor([[101, 1, 2, 3, 3, 4, SEP, 20, SEP, 30, 31, SEP]])
    labels = torch.tensor([[1, 2, 3, 30, 31, 3, 9, 4, SEP, -100]])
    ptr = edit_pointers(src, labels, SEP)[0].tolist()
    # kept tokens point at their aligned prompt position (the second x at the second x), the
    # inserted "in 2017" at the evidence, a word from nowhere at nothing, eos at the prompt's [SEP]
    assert ptr == [1, 2, 3, 9, 10, 4, -1, 5, 6, -1]


def test_pointer_loss_is_zero_on_target_and_log_n_when_uniform() -> None:
    ptr = torch.tensor([[2, -1]])
    one_hot = torch.zeros(1, 3, 2, 4)
    one_hot[:, :, :, 2] = 1
    assert pointer_loss(one_hot, ptr).item() < 1e-6
    uniform = torch.full((1, 3, 2, 4), 0.25)
    assert math.isclose(pointer_loss(uniform, ptr).item(), math.log(4), rel_tol=1e-5)
    assert pointer_loss(uniform, torch.full((1, 2), -1)).item() == 0.0


def test_readout_reads_tokens_from_encoder_states() -> None:
    model, tok = build_bart(2, seed=0)
    texts = [
        "Dracula is an 1897 Gothic horror novel by Irish author Bram Stoker.",
        "RMS Titanic sank on 15 April 1912 in the North Atlantic Ocean after striking an iceberg.",
        "Paris is the capital and most populous city of France, on the Seine.",
        "The Mona Lisa is a half-length portrait painting by the Italian artist Leonardo da Vinci.",
    ] * 8
    batches = [encode(tok, [{"input": t, "target": "x"} for t in texts[i : i + 8]], {"max_source_len": 32, "max_target_len": 4})
               for i in range(0, len(texts), 8)]
    assert readout_init(model, batches) > 0.5
    layer = model.model.decoder.layers[-1]
    assert layer.fc2.weight.abs().sum().item() == 0.0
    assert tok.convert_tokens_to_ids(ANSWER_SEP) == ASEP
