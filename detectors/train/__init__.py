"""Training and export of the 福 detector (train extra: torch, onnx)."""
