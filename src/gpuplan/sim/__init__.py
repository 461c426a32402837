"""Checking: the real step on fake tensors (``simulate``), on a CUDA GPU (``probe``), and calibration."""
