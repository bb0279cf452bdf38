"""The CPU layer: Numba twins of the CUDA kernels, one module per kernel family, with the same names
and arguments as the launch wrappers in ``gpu_text.cuda_ops`` (without the runtime), plus the Numba
helpers both sides build on (each of those says in its docstring that it has no CUDA twin).

This package imports nothing from ``gpu_text`` (its modules import each other relatively), and
only ``gpu_text.backend`` imports it. Installed from a wheel it is ``gpu_text._cpu_fallback``.
"""
