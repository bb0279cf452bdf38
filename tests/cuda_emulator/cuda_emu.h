// cuda_emu.h -- CUDA C kernels on the CPU, for gpu_text's tests on machines without a GPU.
//
// emulator.py compiles one generated translation unit with g++ -std=c++20:
//
//     #include "cuda_emu.h"          // this file
//     #include "<kernel file>.cu"    // unchanged CUDA source
//     <table of the file's extern "C" __global__ kernels>
//
// into a shared library and launches kernels through the C entry points at the end of this file.
//
// Execution model
//   * Every CUDA thread of a block is a fiber (a separate stack, switched cooperatively); all
//     fibers of a block run on one OS thread. A fiber runs until it reaches a barrier or a warp
//     intrinsic that other threads must also reach, then the next ready fiber runs.
//   * Because a block lives on one OS thread, `__shared__` can simply be `thread_local`: the
//     threads of a block see one copy, blocks running on other OS threads see their own.
//   * `extern __shared__` (dynamic shared memory) becomes `extern thread_local`; emulator.py
//     defines one thread-local buffer and makes every such name an alias of it, as on a GPU,
//     where all dynamic shared arrays of a kernel start at the same address.
//   * Several OS threads ("workers") may take blocks from a shared counter; blocks run in
//     increasing linear index order within a worker.
//   * Interleaved mode (`resident` > 0 at launch) models a GPU's resident set instead: up to
//     `resident` blocks are in flight at once, started in a seeded, locally shuffled order, and
//     their threads' steps interleave. Every resident block keeps an OS thread of its own (its
//     shared memory is thread_local), but a baton lets exactly one of them run at any time and
//     passes only at switch points, decided by one seeded generator, so a launch is as
//     deterministic as fibers on one OS thread. Switch points: atomics, `__ldcg`/`__ldcv`/
//     `__stcg`, `__threadfence`, `__syncthreads` and GT_STEP() hand the baton to a random other
//     block at a rate the block draws anew at each hand-over (one point in 2, 8 or 32); a
//     spinning `__nanosleep` always hands it over. At the first switch point after a block
//     changed global memory (an atomic or `__stcg`: a count, a flag) it stalls one time in
//     kStallAfterPublishOneIn: it runs again only when no other block can (the last stalled
//     first) or when one spins (which may be waiting for it). So a later tile overtakes an
//     earlier one, a block that waits for another's flag really waits, one that forgets to
//     wait reads what is there, and one that announces its result before writing it (counts
//     itself done, then stores) is seen without it. (With one rate for all and no stalls, the
//     block that started first nearly always stays ahead, and none of that shows.)
//     What it cannot model: memory is sequentially consistent (one runner at a time, every
//     write seen at once), so a missing `__threadfence` or `__ldcg` goes unnoticed; plain and
//     volatile loads are no switch points. A launch whose spinning threads make no progress for
//     kIdleSpinLimit spins in a row fails with a "deadlock" message.
//   * When no fiber of a block can run but some have not finished, the launch fails with a
//     "deadlock" message naming the barriers they wait at, instead of hanging. A __syncthreads
//     call at another file:line than the one the block's waiting threads called is reported
//     right away ("deadlock: divergent __syncthreads"): CUDA requires every thread of the block
//     to reach the same barrier, and counting arrivals alone would let such code pass.
//
// Semantics chosen where CUDA leaves things undefined (see also emulator.py's docstring)
//   * Threads that exited no longer count for __syncthreads and warp intrinsics (as on Volta+).
//   * A shuffle that reads a lane that did not take part (exited, or not in the mask) returns
//     the caller's own value, the same as reading outside the `width` segment.
//   * __activemask() returns the lanes that have not exited (no convergence tracking).
//   * Dynamic shared memory is filled with 0xCD bytes at the start of every block, so reading it
//     before writing gives garbage, as on a GPU. Static __shared__ variables are not poisoned.
//
// The header only works when included once, in the generated translation unit, after nothing
// else: it defines the C entry points and, on x86-64, the stack-switch routine.
#pragma once
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#error "cuda_emu.h emulates CUDA on the host; compile kernels for a GPU without it"
#endif

// C++'s <math.h> also brings the float overloads (exp(float), fabs(float), ...) into the global
// namespace, as CUDA's math API does; kernels call them unqualified.
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>  // printf in kernels
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <bit>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

// The hand-written switch saves only what the x86-64 System V ABI says a callee preserves and
// makes no system call (swapcontext saves the signal mask with two), which made a 64 x 1024-thread
// block scan ~8x faster. Elsewhere, or under AddressSanitizer (which understands swapcontext but
// not a foreign stack switch), or with -DCUDA_EMU_UCONTEXT, fibers use ucontext.
#if !defined(__x86_64__) || defined(CUDA_EMU_UCONTEXT) || defined(__SANITIZE_ADDRESS__)
#define CUDA_EMU_USE_UCONTEXT 1
#include <ucontext.h>
#else
#define CUDA_EMU_USE_UCONTEXT 0
#endif

// Lets a kernel (or a debugging aid in one) tell that it runs under emulation; kernels should
// not need it. __CUDA_ARCH__ mirrors device compilation for an H100/H200-class GPU (sm_90).
#define CUDA_EMU 1
#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 900
#endif

// ================================================================== CUDA qualifiers
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)  // checked at launch time from the kernel table instead
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ thread_local  // one copy per OS thread == per running block
// __restrict__ is a GNU keyword already.

// ================================================================== vector types
// Plain aggregates (no constructors) so that `__shared__ float2 x;` needs no dynamic
// initialisation; alignments follow CUDA's vector_types.h.
#define CUDA_EMU_VECTOR_TYPES(name, T, align2, align4)                                       \
    struct __attribute__((aligned(align2))) name##2 { T x, y; };                           \
    struct name##3 { T x, y, z; };                                                          \
    struct __attribute__((aligned(align4))) name##4 { T x, y, z, w; };                     \
    inline name##2 make_##name##2(T x, T y) { return name##2{x, y}; }                      \
    inline name##3 make_##name##3(T x, T y, T z) { return name##3{x, y, z}; }              \
    inline name##4 make_##name##4(T x, T y, T z, T w) { return name##4{x, y, z, w}; }
CUDA_EMU_VECTOR_TYPES(char, signed char, 2, 4)
CUDA_EMU_VECTOR_TYPES(uchar, unsigned char, 2, 4)
CUDA_EMU_VECTOR_TYPES(short, short, 4, 8)
CUDA_EMU_VECTOR_TYPES(ushort, unsigned short, 4, 8)
CUDA_EMU_VECTOR_TYPES(int, int, 8, 16)
CUDA_EMU_VECTOR_TYPES(uint, unsigned int, 8, 16)
CUDA_EMU_VECTOR_TYPES(longlong, long long, 16, 16)
CUDA_EMU_VECTOR_TYPES(ulonglong, unsigned long long, 16, 16)
CUDA_EMU_VECTOR_TYPES(float, float, 8, 16)
CUDA_EMU_VECTOR_TYPES(double, double, 16, 16)
#undef CUDA_EMU_VECTOR_TYPES

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

constexpr int warpSize = 32;

// ================================================================== emulator internals
namespace cuemu {

constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr size_t kMaxDynamicSharedBytes = 232448;  // 227 KiB: sm_90's per-block opt-in limit
constexpr unsigned char kSharedPoison = 0xCD;

// ------------------------------------------------------------------ context switching
#if CUDA_EMU_USE_UCONTEXT
struct Context {
    ucontext_t uc;
};
inline void switch_context(Context* save, Context* load) { swapcontext(&save->uc, &load->uc); }
inline void init_context(Context* c, char* stack, size_t size, void (*entry)()) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = nullptr;  // entry never returns
    makecontext(&c->uc, entry, 0);
}
#else
struct Context {
    void* sp;  // the suspended side's stack pointer; its registers are saved on that stack
};
// Saves the callee-saved state on the current stack, stores the stack pointer in *save_sp, loads
// new_sp and restores the state saved there. Defined in assembly at the end of this file.
extern "C" __attribute__((visibility("hidden"))) void cuemu_switch_stack(void** save_sp, void* new_sp);
inline void switch_context(Context* save, Context* load) { cuemu_switch_stack(&save->sp, load->sp); }

