"""The extractive trainer's device path on the CPU (the code a CUDA run takes: tensors moved to the
model's device), its warm start from an int8 export (the weights dequantised exactly, the model
reading as the int8 graph does), and the fp16 weight parts a GPU machine sends back."""
import functools
import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from transformers import BertConfig

from ambigqa_train import train_extractive, weight_parts
from ambigqa_train.common import pick_device, prepared_batches
from ambigqa_train.export_onnx import export_extractive
from ambigqa_train.extractive import ExtractiveReader, encode, from_quantized_onnx, prepare_groups
from ambigqa_train.warm_start import load_cross_encoder_tokenizer

GROUPS = [
    ("who wrote the novel dracula", ("Dracula", "Dracula is an 1897 Gothic horror novel by Irish author Bram Stoker."), "Bram Stoker"),
    ("when did the titanic sink", ("Titanic", "RMS Titanic sank on 15 April 1912 in the North Atlantic Ocean."), "15 April 1912"),
    ("what is the capital of france", ("Paris", "Paris is the capital and most populous city of France."), "Paris"),
]


def groups_file(folder: Path) -> Path:
    """GROUPS as reader groups (reader-groups-train.jsonl's rows): each the others' passages as negatives."""
    data = folder / "groups.jsonl"
    with data.open("w") as f:
        for i, (q, (t, x), a) in enumerate(GROUPS):
            negatives = [{"title": GROUPS[(i + j) % 3][1][0], "text": GROUPS[(i + j) % 3][1][1]} for j in (1, 2)]
            f.write(json.dumps({"id": str(i), "source": "squad", "question": q, "answers": [a], "positive": {"title": t, "text": x}, "negatives": negatives}) + "\n")
    return data


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny reader exported as the shipped one is: int8 model_quantized.onnx, tokenizer, config."""
    d = tmp_path_factory.mktemp("extractive")
    torch.manual_seed(0)
    tok = load_cross_encoder_tokenizer()
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    ExtractiveReader(config).save_pretrained(d / "ckpt")
    tok.save_pretrained(d / "ckpt")
    export_extractive(d / "ckpt", d / "export", int8=True)
    return d


def test_pick_device() -> None:
    assert pick_device("cpu").type == "cpu"
    assert pick_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(SystemExit, match="not one of"):
        pick_device("tpu")


def test_int8_export_recovered_reads_as_the_int8_graph(exported: Path) -> None:
    model, tok = from_quantized_onnx(exported / "export")
    enc = encode(tok, [q for q, _, _ in GROUPS], [f"{t}: {x}" for _, (t, x), _ in GROUPS], 64)
    with torch.no_grad():
        ours = [t.numpy() for t in model.eval()(**enc.features)]
    session = ort.InferenceSession(str(exported / "export" / "model_quantized.onnx"), providers=["CPUExecutionProvider"])
    theirs = session.run(["start_logits", "end_logits", "relevance_logits"], {k: v.numpy() for k, v in enc.features.items()})
    fp32 = ExtractiveReader.from_pretrained(str(exported / "ckpt")).eval()
    with torch.no_grad():
        original = [t.numpy() for t in fp32(**enc.features)]
    mask = enc.features["attention_mask"].numpy().astype(bool)
    # The int8 graph also quantises activations, so the match is close, not exact; the weights are
    # the int8 ones: nearer the int8 graph's outputs than the fp32 model's are.
    for a, b, c in zip(ours[:2], theirs[:2], original[:2]):
        assert np.abs(np.where(mask, a - b, 0)).max() < 0.5 * max(1e-3, np.abs(np.where(mask, c - b, 0)).max()) or np.abs(np.where(mask, a - b, 0)).max() < 0.05


def test_train_steps_on_the_device_path_from_int8_then_parts_round_trip(exported: Path, tmp_path: Path) -> None:
    data = groups_file(tmp_path)
    cfg = {"out": str(tmp_path / "run"), "init_quantized": str(exported / "export"), "train_file": str(data), "max_len": 64, "words": 100,
           "negatives": 2, "batch_size": 2, "lr": 1e-3, "warmup": 1, "steps": 3, "log_every": 1, "save_every": 3, "device": "cpu"}
    result = train_extractive.train(cfg, 0)
    assert result["step"] == 3 and np.isfinite(result["loss"])
    # Batches tokenised by DataLoader workers are the same batches, in the same order (the loss
    # differs by dropout: the loader draws its seed from the same generator).
    in_workers = train_extractive.train({**cfg, "out": str(tmp_path / "workers"), "workers": 2}, 0)
    assert in_workers["step"] == 3 and np.isfinite(in_workers["loss"])
    tok = load_cross_encoder_tokenizer()
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    prepare = functools.partial(prepare_groups, tok, negatives=2, max_len=64, words=100)
    inline = list(prepared_batches(rows, 2, 0, 1, 5, prepare, 0))
    ahead = list(prepared_batches(rows, 2, 0, 1, 5, prepare, 2))
    assert len(inline) == len(ahead) == 4
    for a, b in zip(inline, ahead):
        assert torch.equal(a["features"]["input_ids"], b["features"]["input_ids"]) and a["spans"] == b["spans"]
    ckpt = tmp_path / "run" / "seed-0" / "checkpoint"
    parts = weight_parts.split(ckpt, tmp_path / "parts", 100_000)
    assert len(parts) > 1 and all(p.stat().st_size <= 100_000 for p in parts)
    weight_parts.join(tmp_path / "parts", tmp_path / "joined")
    a = ExtractiveReader.from_pretrained(str(ckpt)).state_dict()
    b = ExtractiveReader.from_pretrained(str(tmp_path / "joined")).state_dict()
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k].float(), b[k].float(), atol=1e-3 * max(1.0, float(a[k].abs().max()))), k
    (tmp_path / "parts" / parts[-1].name).unlink()
    with pytest.raises(SystemExit, match="a part is missing"):
        weight_parts.join(tmp_path / "parts", tmp_path / "broken")


def test_mpnet_reader_travels_as_int8_parts_trains_in_timed_calls_and_exports(tmp_path: Path) -> None:
    """The base-size reader's path on a GPU machine, on a tiny MPNet: the warm start goes there as
    int8 parts (weight_parts --int8), trains from them (init_checkpoint) in calls cut by
    max_seconds that resume, and its export is read back from the int8 graph as an MPNet reader."""
    from extractive_fixture import mpnet_tokenizer, tiny_mpnet

    from ambigqa_train.extractive import MPNetExtractiveReader

    torch.manual_seed(0)
    tok = mpnet_tokenizer(tmp_path / "tok")
    warm = tmp_path / "warm"
    tiny_mpnet(tok).save_pretrained(warm)
    tok.save_pretrained(warm)
    parts = weight_parts.split(warm, tmp_path / "parts", 20_000, int8=True)
    assert len(parts) > 1 and json.loads((tmp_path / "parts" / "parts.json").read_text())["weights"] == "int8"
    weight_parts.join(tmp_path / "parts", tmp_path / "joined")
    a, b = MPNetExtractiveReader.from_pretrained(str(warm)).state_dict(), MPNetExtractiveReader.from_pretrained(str(tmp_path / "joined")).state_dict()
    assert a.keys() == b.keys()
    for k in a:
        # One int8 step of the row's largest weight at most.
        assert torch.allclose(a[k], b[k], atol=float(a[k].abs().max()) / 127 * 0.51 + 1e-3), k

    data = groups_file(tmp_path)
    cfg = {"out": str(tmp_path / "run"), "init_checkpoint": str(tmp_path / "joined"), "train_file": str(data), "max_len": 64, "words": 100,
           "negatives": 2, "batch_size": 2, "lr": 1e-3, "warmup": 1, "steps": 3, "log_every": 1, "save_every": 100, "device": "cpu", "max_seconds": 0}
    first = train_extractive.train(cfg, 0)
    assert first["step"] == 1 and np.isfinite(first["loss"])  # out of time after one step, saved
    rest = train_extractive.train({**cfg, "max_seconds": 600}, 0)
    assert rest["step"] == 3 and np.isfinite(rest["loss"])  # resumed from step 1
    ckpt = tmp_path / "run" / "seed-0" / "checkpoint"
    export_extractive(ckpt, tmp_path / "export", int8=True)
    session = ort.InferenceSession(str(tmp_path / "export" / "model_quantized.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask"]
    model, recovered_tok = from_quantized_onnx(tmp_path / "export")
    assert isinstance(model, MPNetExtractiveReader) and recovered_tok.model_input_names == ["input_ids", "attention_mask"]
    enc = encode(recovered_tok, [q for q, _, _ in GROUPS], [f"{t}: {x}" for _, (t, x), _ in GROUPS], 64)
    assert recovered_tok.convert_ids_to_tokens(enc.features["input_ids"][0].tolist())[:1] == ["<s>"]
    with torch.no_grad():
        ours = model.eval()(**enc.features)[2].numpy()
    theirs = session.run(["relevance_logits"], {k: v.numpy() for k, v in enc.features.items()})[0]
    assert np.abs(ours - theirs).max() < 0.1
