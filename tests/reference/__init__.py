"""Slow, obvious Python references of every kernel, named like their CUDA and Numba twins."""