// Layout of the 56 bytes cuemu_switch_stack keeps below its return address.
struct SavedFrame {
    unsigned long long rbx, rbp, r12, r13, r14, r15;
    unsigned int mxcsr;
    unsigned short x87_control;
    unsigned short pad;
};
static_assert(sizeof(SavedFrame) == 56);

// Builds a stack that looks as if `entry` had called cuemu_switch_stack: the first switch to it
// restores zeroed registers and default floating-point control words, then `ret`urns into entry.
inline void init_context(Context* c, char* stack, size_t size, void (*entry)()) {
    auto top = reinterpret_cast<unsigned long long>(stack + size) & ~15ull;
    auto* slot = reinterpret_cast<unsigned long long*>(top);
    *--slot = 0;                                               // entry's own "return address"
    *--slot = reinterpret_cast<unsigned long long>(entry);     // consumed by `ret`; leaves rsp = 8 mod 16
    auto* frame = reinterpret_cast<SavedFrame*>(slot) - 1;
    *frame = SavedFrame{};
    frame->mxcsr = 0x1F80;         // all exceptions masked, round to nearest, denormals kept (like CUDA)
    frame->x87_control = 0x037F;   // default x87 control word
    c->sp = frame;
}
#endif

// ------------------------------------------------------------------ per-launch data
using Thunk = void (*)(void* fn, void* const* args);

constexpr unsigned kMaxResident = 64;
// Spins (__nanosleep) in a row, over all blocks, with no progress in between: a deadlock.
// Progress is a barrier, a warp intrinsic, GT_STEP(), an atomic that changed memory, a store or
// a thread's exit. A legitimate wait needs a few per resident block.
constexpr unsigned long long kIdleSpinLimit = 20000;
// One switch point in kStallAfterPublishOneIn right after a block changed global memory (an
// atomic, __stcg) stalls it (see switch_block).
constexpr unsigned kStallAfterPublishOneIn = 2;
// Blocks start in a random order within a window of the next kStartWindow unstarted ones.
constexpr unsigned kStartWindow = 64;

// Interleaved mode's state. Only the slot holding the baton touches it (go[] excepted), and the
// baton passes through go[]'s sequentially consistent atomics, which order everything else.
struct Interleave {
    unsigned slots = 0;  // resident blocks; 0: interleaving off
    std::atomic<unsigned> go[kMaxResident];  // go[s] == 1: slot s may take the baton
    bool alive[kMaxResident];
    // Slot s's block is stalled since stall number stalled_at[s] (0: it is not), until no other
    // block can run (the last stalled goes first) or a block spins.
    unsigned long long stalled_at[kMaxResident];
    unsigned long long stalls = 0;
    bool published[kMaxResident];  // slot s's block just changed global memory with an atomic or __stcg
    unsigned switch_one_in[kMaxResident];  // the rate at which slot s's block hands the baton over
    unsigned alive_count = 0;
    unsigned long long rng = 1;
    unsigned long long window[kStartWindow];  // unstarted blocks the next start picks from
    unsigned window_count = 0;
    unsigned long long next_unseen = 0;  // blocks below it entered the window
    unsigned long long idle_spins = 0;
};

struct Launch {
    Thunk thunk;
    void* fn;
    void* const* args;
    dim3 grid, block;
    unsigned nthreads;
    unsigned long long nblocks;
    size_t dynamic_shared;
    unsigned long long seed;  // 0: run ready threads in order; else pick them at random
    size_t stack_bytes;
    std::atomic<unsigned long long> next_block{0};
    std::atomic<bool> failed{false};
    std::atomic<bool> message_taken{false};
    // The largest GT_STEP() count of any thread of the launch (see GT_STEP below).
    std::atomic<unsigned long long> max_steps{0};
    char* message;
    size_t message_size;
    Interleave interleave;

    // Keeps the first error of the launch (several workers may fail at once).
    void fail(const char* text) {
        if (!message_taken.exchange(true)) snprintf(message, message_size, "%s", text);
        failed.store(true);
    }
};

// ------------------------------------------------------------------ warps, blocks, fibers
enum class WarpOp : unsigned char {
    Sync, Shuffle, Vote, ReduceAdd, ReduceMinS, ReduceMaxS, ReduceMinU, ReduceMaxU,
    ReduceAnd, ReduceOr, ReduceXor, MatchAny, MatchAll,
};
inline const char* warp_op_name(WarpOp op) {
    static const char* const names[] = {
        "__syncwarp", "__shfl*_sync", "__ballot/__any/__all_sync", "__reduce_add_sync",
        "__reduce_min_sync", "__reduce_max_sync", "__reduce_min_sync", "__reduce_max_sync",
        "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync", "__match_any_sync",
        "__match_all_sync",
    };
    return names[static_cast<int>(op)];
}

// A warp intrinsic some lanes have reached: it completes when every non-exited lane named in
// `mask` has reached it (with that same mask).
struct WarpGroup {
    unsigned mask;
    unsigned arrived;
    WarpOp op;
    const char* file;
    int line;
};

struct Warp {
    unsigned index;
    unsigned live;          // lanes that exist and have not exited
    unsigned groups_used;   // bit g: groups[g] is pending
    WarpGroup groups[32];   // a lane is in at most one group, so 32 always suffice
    // Per lane: what it brought to its pending group and what it gets back.
    unsigned long long value[32];
    int source[32];         // shuffles: the lane to read from
    unsigned long long result[32];
};

struct Block;

struct Fiber {
    Context context;
    uint3 index;      // threadIdx
    unsigned linear;  // x + y * blockDim.x + z * blockDim.x * blockDim.y
    unsigned lane;
    Warp* warp;
    Block* block;
    bool done;
    unsigned long long steps;  // GT_STEP() calls of this thread
};

// xorshift64*: a number in [0, n) (n > 0); *state must not be 0.
inline unsigned random_below(unsigned long long* state, unsigned long long n) {
    *state ^= *state >> 12; *state ^= *state << 25; *state ^= *state >> 27;
    return static_cast<unsigned>(((*state * 0x2545F4914F6CDD1Dull) >> 33) % n);
}

// Fibers that can run. FIFO for the default, reproducible schedule; random picks with a seed.
struct ReadyQueue {
    unsigned* items = nullptr;
    unsigned capacity = 0, head = 0, count = 0;
    void reset() { head = count = 0; }
    void push(unsigned i) { items[(head + count++) % capacity] = i; }
    unsigned pop(unsigned long long* rng) {
        unsigned pick = 0;
        if (rng) {  // any ready fiber may go next
            pick = random_below(rng, count);
            std::swap(items[head], items[(head + pick) % capacity]);
        }
        unsigned i = items[head];
        head = (head + 1) % capacity;
        --count;
        return i;
    }
};

struct Block {
    uint3 index;
    dim3 dim, grid;
    unsigned nthreads;
    unsigned live;  // threads that have not exited
    Fiber* fibers;
    Warp* warps;
    ReadyQueue ready;
    unsigned long long rng;  // 0: in-order schedule
    // __syncthreads: the current generation and the outcome of the last completed one.
    unsigned barrier_arrived, barrier_true;
    const char* barrier_file;
    int barrier_line;
    unsigned* barrier_waiters;
    unsigned last_arrived, last_true;
    // A thread that found an error stops the whole block.
    bool failed;
    char message[1536];
};

// The OS thread's scheduler and the fiber it is running. `static`: one translation unit only.
static thread_local Context tl_scheduler;
static thread_local Fiber* tl_current = nullptr;
static thread_local Launch* tl_launch = nullptr;
// Interleaved mode: this OS thread's resident slot; kNoSlot otherwise.
constexpr unsigned kNoSlot = ~0u;
static thread_local unsigned tl_slot = kNoSlot;
// This library's thread-local block on this OS thread: every __shared__ variable lies in it.
static thread_local const char* tl_tls_begin = nullptr;
static thread_local const char* tl_tls_end = nullptr;

