// step_counter.cuh -- GT_STEP(): one unit of a thread's serial, data-dependent work.
//
// Kernels call GT_STEP() once per iteration of every loop whose trip count depends on the data
// (a walk along a row, a scan over a piece). On a GPU it compiles to nothing. Under the CPU
// emulator (tests/cuda_emulator/cuda_emu.h defines it first) it counts per thread, and the
// tests read the largest count of a launch to check that no thread's work grows with a row.
#pragma once

#ifndef GT_STEP
#define GT_STEP() ((void)0)
#endif
