"""CPU emulation of CUDA kernels (cuda_emu.h + emulator.py), used to test the project's .cu files without a GPU."""