inline int find_own_tls(dl_phdr_info* info, size_t, void*) {
    const auto here = reinterpret_cast<ElfW(Addr)>(&find_own_tls);
    bool mine = false;
    const ElfW(Phdr)* tls = nullptr;
    for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& h = info->dlpi_phdr[i];
        const ElfW(Addr) begin = info->dlpi_addr + h.p_vaddr;
        if (h.p_type == PT_LOAD && here >= begin && here < begin + h.p_memsz) mine = true;
        if (h.p_type == PT_TLS) tls = &h;
    }
    if (!mine || !tls || !info->dlpi_tls_data) return 0;
    tl_tls_begin = static_cast<const char*>(info->dlpi_tls_data);
    tl_tls_end = tl_tls_begin + tls->p_memsz;
    return 1;
}
// Whether p is shared memory (not global): only a block's own threads see it.
inline bool is_shared_memory(const void* p) {
    const char* c = static_cast<const char*>(p);
    return c >= tl_tls_begin && c < tl_tls_end;
}

// ------------------------------------------------------------------ fiber stacks
// One mapping per OS thread, reused across blocks and launches, with an inaccessible page below
// every stack so that an overflow faults instead of silently corrupting the neighbour's stack.
struct StackPool {
    char* base = nullptr;
    size_t slot_bytes = 0, mapped = 0, usable = 0;
    unsigned count = 0;

