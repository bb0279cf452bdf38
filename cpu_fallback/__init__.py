"""Numba twins of the CUDA kernels: one module per kernel family, same names and arguments as the
launch wrappers in ``gpu_text.cuda_ops`` (without the runtime). Parallel over strings."""
