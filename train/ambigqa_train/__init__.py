"""Training and ONNX export for ambigqa's seq2seq (SpanSeqGen, QD) and cross-encoder models."""