    bool ensure(unsigned n, size_t stack_bytes) {
        if (n <= count && stack_bytes == usable) return true;
        release();
        const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        usable = (stack_bytes + page - 1) / page * page;
        slot_bytes = usable + page;
        n = (n + 31) / 32 * 32;
        void* p = mmap(nullptr, slot_bytes * n, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return false;
        base = static_cast<char*>(p);
        mapped = slot_bytes * n;
        count = n;
        for (unsigned i = 0; i < n; ++i) mprotect(base + i * slot_bytes, page, PROT_NONE);
        return true;
    }
    char* stack(unsigned i) const { return base + i * slot_bytes + (slot_bytes - usable); }
    void release() {
        if (base) munmap(base, mapped);
        base = nullptr;
        count = 0;
        usable = 0;
    }
    ~StackPool() { release(); }
};
static thread_local StackPool tl_stacks;

// ------------------------------------------------------------------ scheduling primitives
inline bool same_site(const char* file_a, int line_a, const char* file_b, int line_b) {
    return line_a == line_b && (file_a == file_b || strcmp(file_a, file_b) == 0);
}
inline const char* base_name(const char* path) {
    const char* slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

// Suspends the running fiber until someone puts it back on the ready queue.
inline void park() {
    switch_context(&tl_current->context, &tl_scheduler);
    // Other fibers ran meanwhile: nothing read from memory before the switch is still valid.
    asm volatile("" ::: "memory");
}

inline void make_ready(Block& b, const Fiber* f) { b.ready.push(f->linear); }

// Ends the block with an error: the scheduler sees `failed` and abandons all fibers.
[[noreturn]] __attribute__((format(printf, 1, 2))) inline void fail(const char* format, ...) {
    Block& b = *tl_current->block;
    va_list ap;
    va_start(ap, format);
    vsnprintf(b.message, sizeof b.message, format, ap);
    va_end(ap);
    b.failed = true;
    switch_context(&tl_current->context, &tl_scheduler);
    abort();  // a failed block is never resumed
}

// With a random schedule the thread that completes a barrier must not always be the first to
// continue, so it queues itself behind the others it woke.
inline void reschedule_self_if_random(Block& b, Fiber* self) {
    if (self && b.rng) {
        make_ready(b, self);
        park();
    }
}

// ------------------------------------------------------------------ interleaved blocks
// Gives the baton to another live slot, picked at random, and (unless `leaving`, when this slot has
// no block left to run) waits for it to come back. Returns at once when no other slot is live.
inline void take_baton(Interleave& in, unsigned self) {
    while (in.go[self].exchange(0) == 0) in.go[self].wait(0);
}

inline void hand_over(Interleave& in, unsigned self, bool leaving) {
    if (leaving) {
        in.alive[self] = false;
        --in.alive_count;
    }
    // A random other slot whose block is not stalled, else (when this one leaves) the one stalled last.
    unsigned ready = 0, target = kMaxResident;
    for (unsigned s = 0; s < in.slots; ++s) {
        if (s == self || !in.alive[s]) continue;
        if (!in.stalled_at[s]) ++ready;
        else if (target == kMaxResident || in.stalled_at[s] > in.stalled_at[target]) target = s;
    }
    if (ready) {
        unsigned pick = random_below(&in.rng, ready);
        for (target = 0;; ++target)
            if (target != self && in.alive[target] && !in.stalled_at[target] && pick-- == 0) break;
    } else if (!leaving || target == kMaxResident) {
        in.stalled_at[self] = 0;  // no other block is ready: this one goes on (it stalled last)
        return;
    }
    in.stalled_at[target] = 0;
    in.go[target].store(1);
    in.go[target].notify_one();
    if (!leaving) take_baton(in, self);
}

// A block's rate of switch points that hand the baton over: one in 2, 8 or 32.
inline unsigned draw_rate(Interleave& in) { return 2u << (2 * random_below(&in.rng, 3)); }

// Inside a fiber: lets other resident blocks run, then carries on (or stops, if one of them failed).
// The block comes back at a new rate; `stall` holds it back at this point until a block spins or no
// other can run, as a GPU may hold a block back anywhere.
inline void switch_block(bool stall) {
    Interleave& in = tl_launch->interleave;
    in.switch_one_in[tl_slot] = draw_rate(in);
    in.stalled_at[tl_slot] = stall ? ++in.stalls : 0;
    hand_over(in, tl_slot, false);
    if (tl_launch->failed.load()) fail("stopped: another block of the launch failed");
}

// A switch point (see the header comment): with interleaving on, hands the baton over at random.
inline void maybe_switch_block() {
    if (tl_slot == kNoSlot) return;
    Interleave& in = tl_launch->interleave;
    if (in.published[tl_slot]) {  // where a publish that comes before its data would show
        in.published[tl_slot] = false;
        if (random_below(&in.rng, kStallAfterPublishOneIn) == 0) return switch_block(true);
    }
    if (random_below(&in.rng, in.switch_one_in[tl_slot]) == 0) switch_block(false);
}

// Something changed that a spinning thread may be waiting for.
inline void note_progress() {
    if (tl_slot != kNoSlot) tl_launch->interleave.idle_spins = 0;
}

// A thread spins (__nanosleep): other blocks, then the other threads of its own block, run first.
inline void spin() {
    if (tl_slot != kNoSlot) {
        Interleave& in = tl_launch->interleave;
        if (++in.idle_spins > kIdleSpinLimit) {
            const Fiber& f = *tl_current;
            fail("deadlock: %llu spin-waits (__nanosleep) in a row over the %u resident blocks without progress; "
                 "thread (%u,%u,%u) of block (%u,%u,%u) spins for a flag no block will set (a wait on a block "
                 "that has not started, or on itself?)",
                 kIdleSpinLimit, in.slots, f.index.x, f.index.y, f.index.z, f.block->index.x, f.block->index.y,
                 f.block->index.z);
        }
        for (unsigned s = 0; s < in.slots; ++s) in.stalled_at[s] = 0;  // it may be waiting for them
        switch_block(false);
    }
    make_ready(*tl_current->block, tl_current);
    park();
}

// ------------------------------------------------------------------ __syncthreads
inline void release_block_barrier(Block& b, Fiber* self) {
    b.last_arrived = b.barrier_arrived;
    b.last_true = b.barrier_true;
    for (unsigned i = 0; i < b.barrier_arrived; ++i)
        if (!self || b.barrier_waiters[i] != self->linear) b.ready.push(b.barrier_waiters[i]);
    b.barrier_arrived = b.barrier_true = 0;
    reschedule_self_if_random(b, self);
}

// Returns how many arriving threads had a non-zero predicate; *arrived gets how many arrived.
inline unsigned block_barrier(int predicate, const char* file, int line, unsigned* arrived) {
    note_progress();
    maybe_switch_block();
    Fiber* self = tl_current;
    Block& b = *self->block;
    if (b.barrier_arrived == 0) {
        b.barrier_file = file;
        b.barrier_line = line;
    } else if (!same_site(b.barrier_file, b.barrier_line, file, line)) {
        fail("deadlock: divergent __syncthreads in block (%u,%u,%u): thread (%u,%u,%u) reached the barrier at "
             "%s:%d while %u thread(s) wait at the barrier at %s:%d (a barrier must be reached by all threads "
             "of the block at the same place)",
             b.index.x, b.index.y, b.index.z, self->index.x, self->index.y, self->index.z, base_name(file), line,
             b.barrier_arrived, base_name(b.barrier_file), b.barrier_line);
    }
    b.barrier_true += predicate != 0;
    b.barrier_waiters[b.barrier_arrived++] = self->linear;
    if (b.barrier_arrived == b.live)
        release_block_barrier(b, self);
    else
        park();
    *arrived = b.last_arrived;  // a new generation cannot complete before this thread joins it
    return b.last_true;
}

// ------------------------------------------------------------------ warp intrinsics
inline void complete_warp_group(Block& b, Warp& w, unsigned slot, Fiber* self) {
    WarpGroup& g = w.groups[slot];
    const unsigned members = g.arrived;
    auto each_member = [members](auto&& body) {
        for (unsigned m = members; m; m &= m - 1) body(static_cast<unsigned>(std::countr_zero(m)));
    };
    switch (g.op) {
    case WarpOp::Sync:
        break;
    case WarpOp::Shuffle:
        each_member([&](unsigned lane) {
            const int src = w.source[lane];
            const bool took_part = src >= 0 && src < 32 && ((members >> src) & 1u);
            w.result[lane] = took_part ? w.value[src] : w.value[lane];
        });
        break;
    case WarpOp::Vote: {
        unsigned ballot = 0;
        each_member([&](unsigned lane) { ballot |= (w.value[lane] != 0) << lane; });
        each_member([&](unsigned lane) { w.result[lane] = ballot | (static_cast<unsigned long long>(members) << 32); });
        break;
    }
    case WarpOp::MatchAny:
        each_member([&](unsigned lane) {
            unsigned same = 0;
            each_member([&](unsigned other) { same |= (w.value[other] == w.value[lane]) << other; });
            w.result[lane] = same;
        });
        break;
    case WarpOp::MatchAll: {
        bool all_equal = true;
        const unsigned first = static_cast<unsigned>(std::countr_zero(members));
        each_member([&](unsigned lane) { all_equal = all_equal && w.value[lane] == w.value[first]; });
        each_member([&](unsigned lane) { w.result[lane] = all_equal ? members : 0u; });
        break;
    }
    default: {  // the 32-bit reductions
        const unsigned first = static_cast<unsigned>(std::countr_zero(members));
        unsigned acc = static_cast<unsigned>(w.value[first]);
        each_member([&](unsigned lane) {
            const unsigned v = static_cast<unsigned>(w.value[lane]);
            if (lane == first) return;
            switch (g.op) {
            case WarpOp::ReduceAdd: acc += v; break;
            case WarpOp::ReduceMinS: acc = static_cast<int>(v) < static_cast<int>(acc) ? v : acc; break;
            case WarpOp::ReduceMaxS: acc = static_cast<int>(v) > static_cast<int>(acc) ? v : acc; break;
            case WarpOp::ReduceMinU: acc = v < acc ? v : acc; break;
            case WarpOp::ReduceMaxU: acc = v > acc ? v : acc; break;
            case WarpOp::ReduceAnd: acc &= v; break;
            case WarpOp::ReduceOr: acc |= v; break;
            case WarpOp::ReduceXor: acc ^= v; break;
            default: break;
            }
        });
        each_member([&](unsigned lane) { w.result[lane] = acc; });
    }
    }
    w.groups_used &= ~(1u << slot);
    each_member([&](unsigned lane) {
        if (!self || self->warp != &w || self->lane != lane) b.ready.push(w.index * 32 + lane);
    });
    reschedule_self_if_random(b, self);
}

// The rendezvous behind every *_sync warp intrinsic: waits until all non-exited lanes of `mask`
// arrive, then returns this lane's result (computed by the last lane to arrive).
inline unsigned long long warp_collective(WarpOp op, unsigned mask, unsigned long long value, int source,
                                          const char* file, int line) {
    note_progress();
    Fiber* self = tl_current;
    Block& b = *self->block;
    Warp& w = *self->warp;
    const unsigned bit = 1u << self->lane;
    if (!(mask & bit))
        fail("%s at %s:%d: thread (%u,%u,%u) (warp %u, lane %u) passed mask 0x%08x, which does not include "
             "its own lane",
             warp_op_name(op), base_name(file), line, self->index.x, self->index.y, self->index.z, w.index,
             self->lane, mask);
    unsigned slot = 32;
    for (unsigned used = w.groups_used; used; used &= used - 1) {
        const unsigned g = static_cast<unsigned>(std::countr_zero(used));
        if (w.groups[g].mask == mask) { slot = g; break; }
    }
    if (slot == 32) {
        slot = static_cast<unsigned>(std::countr_zero(~w.groups_used));
        w.groups_used |= 1u << slot;
        w.groups[slot] = WarpGroup{mask, 0, op, file, line};
    } else if (w.groups[slot].op != op) {
        const WarpGroup& g = w.groups[slot];
        fail("deadlock: divergent warp intrinsics in block (%u,%u,%u), warp %u: lane %u calls %s at %s:%d while "
             "lanes 0x%08x wait in %s at %s:%d with the same mask 0x%08x",
             b.index.x, b.index.y, b.index.z, w.index, self->lane, warp_op_name(op), base_name(file), line,
             g.arrived, warp_op_name(g.op), base_name(g.file), g.line, mask);
    }
    WarpGroup& g = w.groups[slot];
    w.value[self->lane] = value;
    w.source[self->lane] = source;
    g.arrived |= bit;
    if (g.arrived == (g.mask & w.live))
        complete_warp_group(b, w, slot, self);
    else
        park();
    return w.result[self->lane];
}

// A thread returned from the kernel: barriers it will never reach may now be complete.
inline void thread_exit(Fiber* f) {
    Block& b = *f->block;
    Warp& w = *f->warp;
    f->done = true;
    note_progress();
    // The launch keeps the largest per-thread step count (workers may finish blocks at once).
    std::atomic<unsigned long long>& most = tl_launch->max_steps;
    for (unsigned long long seen = most.load(); seen < f->steps && !most.compare_exchange_weak(seen, f->steps);) {}
    --b.live;
    w.live &= ~(1u << f->lane);
    if (b.barrier_arrived && b.barrier_arrived == b.live) release_block_barrier(b, nullptr);
    for (unsigned used = w.groups_used; used; used &= used - 1) {
        const unsigned g = static_cast<unsigned>(std::countr_zero(used));
        if (w.groups[g].arrived == (w.groups[g].mask & w.live)) complete_warp_group(b, w, g, nullptr);
    }
}

// First code every fiber runs (entered by a `ret` or makecontext, never returns).
inline void fiber_entry() {
    Fiber* self = tl_current;
    tl_launch->thunk(tl_launch->fn, tl_launch->args);
    thread_exit(self);
    switch_context(&self->context, &tl_scheduler);
    abort();  // a finished fiber is never resumed
}

// ------------------------------------------------------------------ block scheduler
// Small bounded appender for the deadlock report.
struct Text {
    char* buf;
    size_t size, used = 0;
    __attribute__((format(printf, 2, 3))) void add(const char* format, ...) {
        if (used + 1 >= size) return;
        va_list ap;
        va_start(ap, format);
        const int n = vsnprintf(buf + used, size - used, format, ap);
        va_end(ap);
        if (n > 0) used = used + static_cast<size_t>(n) < size ? used + static_cast<size_t>(n) : size - 1;
    }
};

inline void describe_deadlock(Block& b) {
    Text t{b.message, sizeof b.message};
    t.add("deadlock in block (%u,%u,%u): %u of %u threads wait for barriers that can never complete:",
          b.index.x, b.index.y, b.index.z, b.live, b.nthreads);
    if (b.barrier_arrived)
        t.add(" %u at __syncthreads (%s:%d);", b.barrier_arrived, base_name(b.barrier_file), b.barrier_line);
    const unsigned nwarps = (b.nthreads + 31) / 32;
    for (unsigned wi = 0; wi < nwarps; ++wi) {
        const Warp& w = b.warps[wi];
        for (unsigned used = w.groups_used; used; used &= used - 1) {
            const WarpGroup& g = w.groups[std::countr_zero(used)];
            t.add(" warp %u lanes 0x%08x at %s (%s:%d, mask 0x%08x) waiting for lanes 0x%08x;", wi, g.arrived,
                  warp_op_name(g.op), base_name(g.file), g.line, g.mask, (g.mask & w.live) & ~g.arrived);
        }
    }
    t.add(" (divergent __syncthreads/__syncwarp, or a warp intrinsic whose mask names lanes that never reach it?)");
}

// Runs one block to completion. False (with b.message set) when it failed.
inline bool run_block(Launch& L, Block& b, unsigned long long linear_block) {
    const dim3 g = L.grid, d = L.block;
    b.index = uint3{static_cast<unsigned>(linear_block % g.x), static_cast<unsigned>(linear_block / g.x % g.y),
                    static_cast<unsigned>(linear_block / (static_cast<unsigned long long>(g.x) * g.y))};
    b.dim = d;
    b.grid = g;
    b.nthreads = b.live = L.nthreads;
    b.barrier_arrived = b.barrier_true = b.last_arrived = b.last_true = 0;
    b.failed = false;
    b.message[0] = '\0';
    b.ready.reset();
    b.rng = L.seed ? (L.seed ^ (linear_block * 0x9E3779B97F4A7C15ull)) | 1ull : 0;

    const unsigned nwarps = (b.nthreads + 31) / 32;
    for (unsigned wi = 0; wi < nwarps; ++wi) {
        Warp& w = b.warps[wi];
        const unsigned lanes = b.nthreads - wi * 32 < 32 ? b.nthreads - wi * 32 : 32;
        w.index = wi;
        w.live = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
        w.groups_used = 0;
    }
    for (unsigned i = 0; i < b.nthreads; ++i) {
        Fiber& f = b.fibers[i];
        f.index = uint3{i % d.x, i / d.x % d.y, i / (d.x * d.y)};
        f.linear = i;
        f.lane = i % 32;
        f.warp = &b.warps[i / 32];
        f.block = &b;
        f.done = false;
        f.steps = 0;
        init_context(&f.context, tl_stacks.stack(i), tl_stacks.usable, fiber_entry);
        b.ready.push(i);
    }

    unsigned long long* rng = b.rng ? &b.rng : nullptr;
    while (b.ready.count) {
        tl_current = &b.fibers[b.ready.pop(rng)];
        switch_context(&tl_scheduler, &tl_current->context);
        if (b.failed) break;
    }
    tl_current = nullptr;
    if (!b.failed && b.live) {
        describe_deadlock(b);
        b.failed = true;
    }
    return !b.failed;
}

// Defined, with every `extern __shared__` name of the kernel file as an alias, by a generated file.
extern "C" __attribute__((visibility("hidden"))) thread_local unsigned char cuemu_dynamic_shared[];

// The next block to start, or L.nblocks when all have started. Interleaved: a random one of the
// next kStartWindow unstarted blocks (the baton holder asks); else the next in index order.
inline unsigned long long claim_block(Launch& L) {
    if (tl_slot == kNoSlot) {
        const unsigned long long bi = L.next_block.fetch_add(1);
        return bi < L.nblocks ? bi : L.nblocks;
    }
    Interleave& in = L.interleave;
    while (in.window_count < kStartWindow && in.next_unseen < L.nblocks)
        in.window[in.window_count++] = in.next_unseen++;
    if (in.window_count == 0) return L.nblocks;
    const unsigned pick = random_below(&in.rng, in.window_count);
    const unsigned long long bi = in.window[pick];
    in.window[pick] = in.window[--in.window_count];
    in.switch_one_in[tl_slot] = draw_rate(in);
    return bi;
}

// One worker (or resident slot): takes blocks until none are left or some worker failed.
inline void run_blocks(Launch& L) {
    const unsigned n = L.nthreads;
    if (!tl_stacks.ensure(n, L.stack_bytes)) {
        L.fail("could not map fiber stacks");
        return;
    }
    Block* b = new (std::nothrow) Block;
    Fiber* fibers = new (std::nothrow) Fiber[n];
    Warp* warps = new (std::nothrow) Warp[(n + 31) / 32];
    unsigned* waiters = new (std::nothrow) unsigned[n];
    unsigned* queue = new (std::nothrow) unsigned[n];
    if (b && fibers && warps && waiters && queue) {
        b->fibers = fibers;
        b->warps = warps;
        b->barrier_waiters = waiters;
        b->ready.items = queue;
        b->ready.capacity = n;
        tl_launch = &L;
        while (!L.failed.load(std::memory_order_relaxed)) {
            const unsigned long long bi = claim_block(L);
            if (bi >= L.nblocks) break;
            if (L.dynamic_shared) memset(cuemu_dynamic_shared, kSharedPoison, L.dynamic_shared);
            if (!run_block(L, *b, bi)) {
                L.fail(b->message);
                break;
            }
        }
        tl_launch = nullptr;
    } else {
        L.fail("out of memory setting up a block");
    }
    delete[] queue;
    delete[] waiters;
    delete[] warps;
    delete[] fibers;
    delete b;
}

inline void* worker_main(void* launch) {
    run_blocks(*static_cast<Launch*>(launch));
    return nullptr;
}

// A resident slot of interleaved mode: runs blocks while it holds the baton, then leaves.
struct SlotStart {
    Launch* launch;
    unsigned slot;
};
inline void run_slot(Launch& L, unsigned slot) {
    take_baton(L.interleave, slot);
    tl_slot = slot;  // also makes sure this thread's thread-local block exists before it is looked up
    dl_iterate_phdr(find_own_tls, nullptr);
    run_blocks(L);
    tl_slot = kNoSlot;
    hand_over(L.interleave, slot, true);
}
inline void* slot_main(void* start) {
    const SlotStart s = *static_cast<SlotStart*>(start);
    run_slot(*s.launch, s.slot);
    return nullptr;
}

// Interleaved launch: slot 0 is the calling thread, which holds the baton first.
inline void run_interleaved(Launch& L, unsigned resident, unsigned long long seed) {
    Interleave& in = L.interleave;
    unsigned slots = resident < kMaxResident ? resident : kMaxResident;
    if (slots > L.nblocks) slots = static_cast<unsigned>(L.nblocks);
    in.rng = (seed * 0x9E3779B97F4A7C15ull) | 1ull;
    for (unsigned s = 0; s < kMaxResident; ++s) {
        in.go[s].store(0);
        in.alive[s] = false;
        in.switch_one_in[s] = 2;  // until the slot starts a block
        in.stalled_at[s] = 0;
        in.published[s] = false;
    }
    pthread_t threads[kMaxResident];
    SlotStart starts[kMaxResident];
    unsigned started = 1;  // slots that exist: the OS may refuse threads, fewer slots then
    for (; started < slots; ++started) {
        starts[started] = SlotStart{&L, started};
        if (pthread_create(&threads[started], nullptr, slot_main, &starts[started]) != 0) break;
    }
    in.slots = started;
    in.alive_count = started;
    for (unsigned s = 0; s < started; ++s) in.alive[s] = true;
    in.go[0].store(1);
    run_slot(L, 0);
    for (unsigned s = 1; s < started; ++s) pthread_join(threads[s], nullptr);
}

// ------------------------------------------------------------------ kernel table
// Type codes of kernel parameters, read by emulator.py to check arguments:
// p pointer, i signed integer, u unsigned integer, f floating point, b bool, V anything else.
template <class T>
constexpr char param_code() {
    if constexpr (std::is_pointer_v<T>) return 'p';
    else if constexpr (std::is_same_v<T, bool>) return 'b';
    else if constexpr (std::is_enum_v<T>) return param_code<std::underlying_type_t<T>>();
    else if constexpr (std::is_integral_v<T>) return std::is_signed_v<T> ? 'i' : 'u';
    else if constexpr (std::is_floating_point_v<T>) return 'f';
    else return 'V';
}

template <class... A>
struct Signature {
    static constexpr char codes[] = {param_code<A>()..., '\0'};
    static constexpr unsigned sizes[] = {static_cast<unsigned>(sizeof(A))..., 0u};
};

// Arguments arrive as pointers to their bytes (CUDA's kernelParams convention); memcpy because
// the Python side's buffers carry no alignment promise.
template <class T>
inline T load_argument(void* p) {
    T value;
    memcpy(&value, p, sizeof(T));
    return value;
}
template <class... A, size_t... I>
inline void call_kernel(void (*kernel)(A...), void* const* args, std::index_sequence<I...>) {
    kernel(load_argument<A>(args[I])...);
}
template <class... A>
inline void kernel_thunk(void* fn, void* const* args) {
    call_kernel(reinterpret_cast<void (*)(A...)>(fn), args, std::index_sequence_for<A...>{});
}

struct KernelEntry {
    const char* name;
    Thunk thunk;
    void* fn;
    unsigned nparams;
    const char* codes;
    const unsigned* sizes;
    unsigned max_threads;  // from __launch_bounds__, 0 when the kernel has none
};

template <class... A>
inline KernelEntry kernel_entry(const char* name, void (*kernel)(A...), unsigned max_threads) {
    static_assert((std::is_trivially_copyable_v<A> && ...), "kernel parameters must be trivially copyable");
    return KernelEntry{name, &kernel_thunk<A...>, reinterpret_cast<void*>(kernel), sizeof...(A),
                       Signature<A...>::codes, Signature<A...>::sizes, max_threads};
}

}  // namespace cuemu

// Defined by the generated translation unit, after the kernels (the last entry is a sentinel).
extern const cuemu::KernelEntry cuemu_kernel_table[];
extern const unsigned cuemu_kernel_table_size;

// ================================================================== CUDA built-in variables
#define threadIdx (::cuemu::tl_current->index)
#define blockIdx (::cuemu::tl_current->block->index)
#define blockDim (::cuemu::tl_current->block->dim)
#define gridDim (::cuemu::tl_current->block->grid)

// ================================================================== per-thread step counter
// GT_STEP() counts one unit of a thread's serial work (one iteration of a loop whose length
// depends on the data). The emulator keeps, per launch, the largest count of any thread
// (cuemu_last_launch_steps, EmulatedKernel.last_max_steps), so tests can assert that no thread
// runs a loop that grows with a row. Kernels get the no-op definition for NVRTC from
// cuda/step_counter.cuh, which leaves this one in place.
// Interleaved, a step is also progress and a switch point.
namespace cuemu {
inline void count_step() {
    ++tl_current->steps;
    note_progress();
    maybe_switch_block();
}
}  // namespace cuemu
#define GT_STEP() (::cuemu::count_step())

// ================================================================== synchronisation
// The source location (default arguments, evaluated at the call site) identifies the barrier,
// for the divergence check and for deadlock reports.
#define CUDA_EMU_SITE const char *cuemu_file = __builtin_FILE(), int cuemu_line = __builtin_LINE()

inline void __syncthreads(CUDA_EMU_SITE) {
    unsigned arrived;
    ::cuemu::block_barrier(0, cuemu_file, cuemu_line, &arrived);
}
inline int __syncthreads_count(int predicate, CUDA_EMU_SITE) {
    unsigned arrived;
    return static_cast<int>(::cuemu::block_barrier(predicate, cuemu_file, cuemu_line, &arrived));
}
inline int __syncthreads_and(int predicate, CUDA_EMU_SITE) {
    unsigned arrived;
    const unsigned count = ::cuemu::block_barrier(predicate, cuemu_file, cuemu_line, &arrived);
    return count == arrived;
}
inline int __syncthreads_or(int predicate, CUDA_EMU_SITE) {
    unsigned arrived;
    return ::cuemu::block_barrier(predicate, cuemu_file, cuemu_line, &arrived) != 0;
}
inline void __syncwarp(unsigned mask = 0xffffffffu, CUDA_EMU_SITE) {
    ::cuemu::warp_collective(::cuemu::WarpOp::Sync, mask, 0, 0, cuemu_file, cuemu_line);
}
inline unsigned __activemask() { return ::cuemu::tl_current->warp->live; }

// Fences order memory for other OS threads (other workers); fibers of a block share one thread.
// Interleaved, memory is sequentially consistent anyway: a fence is only a switch point.
inline void __threadfence() {
    ::cuemu::maybe_switch_block();
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
// The only way a spinning thread can let the other threads of its block run.
// Interleaved, it lets the other resident blocks run first (see the header comment).
inline void __nanosleep(unsigned) { ::cuemu::spin(); }
[[noreturn]] inline void __trap() {
    const uint3 t = ::cuemu::tl_current->index;
    ::cuemu::fail("__trap() called by thread (%u,%u,%u)", t.x, t.y, t.z);
}

// ================================================================== warp shuffles and votes
namespace cuemu {
template <class T>
inline unsigned long long to_bits(T v) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "warp intrinsics move at most 8 bytes");
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(T));
    return bits;
}
template <class T>
inline T from_bits(unsigned long long bits) {
    T v;
    memcpy(&v, &bits, sizeof(T));
    return v;
}
// Lane of the first lane of this lane's `width` segment; width must be a power of two <= 32.
inline int segment_base(int width, const char* file, int line) {
    if (width < 1 || width > 32 || (width & (width - 1)))
        fail("shuffle at %s:%d: width %d is not a power of two in [1, 32]", base_name(file), line, width);
    return static_cast<int>(tl_current->lane) & ~(width - 1);
}
template <class T>
inline T shuffle(unsigned mask, T var, int source, const char* file, int line) {
    return from_bits<T>(warp_collective(WarpOp::Shuffle, mask, to_bits(var), source, file, line));
}
}  // namespace cuemu

