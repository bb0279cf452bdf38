"""gpu_text test suite: differential tests of every kernel (emulated CUDA == Numba == reference)."""