template <class T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize, CUDA_EMU_SITE) {
    const int base = ::cuemu::segment_base(width, cuemu_file, cuemu_line);
    return ::cuemu::shuffle(mask, var, base + (src_lane & (width - 1)), cuemu_file, cuemu_line);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize, CUDA_EMU_SITE) {
    const int base = ::cuemu::segment_base(width, cuemu_file, cuemu_line);
    const int lane = static_cast<int>(::cuemu::tl_current->lane);
    const long long src = static_cast<long long>(lane) - delta;
    return ::cuemu::shuffle(mask, var, src < base ? lane : static_cast<int>(src), cuemu_file, cuemu_line);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize, CUDA_EMU_SITE) {
    const int base = ::cuemu::segment_base(width, cuemu_file, cuemu_line);
    const int lane = static_cast<int>(::cuemu::tl_current->lane);
    const long long src = static_cast<long long>(lane) + delta;
    return ::cuemu::shuffle(mask, var, src >= base + width ? lane : static_cast<int>(src), cuemu_file, cuemu_line);
}
// Lanes may read from earlier segments but not later ones (CUDA programming guide).
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize, CUDA_EMU_SITE) {
    const int base = ::cuemu::segment_base(width, cuemu_file, cuemu_line);
    const int lane = static_cast<int>(::cuemu::tl_current->lane);
    const int src = lane ^ lane_mask;
    return ::cuemu::shuffle(mask, var, src >= base + width || src < 0 ? lane : src, cuemu_file, cuemu_line);
}

// A vote's result carries the ballot in the low and the participating lanes in the high word.
inline unsigned __ballot_sync(unsigned mask, int predicate, CUDA_EMU_SITE) {
    return static_cast<unsigned>(
        ::cuemu::warp_collective(::cuemu::WarpOp::Vote, mask, predicate != 0, 0, cuemu_file, cuemu_line));
}
inline int __any_sync(unsigned mask, int predicate, CUDA_EMU_SITE) {
    return __ballot_sync(mask, predicate, cuemu_file, cuemu_line) != 0;
}
inline int __all_sync(unsigned mask, int predicate, CUDA_EMU_SITE) {
    const unsigned long long r =
        ::cuemu::warp_collective(::cuemu::WarpOp::Vote, mask, predicate != 0, 0, cuemu_file, cuemu_line);
    return static_cast<unsigned>(r) == static_cast<unsigned>(r >> 32);
}
inline int __uni_sync(unsigned mask, int predicate, CUDA_EMU_SITE) {
    const unsigned long long r =
        ::cuemu::warp_collective(::cuemu::WarpOp::Vote, mask, predicate != 0, 0, cuemu_file, cuemu_line);
    return static_cast<unsigned>(r) == 0 || static_cast<unsigned>(r) == static_cast<unsigned>(r >> 32);
}

#define CUDA_EMU_REDUCE(name, op_signed, op_unsigned)                                                    \
    inline int name(unsigned mask, int value, CUDA_EMU_SITE) {                                          \
        return static_cast<int>(::cuemu::warp_collective(::cuemu::WarpOp::op_signed, mask,               \
                                                         static_cast<unsigned>(value), 0, cuemu_file, cuemu_line)); \
    }                                                                                                    \
    inline unsigned name(unsigned mask, unsigned value, CUDA_EMU_SITE) {                                \
        return static_cast<unsigned>(                                                                    \
            ::cuemu::warp_collective(::cuemu::WarpOp::op_unsigned, mask, value, 0, cuemu_file, cuemu_line)); \
    }
CUDA_EMU_REDUCE(__reduce_add_sync, ReduceAdd, ReduceAdd)
CUDA_EMU_REDUCE(__reduce_min_sync, ReduceMinS, ReduceMinU)
CUDA_EMU_REDUCE(__reduce_max_sync, ReduceMaxS, ReduceMaxU)
#undef CUDA_EMU_REDUCE
#define CUDA_EMU_REDUCE_BITS(name, op)                                                                   \
    inline unsigned name(unsigned mask, unsigned value, CUDA_EMU_SITE) {                                 \
        return static_cast<unsigned>(                                                                    \
            ::cuemu::warp_collective(::cuemu::WarpOp::op, mask, value, 0, cuemu_file, cuemu_line));      \
    }
CUDA_EMU_REDUCE_BITS(__reduce_and_sync, ReduceAnd)
CUDA_EMU_REDUCE_BITS(__reduce_or_sync, ReduceOr)
CUDA_EMU_REDUCE_BITS(__reduce_xor_sync, ReduceXor)
#undef CUDA_EMU_REDUCE_BITS
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value, CUDA_EMU_SITE) {
    return static_cast<unsigned>(
        ::cuemu::warp_collective(::cuemu::WarpOp::MatchAny, mask, ::cuemu::to_bits(value), 0, cuemu_file, cuemu_line));
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred, CUDA_EMU_SITE) {
    const unsigned r = static_cast<unsigned>(
        ::cuemu::warp_collective(::cuemu::WarpOp::MatchAll, mask, ::cuemu::to_bits(value), 0, cuemu_file, cuemu_line));
    *pred = r != 0;
    return r;
}

// ================================================================== atomics
// std::atomic_ref: real atomics, because blocks on other workers may touch the same global memory.
// The value parameters are non-deduced so that atomicAdd(&unsigned_counter, 1) works as in CUDA.
template <class T> using cuemu_value_t = std::type_identity_t<T>;

namespace cuemu {
// Every atomic is a switch point, and progress (for the deadlock check) when it changed memory.
template <class T, class Op>
inline T atomic_update(T* address, Op op) {
    maybe_switch_block();
    std::atomic_ref<T> ref(*address);
    const T old = op(ref);
    if (tl_slot != kNoSlot && ref.load() != old) {
        note_progress();
        if (!is_shared_memory(address)) tl_launch->interleave.published[tl_slot] = true;
    }
    return old;
}
}  // namespace cuemu

template <class T> inline T atomicAdd(T* address, cuemu_value_t<T> val) {
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<T>& ref) { return ref.fetch_add(val); });
}
template <class T> inline T atomicSub(T* address, cuemu_value_t<T> val) {
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<T>& ref) { return ref.fetch_sub(val); });
}
template <class T> inline T atomicExch(T* address, cuemu_value_t<T> val) {
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<T>& ref) { return ref.exchange(val); });
}
template <class T> inline T atomicAnd(T* address, cuemu_value_t<T> val) {
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<T>& ref) { return ref.fetch_and(val); });
}
template <class T> inline T atomicOr(T* address, cuemu_value_t<T> val) {
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<T>& ref) { return ref.fetch_or(val); });
}
template <class T> inline T atomicXor(T* address, cuemu_value_t<T> val) {
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<T>& ref) { return ref.fetch_xor(val); });
}
template <class T> inline T atomicCAS(T* address, cuemu_value_t<T> compare, cuemu_value_t<T> val) {
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<T>& ref) {
        ref.compare_exchange_strong(compare, val);
        return compare;  // the old value, whether or not the swap happened
    });
}
template <class T> inline T atomicMax(T* address, cuemu_value_t<T> val) {
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<T>& ref) {
        T old = ref.load();
        while (old < val && !ref.compare_exchange_weak(old, val)) {}
        return old;
    });
}
template <class T> inline T atomicMin(T* address, cuemu_value_t<T> val) {
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<T>& ref) {
        T old = ref.load();
        while (val < old && !ref.compare_exchange_weak(old, val)) {}
        return old;
    });
}
inline unsigned atomicInc(unsigned* address, unsigned limit) {  // ((old >= limit) ? 0 : old + 1)
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<unsigned>& ref) {
        unsigned old = ref.load();
        while (!ref.compare_exchange_weak(old, old >= limit ? 0u : old + 1u)) {}
        return old;
    });
}
inline unsigned atomicDec(unsigned* address, unsigned limit) {  // ((old == 0 || old > limit) ? limit : old - 1)
    return ::cuemu::atomic_update(address, [&](std::atomic_ref<unsigned>& ref) {
        unsigned old = ref.load();
        while (!ref.compare_exchange_weak(old, (old == 0u || old > limit) ? limit : old - 1u)) {}
        return old;
    });
}
// Scoped variants: every scope is the whole process here.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicSub_block atomicSub
#define atomicExch_block atomicExch
#define atomicMax_block atomicMax
#define atomicMin_block atomicMin
#define atomicCAS_block atomicCAS
#define atomicAnd_block atomicAnd
#define atomicOr_block atomicOr
#define atomicXor_block atomicXor

// ================================================================== integer intrinsics
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return std::countl_zero(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return x ? std::countr_zero(static_cast<unsigned>(x)) + 1 : 0; }
inline int __ffsll(long long x) { return x ? std::countr_zero(static_cast<unsigned long long>(x)) + 1 : 0; }
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline unsigned long long __brevll(unsigned long long x) {
    const unsigned low = static_cast<unsigned>(x), high = static_cast<unsigned>(x >> 32);
    return (static_cast<unsigned long long>(__brev(low)) << 32) | __brev(high);
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long bytes = (static_cast<unsigned long long>(y) << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((bytes >> (((s >> (4 * i)) & 7u) * 8)) & 0xFFu) << (8 * i);
    return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
    return static_cast<unsigned>((((static_cast<unsigned long long>(hi) << 32) | lo) << (shift & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
    return static_cast<unsigned>((((static_cast<unsigned long long>(hi) << 32) | lo) >> (shift & 31)));
}
inline unsigned __umulhi(unsigned a, unsigned b) {
    return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return static_cast<unsigned long long>((__extension__ static_cast<unsigned __int128>(a) * b) >> 64);
}
inline long long __mul64hi(long long a, long long b) {
    return static_cast<long long>((__extension__ static_cast<__int128>(a) * b) >> 64);
}

// min/max as CUDA overloads them: mixed signed/unsigned compares as unsigned (the usual
// arithmetic conversions), floating point follows fmin/fmax (a NaN operand loses).
template <class A, class B, std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>, int> = 0>
inline std::common_type_t<A, B> min(A a, B b) {
    using C = std::common_type_t<A, B>;
    if constexpr (std::is_floating_point_v<C>) return fmin(static_cast<C>(a), static_cast<C>(b));
    else return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <class A, class B, std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>, int> = 0>
inline std::common_type_t<A, B> max(A a, B b) {
    using C = std::common_type_t<A, B>;
    if constexpr (std::is_floating_point_v<C>) return fmax(static_cast<C>(a), static_cast<C>(b));
    else return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a < b ? b : a; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a < b ? b : a; }

// ================================================================== float intrinsics
// The fast-math variants compute the accurate result; kernels must not depend on the difference.
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }  // NaN -> 0
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
// GPU float->int conversions saturate and map NaN to 0; a plain C++ cast would be undefined.
namespace cuemu {
template <class I>
inline I saturating_cast(double rounded) {
    if (rounded != rounded) return 0;
    if (rounded <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    if (rounded >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return static_cast<I>(rounded);
}
}  // namespace cuemu
inline int __float2int_rn(float x) { return ::cuemu::saturating_cast<int>(nearbyint(x)); }
inline int __float2int_rz(float x) { return ::cuemu::saturating_cast<int>(trunc(x)); }
inline int __float2int_rd(float x) { return ::cuemu::saturating_cast<int>(floor(x)); }
inline int __float2int_ru(float x) { return ::cuemu::saturating_cast<int>(ceil(x)); }
inline unsigned __float2uint_rn(float x) { return ::cuemu::saturating_cast<unsigned>(nearbyint(x)); }
inline unsigned __float2uint_rz(float x) { return ::cuemu::saturating_cast<unsigned>(trunc(x)); }
inline long long __float2ll_rn(float x) { return ::cuemu::saturating_cast<long long>(nearbyint(x)); }
inline long long __float2ll_rz(float x) { return ::cuemu::saturating_cast<long long>(trunc(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }
inline int __double2int_rn(double x) { return ::cuemu::saturating_cast<int>(nearbyint(x)); }
inline int __double2int_rz(double x) { return ::cuemu::saturating_cast<int>(trunc(x)); }

// ================================================================== memory access hints
// The coherent loads and stores (__ldcg, __ldcv, __stcg) are how blocks read and write what other
// blocks of the launch share: interleaved, they are switch points; __ldg (read-only data) is not.
namespace cuemu {
template <class T>
inline T shared_load(const T* p) {
    maybe_switch_block();
    return *p;
}
template <class T>
inline void shared_store(T* p, T v) {
    maybe_switch_block();
    *p = v;
    note_progress();
    if (tl_slot != kNoSlot && !is_shared_memory(p)) tl_launch->interleave.published[tl_slot] = true;
}
}  // namespace cuemu
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return ::cuemu::shared_load(p); }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return ::cuemu::shared_load(p); }
template <class T> inline void __stcg(T* p, T v) { ::cuemu::shared_store(p, v); }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { ::cuemu::shared_store(p, v); }

// ================================================================== C entry points (ctypes)
#define CUDA_EMU_EXPORT extern "C" __attribute__((visibility("default")))

CUDA_EMU_EXPORT unsigned cuemu_kernel_count() { return cuemu_kernel_table_size; }
CUDA_EMU_EXPORT const char* cuemu_kernel_name(unsigned k) { return cuemu_kernel_table[k].name; }
CUDA_EMU_EXPORT const char* cuemu_kernel_param_codes(unsigned k) { return cuemu_kernel_table[k].codes; }
CUDA_EMU_EXPORT unsigned cuemu_kernel_param_size(unsigned k, unsigned i) { return cuemu_kernel_table[k].sizes[i]; }
CUDA_EMU_EXPORT unsigned cuemu_kernel_max_threads(unsigned k) { return cuemu_kernel_table[k].max_threads; }
CUDA_EMU_EXPORT unsigned long long cuemu_max_dynamic_shared() { return ::cuemu::kMaxDynamicSharedBytes; }

// The largest GT_STEP() count of one thread in this library's last launch (0 before any).
static std::atomic<unsigned long long> cuemu_last_steps{0};
CUDA_EMU_EXPORT unsigned long long cuemu_last_launch_steps() { return cuemu_last_steps.load(); }

// Launches kernel k on grid x block; returns 0, or 1 with a message in `message`.
// args[i] points at the bytes of argument i, as kernelParams does for cuLaunchKernel.
// resident > 0: interleaved mode with that many resident blocks (at most 64; `workers` unused),
// its schedule drawn from interleave_seed.
CUDA_EMU_EXPORT int cuemu_launch(unsigned k, const unsigned* grid, const unsigned* block,
                                 unsigned long long dynamic_shared, void* const* args, unsigned workers,
                                 unsigned long long seed, unsigned stack_kib, unsigned resident,
                                 unsigned long long interleave_seed, char* message,
                                 unsigned long long message_size) {
    auto refuse = [&](const char* format, auto... values) {
        snprintf(message, message_size, format, values...);
        return 1;
    };
    if (k >= cuemu_kernel_table_size) return refuse("no kernel number %u", k);
    const ::cuemu::KernelEntry& kernel = cuemu_kernel_table[k];
    const unsigned long long nthreads = 1ull * block[0] * block[1] * block[2];
    if (nthreads < 1 || nthreads > ::cuemu::kMaxThreadsPerBlock || block[0] > 1024 || block[1] > 1024 || block[2] > 64)
        return refuse("invalid launch configuration for %s: block (%u,%u,%u) has %llu threads; CUDA allows 1 to 1024 "
                      "threads per block with x, y <= 1024 and z <= 64",
                      kernel.name, block[0], block[1], block[2], nthreads);
    if (grid[0] < 1 || grid[1] < 1 || grid[2] < 1 || grid[0] > 0x7FFFFFFFu || grid[1] > 65535 || grid[2] > 65535)
        return refuse("invalid launch configuration for %s: grid (%u,%u,%u); CUDA allows x in [1, 2^31-1] and y, z in "
                      "[1, 65535]",
                      kernel.name, grid[0], grid[1], grid[2]);
    if (kernel.max_threads && nthreads > kernel.max_threads)
        return refuse("too many resources requested for launch of %s: block has %llu threads but its "
                      "__launch_bounds__ allows %u",
                      kernel.name, nthreads, kernel.max_threads);
    if (dynamic_shared > ::cuemu::kMaxDynamicSharedBytes)
        return refuse("dynamic shared memory of %llu bytes requested for %s exceeds the per-block maximum of %zu "
                      "bytes (227 KiB)",
                      dynamic_shared, kernel.name, ::cuemu::kMaxDynamicSharedBytes);

    ::cuemu::Launch launch;
    launch.thunk = kernel.thunk;
    launch.fn = kernel.fn;
    launch.args = args;
    launch.grid = dim3(grid[0], grid[1], grid[2]);
    launch.block = dim3(block[0], block[1], block[2]);
    launch.nthreads = static_cast<unsigned>(nthreads);
    launch.nblocks = 1ull * grid[0] * grid[1] * grid[2];
    launch.dynamic_shared = dynamic_shared;
    launch.seed = seed;
    launch.stack_bytes = (stack_kib ? stack_kib : 64u) * size_t{1024};
    launch.message = message;
    launch.message_size = message_size;

    if (resident) {
        ::cuemu::run_interleaved(launch, resident, interleave_seed);
    } else {
        // The calling thread is worker 0; the others are started for this launch only.
        unsigned extra = workers > 1 ? workers - 1 : 0;
        if (extra > launch.nblocks - 1) extra = static_cast<unsigned>(launch.nblocks - 1);
        pthread_t threads[64];
        if (extra > 64) extra = 64;
        unsigned started = 0;
        for (; started < extra; ++started)
            if (pthread_create(&threads[started], nullptr, ::cuemu::worker_main, &launch) != 0) break;
        ::cuemu::run_blocks(launch);
        for (unsigned i = 0; i < started; ++i) pthread_join(threads[i], nullptr);
    }
    cuemu_last_steps.store(launch.max_steps.load());
    return launch.failed.load() ? 1 : 0;
}

#if !CUDA_EMU_USE_UCONTEXT
// cuemu_switch_stack(void** save_sp /* rdi */, void* new_sp /* rsi */): the frame matches
// cuemu::SavedFrame. Only callee-saved state needs saving: the call itself tells the compiler
// that every caller-saved register is clobbered.
asm(R"(
    .text
    .p2align 4
    .globl cuemu_switch_stack
    .hidden cuemu_switch_stack
    .type cuemu_switch_stack, @function
cuemu_switch_stack:
    leaq    -56(%rsp), %rsp
    movq    %rbx, 0(%rsp)
    movq    %rbp, 8(%rsp)
    movq    %r12, 16(%rsp)
    movq    %r13, 24(%rsp)
    movq    %r14, 32(%rsp)
    movq    %r15, 40(%rsp)
    stmxcsr 48(%rsp)
    fnstcw  52(%rsp)
    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
    movq    0(%rsp), %rbx
    movq    8(%rsp), %rbp
    movq    16(%rsp), %r12
    movq    24(%rsp), %r13
    movq    32(%rsp), %r14
    movq    40(%rsp), %r15
    ldmxcsr 48(%rsp)
    fldcw   52(%rsp)
    leaq    56(%rsp), %rsp
    ret
    .size cuemu_switch_stack, .-cuemu_switch_stack
)");
#endif
