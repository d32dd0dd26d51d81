/* xp_simt.h -- xpiler's SIMT CPU emulator: CUDA and HIP kernels compiled by g++ and run on a CPU.
 *
 * Execution model
 *   - A launch runs its thread blocks one after another on the calling OS thread.
 *   - Inside a block every CUDA/HIP thread is a fiber with its own stack.  A fiber runs until
 *     it blocks (a __syncthreads(), a warp collective) or exits; then the next ready fiber runs.
 *     The context switch is a few lines of x86-64 assembly (callee-saved registers, stack
 *     pointer, MXCSR and the x87 control word): no system call per switch.
 *   - Static __shared__ variables are function-static storage: correct because blocks never
 *     overlap.  Dynamic shared memory (extern __shared__) is one heap buffer per launch of
 *     exactly the requested size, so AddressSanitizer sees overruns.
 *   - Warp (CUDA, 32 lanes) / wavefront (HIP, XPS_WAVE=64) collectives: each lane deposits its
 *     operand, waits at a warp barrier, reads, and waits again.  WMMA fragments hold the whole
 *     tile in every lane; MFMA builtins follow the gfx90a register layouts.
 *   - Errors the emulator detects (deadlock, barrier divergence, bad launch, ...) print one line
 *     "xpiler-runtime-error: XP30xx message" on stderr and exit with status 97
 *     (see DIAGNOSTICS.txt beside this file).
 */
#ifndef XP_SIMT_H
#define XP_SIMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <limits.h>
#include <float.h>
#include <cmath>
#include <math.h>
#include <utility>
#include <type_traits>
#include <new>
#include <signal.h>
#include <ucontext.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef XPS_WAVE
#define XPS_WAVE 32
#endif
#if XPS_WAVE != 32 && XPS_WAVE != 64
#error "XPS_WAVE must be 32 or 64"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define XPS_ASAN 1
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/asan_interface.h>
#else
#define XPS_ASAN 0
#endif

#if !defined(__x86_64__)
#error "the xpiler SIMT emulator's fiber switch is written for x86-64"
#endif

/* ------------------------------------------------------------------------------------------
 * Qualifiers and dialect macros
 * ---------------------------------------------------------------------------------------- */
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __shared__ static
#define __forceinline__ inline
/* __noinline__ is rewritten in the kernel text (simt_common.prepare_source): a macro here would
   break libstdc++ 13, whose headers write __attribute__((__noinline__)). */
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __CUDACC__ 1
#define XPILER_SIMT_EMULATOR 1
#if XPS_WAVE == 64
#define __HIP_PLATFORM_AMD__ 1
#define __HIP_PLATFORM_HCC__ 1
#define __HIPCC__ 1
#define __HIP__ 1
#define __gfx90a__ 1
#define __AMDGCN_WAVEFRONT_SIZE 64
#define __AMDGCN_WAVEFRONT_SIZE__ 64
#endif

/* ------------------------------------------------------------------------------------------
 * Index types
 * ---------------------------------------------------------------------------------------- */
struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

/* The built-in index variables.  threadIdx is rewritten on every fiber switch. */
inline uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;
static constexpr int warpSize = XPS_WAVE;

#define hipThreadIdx_x (threadIdx.x)
#define hipThreadIdx_y (threadIdx.y)
#define hipThreadIdx_z (threadIdx.z)
#define hipBlockIdx_x (blockIdx.x)
#define hipBlockIdx_y (blockIdx.y)
#define hipBlockIdx_z (blockIdx.z)
#define hipBlockDim_x (blockDim.x)
#define hipBlockDim_y (blockDim.y)
#define hipBlockDim_z (blockDim.z)
#define hipGridDim_x (gridDim.x)
#define hipGridDim_y (gridDim.y)
#define hipGridDim_z (gridDim.z)

#define XPS_SITE const char *xps_file = __builtin_FILE(), int xps_line = __builtin_LINE()
#define XPS_SITE_FWD xps_file, xps_line

/* ------------------------------------------------------------------------------------------
 * The fiber scheduler
 * ---------------------------------------------------------------------------------------- */
namespace xps {

enum FiberState : int { F_READY = 0, F_RUNNING, F_BLOCK_BARRIER, F_WARP_BARRIER, F_DONE, F_WAVE_BARRIER };

struct Fiber {
  void *sp;                 /* saved stack pointer while switched out */
  uint3 tid;
  unsigned lin, lane, warp;
  int state;
  char *stack_lo;           /* usable stack (above the guard page) */
  size_t stack_size;
  void *asan_fake;
  const char *wait_what, *wait_file; /* where it waits (deadlock reports) */
  int wait_line;
  uint64_t wait_mask;
};

struct WarpEntry { /* one pending warp barrier (distinct masks may wait at once) */
  uint64_t mask, arrived;
  const char *what, *file;
  int line, used;
};

enum { SLOT_BYTES = 32, MAX_WARP_ENTRIES = 4 };

struct Warp {
  uint64_t live;            /* lanes that have not exited */
  uint64_t exist;           /* lanes that exist (partial last warp) */
  WarpEntry e[MAX_WARP_ENTRIES];
  int wave_waiting;         /* lanes waiting at a wave barrier (__builtin_amdgcn_wave_barrier) */
  alignas(16) unsigned char slot[XPS_WAVE][SLOT_BYTES];
  const void *ptr[XPS_WAVE][4];
  alignas(16) float tmp[32 * 32];  /* shared result of the warp's last wmma mma_sync */
};

struct State {
  Fiber *fibers = nullptr;
  int nfibers_cap = 0;
  Warp *warps = nullptr;
  int nwarps_cap = 0;
  int n = 0, nwarps = 0, live = 0;
  Fiber *cur = nullptr;
  void *sched_sp = nullptr;
  void *sched_fake = nullptr;
  const void *main_bottom = nullptr;
  size_t main_size = 0;
  /* run queue (ring) */
  Fiber **rq = nullptr;
  int rq_head = 0, rq_tail = 0, rq_count = 0, rq_cap = 0;
  /* block barrier */
  int bar_arrived = 0;
  const char *bar_what = nullptr, *bar_file = nullptr;
  int bar_line = 0;
  unsigned bar_first = 0;
  Fiber **bar_waiters = nullptr;
  int bar_nwaiters = 0;
  int bar_round = 0;
  long long bar_red[2][3] = {{0, 0, 0}, {0, 0, 0}}; /* count, and, or per parity */
  /* launch */
  void (*invoke)(void *) = nullptr;
  void *body = nullptr;
  bool in_launch = false;
  const char *kernel_site = "";
  size_t stack_bytes = 0;
  unsigned mxcsr_fcw[2] = {0, 0};
  long long switches = 0;
  long long idle_polls = 0; /* atomics/fences that changed nothing since the last progress */
  /* schedule variant (XPS_SCHEDULE, read at the first launch; see "Schedules" below).
   * 0: the run-queue ring above.  >= 1: strict priority among ready fibers, kept as a bitmap
   * indexed by rank (rank 0 runs first). */
  int sched = -1;
  uint64_t rdy[16] = {0};   /* ready bitmap by rank (<= 1024 threads) */
  int *rank = nullptr;      /* fiber lin -> rank */
  int *at_rank = nullptr;   /* rank -> fiber lin */
  uint64_t rng = 0;
};
inline State g;
inline void *g_dyn_smem = nullptr;      /* extern __shared__ arrays alias this pointer */
inline size_t g_dyn_smem_bytes = 0;

/* Static __shared__ variables register themselves (prepare() adds the call after each
 * declaration) so every block starts with them poisoned (0xFF bytes: NaN for floats, -1 for
 * ints), as uninitialised as on a GPU instead of holding the previous block's data. */
struct SharedRegion { void *p; size_t n; };
inline SharedRegion *g_shared = nullptr;
inline int g_nshared = 0, g_shared_cap = 0;
inline bool g_poison_shared = getenv("XPS_NO_SHARED_POISON") == nullptr;
inline bool shared_register(const volatile void *vp, size_t n) {
  void *p = (void *)vp;
  for (int i = 0; i < g_nshared; ++i)
    if (g_shared[i].p == p) return true;
  if (g_nshared == g_shared_cap) {
    g_shared_cap = g_shared_cap ? 2 * g_shared_cap : 16;
    g_shared = (SharedRegion *)realloc(g_shared, sizeof(SharedRegion) * g_shared_cap);
  }
  g_shared[g_nshared++] = SharedRegion{p, n};
  if (g_poison_shared) memset(p, 0xFF, n);
  return true;
}
inline void poison_shared() {
  if (!g_poison_shared) return;
  for (int i = 0; i < g_nshared; ++i) memset(g_shared[i].p, 0xFF, g_shared[i].n);
  if (g_dyn_smem_bytes) memset(g_dyn_smem, 0xFF, g_dyn_smem_bytes);
}

[[noreturn]] __attribute__((format(printf, 2, 3), noinline)) inline void fatal(const char *code, const char *fmt, ...) {
  fflush(stdout);
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  for (char *p = buf; *p; ++p)
    if (*p == '\n') *p = ' ';
  fprintf(stderr, "xpiler-runtime-error: %s %s\n", code, buf);
  fflush(stderr);
  _exit(97);
}

/* where the current thread is, for messages */
inline const char *where() {
  static char buf[160];
  if (!g.in_launch || !g.cur) return "host code";
  snprintf(buf, sizeof buf, "block (%u,%u,%u) thread (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z,
           g.cur->tid.x, g.cur->tid.y, g.cur->tid.z);
  return buf;
}

/* --- the context switch ------------------------------------------------------------------ */
/* xps_ctx_switch(save, to): push callee-saved registers + MXCSR/x87 CW on the current stack,
 * store rsp into *save, load rsp = to, restore the same set from there and return into it. */
__attribute__((naked, noinline, noipa, used)) static void ctx_switch(void ** /*save*/, void * /*to*/) {
  __asm__(
      "pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "subq $8, %rsp\n\t"
      "stmxcsr (%rsp)\n\t"
      "fnstcw 4(%rsp)\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "ldmxcsr (%rsp)\n\t"
      "fldcw 4(%rsp)\n\t"
      "addq $8, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret\n\t");
}

/* First activation of a fiber: the switch "returns" here with rbx = Fiber*, r12 = entry. */
__attribute__((naked, noinline, used)) static void fiber_trampoline() {
  __asm__(
      "movq %rbx, %rdi\n\t"
      "callq *%r12\n\t"
      "ud2\n\t");
}

inline void do_switch(void **save, void *to_sp, const void *to_bottom, size_t to_size, void **fake_save) {
  ++g.switches;
#if XPS_ASAN
  __sanitizer_start_switch_fiber(fake_save, to_bottom, to_size);
  ctx_switch(save, to_sp);
  __sanitizer_finish_switch_fiber(fake_save ? *fake_save : nullptr, nullptr, nullptr);
#else
  (void)to_bottom; (void)to_size; (void)fake_save;
  ctx_switch(save, to_sp);
#endif
}

/* --- schedules ------------------------------------------------------------------------------
 * Every schedule is a valid execution of the CUDA program: only the choice among READY fibers
 * changes (barriers and warp collectives are never passed early).  XPS_SCHEDULE=
 *   0  default: threads in index order, each until it blocks; released fibers queue at the back
 *      (FIFO ring), the thread that completes a barrier/collective continues.
 *   1  priority by thread index (warp 0 first): a warp released from a collective resumes at
 *      once and runs ahead until it blocks at a __syncthreads() (or a collective).
 *   2  reverse priority (last thread / warp first).
 *   3+ seeded pseudo-random warp priorities (seed = the schedule id), drawn anew at every block
 *      start and at every __syncthreads() release; lanes in order or reversed, also random.
 * In priority schedules the highest-priority ready fiber always runs (a thread that releases a
 * barrier yields to a released thread of higher priority); a yield from an atomic or fence
 * (spin loops) hands over to the next ready fiber in rank order, round robin. */
inline uint64_t rng_next() { /* splitmix64 */
  uint64_t z = (g.rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline void init_schedule() {
  if (g.sched >= 0) return;
  const char *s = getenv("XPS_SCHEDULE");
  long v = s && *s ? atol(s) : 0;
  g.sched = v < 0 ? 0 : (int)(v > 1000000 ? 1000000 : v);
  g.rng = 0x5DEECE66Dull * (uint64_t)(g.sched + 1);
}
/* assign ranks for the current block (priority schedules); the ready set must be empty */
inline void assign_ranks() {
  const int n = g.n;
  if (g.sched == 1) {
    for (int i = 0; i < n; ++i) g.rank[i] = i;
  } else if (g.sched == 2) {
    for (int i = 0; i < n; ++i) g.rank[i] = n - 1 - i;
  } else {
    int order[1024 / 32];
    const int nw = g.nwarps;
    for (int w = 0; w < nw; ++w) order[w] = w;
    for (int w = nw - 1; w > 0; --w) { /* Fisher-Yates */
      int j = (int)(rng_next() % (uint64_t)(w + 1));
      int t = order[w]; order[w] = order[j]; order[j] = t;
    }
    int r = 0;
    for (int k = 0; k < nw; ++k) {
      int w = order[k], lo = w * XPS_WAVE, hi = lo + XPS_WAVE < n ? lo + XPS_WAVE : n;
      if (rng_next() & 1)
        for (int i = lo; i < hi; ++i) g.rank[i] = r++;
      else
        for (int i = hi - 1; i >= lo; --i) g.rank[i] = r++;
    }
  }
  for (int i = 0; i < n; ++i) g.at_rank[g.rank[i]] = i;
}

inline void rq_push(Fiber *f) {
  if (g.sched) {
    int r = g.rank[f->lin];
    g.rdy[r >> 6] |= 1ull << (r & 63);
    ++g.rq_count;
    return;
  }
  g.rq[g.rq_tail] = f;
  g.rq_tail = (g.rq_tail + 1) % g.rq_cap;
  ++g.rq_count;
}
inline Fiber *rq_take(int r) {
  g.rdy[r >> 6] &= ~(1ull << (r & 63));
  --g.rq_count;
  return &g.fibers[g.at_rank[r]];
}
/* lowest ready rank, or INT_MAX */
inline int rq_best() {
  for (int w = 0; w < 16; ++w)
    if (g.rdy[w]) return w * 64 + __builtin_ctzll(g.rdy[w]);
  return INT_MAX;
}
inline Fiber *rq_pop() {
  if (!g.rq_count) return nullptr;
  if (g.sched) return rq_take(rq_best());
  Fiber *f = g.rq[g.rq_head];
  g.rq_head = (g.rq_head + 1) % g.rq_cap;
  --g.rq_count;
  return f;
}
/* the ready fiber next after rank r0 in rank order (wrapping); priority schedules only */
inline Fiber *rq_pop_after(int r0) {
  if (!g.rq_count) return nullptr;
  const int start = r0 + 1;
  if (start < 1024) {
    const int w0 = start >> 6;
    uint64_t bits = g.rdy[w0] & (~0ull << (start & 63));
    if (bits) return rq_take(w0 * 64 + __builtin_ctzll(bits));
    for (int w = w0 + 1; w < 16; ++w)
      if (g.rdy[w]) return rq_take(w * 64 + __builtin_ctzll(g.rdy[w]));
  }
  return rq_pop(); /* wrap around to the lowest ready rank */
}

/* Leave the running fiber `me` (already marked blocked, ready or done) for `to` (or the next
 * ready one), or for the scheduler when none is ready.  Returns when `me` is resumed. */
inline void switch_away(Fiber *me, bool exiting, Fiber *to = nullptr) {
  Fiber *nx = to ? to : rq_pop();
  /* An exiting fiber's stack pointer is never used again, but the switch still stores it.  The
   * slot must not be a local: under AddressSanitizer with detect_stack_use_after_return=1 (the
   * default of gcc 13's libasan, off in gcc 12's) an address-taken local lives on the fiber's
   * fake stack, which __sanitizer_start_switch_fiber(nullptr, ...) destroys just before the
   * switch writes the slot: a SEGV on the first exiting thread.  Heap/global slots only. */
  static void *exit_sp_sink;
  void **save = exiting ? &exit_sp_sink : &me->sp;
  void **fake = exiting ? nullptr : &me->asan_fake;
  if (nx) {
    nx->state = F_RUNNING;
    g.cur = nx;
    threadIdx = nx->tid;
    do_switch(save, nx->sp, nx->stack_lo, nx->stack_size, fake);
  } else {
    g.cur = nullptr;
    do_switch(save, g.sched_sp, g.main_bottom, g.main_size, fake);
  }
}

inline void fiber_exit(Fiber *me);
inline void yield_now();

/* Priority schedules: after `me` released a barrier, run a released fiber of higher priority. */
inline void maybe_preempt(Fiber *me) {
  if (!g.sched || !g.rq_count || rq_best() > g.rank[me->lin]) return;
  me->state = F_READY;
  rq_push(me);
  switch_away(me, false);
}

/* A poll that changed nothing (failed CAS, atomicAdd of 0, a fence).  Too many in a row with no
 * progress anywhere (no store by an atomic, no barrier released, no thread finished) means the
 * threads wait for something that cannot happen here, e.g. a flag set by a later block (blocks
 * run one at a time). */
inline void poll_done(bool changed) {
  if (!g.in_launch) return;
  if (changed) { g.idle_polls = 0; }
  else if (++g.idle_polls > 20000000) {
    fatal("XP3014",
          "livelock in %s: 20 million atomic/fence polls changed nothing and no thread of the block made progress "
          "(a spin wait on another block, which runs before or after this one in the emulator, or on a blocked thread)",
          where());
  }
  yield_now();
}

inline void fiber_main(Fiber *f) {
#if XPS_ASAN
  {
    const void *b = nullptr;
    size_t s = 0;
    __sanitizer_finish_switch_fiber(nullptr, &b, &s);
    if (!g.main_bottom) { g.main_bottom = b; g.main_size = s; }
  }
#endif
  g.invoke(g.body);
  fiber_exit(f);
}

/* --- wave barrier ------------------------------------------------------------------------ */
/* A wavefront executes its active lanes in lock-step, and __builtin_amdgcn_wave_barrier() (what
 * binding writes for CUDA's __syncwarp() on HIP) only keeps the compiler from moving code across
 * it. Here the lanes run one after another between meeting points, so a lane reaching a wave
 * barrier waits until no lane of its wavefront can still run: every live lane waits at a wave
 * barrier, a warp collective or __syncthreads(), or has exited. The lanes that are not at the
 * wave barrier are those the wavefront's execution mask has switched off (another branch),
 * which on the hardware do not run between the active lanes' steps either. */
inline bool wave_quiet(unsigned warp) {
  uint64_t bits = g.warps[warp].live;
  while (bits) {
    int l = __builtin_ctzll(bits);
    bits &= bits - 1;
    int st = g.fibers[warp * XPS_WAVE + l].state;
    if (st == F_READY || st == F_RUNNING) return false;
  }
  return true;
}

inline void release_wave_waiters(unsigned warp, Fiber *except) {
  Warp &w = g.warps[warp];
  uint64_t bits = w.live;
  while (bits) {
    int l = __builtin_ctzll(bits);
    bits &= bits - 1;
    Fiber *f = &g.fibers[warp * XPS_WAVE + l];
    if (f == except || f->state != F_WAVE_BARRIER) continue;
    f->state = F_READY;
    rq_push(f);
  }
  w.wave_waiting = 0;
  g.idle_polls = 0;
}

/* a lane of `warp` stopped running (it waits or exited): release the wave barrier if it was the last */
inline void wave_settle(unsigned warp) {
  if (g.warps[warp].wave_waiting && wave_quiet(warp)) release_wave_waiters(warp, nullptr);
}

inline void wave_barrier(const char *what, const char *file, int line) {
  Fiber *me = g.cur;
  if (!g.in_launch || !me) fatal("XP3010", "%s called outside a kernel launch (%s:%d)", what, file, line);
  me->state = F_WAVE_BARRIER;
  if (wave_quiet(me->warp)) {
    release_wave_waiters(me->warp, me);
    me->state = F_RUNNING;
    maybe_preempt(me);
    return;
  }
  g.warps[me->warp].wave_waiting++;
  me->wait_what = what; me->wait_file = file; me->wait_line = line; me->wait_mask = 0;
  switch_away(me, false);
}

/* --- block barrier ----------------------------------------------------------------------- */
inline void release_block_barrier() {
  if (g.sched >= 3 && g.rq_count == 0) assign_ranks(); /* new random warp priorities per interval */
  for (int i = 0; i < g.bar_nwaiters; ++i) {
    Fiber *f = g.bar_waiters[i];
    f->state = F_READY;
    rq_push(f);
  }
  g.bar_nwaiters = 0;
  g.bar_arrived = 0;
  g.bar_round++;
  g.idle_polls = 0;
  long long *r = g.bar_red[(g.bar_round) & 1];
  r[0] = 0; r[1] = 1; r[2] = 0;
}

inline int block_barrier(const char *what, const char *file, int line, int pred = 0, int red_kind = -1) {
  Fiber *me = g.cur;
  if (!g.in_launch || !me) fatal("XP3010", "%s called outside a kernel launch (%s:%d)", what, file, line);
  if (g.bar_arrived == 0) {
    g.bar_what = what; g.bar_file = file; g.bar_line = line; g.bar_first = me->lin;
  } else if (line != g.bar_line || (file != g.bar_file && strcmp(file, g.bar_file) != 0)) {
    const Fiber &f0 = g.fibers[g.bar_first];
    fatal("XP3002",
          "barrier divergence in block (%u,%u,%u): thread (%u,%u,%u) waits at %s (%s:%d) while thread (%u,%u,%u) "
          "waits at %s (%s:%d)",
          blockIdx.x, blockIdx.y, blockIdx.z, me->tid.x, me->tid.y, me->tid.z, what, file, line, f0.tid.x, f0.tid.y,
          f0.tid.z, g.bar_what, g.bar_file, g.bar_line);
  }
  int par = g.bar_round & 1;
  long long *r = g.bar_red[par];
  if (red_kind >= 0) { r[0] += pred != 0; r[1] = r[1] && pred; r[2] = r[2] || pred; }
  g.bar_arrived++;
  if (g.bar_arrived == g.live) {
    release_block_barrier();
    maybe_preempt(me);
  } else {
    me->state = F_BLOCK_BARRIER;
    me->wait_what = what; me->wait_file = file; me->wait_line = line;
    g.bar_waiters[g.bar_nwaiters++] = me;
    wave_settle(me->warp);
    switch_away(me, false);
  }
  return red_kind >= 0 ? (int)r[red_kind] : 0;
}

/* --- warp barrier ------------------------------------------------------------------------ */
inline void release_warp_entry(Warp &w, WarpEntry &e, unsigned warp_index, Fiber *except) {
  uint64_t bits = e.arrived;
  e.used = 0; e.arrived = 0;
  g.idle_polls = 0;
  while (bits) {
    int l = __builtin_ctzll(bits);
    bits &= bits - 1;
    Fiber *f = &g.fibers[warp_index * XPS_WAVE + l];
    if (f == except) continue;
    f->state = F_READY;
    rq_push(f);
  }
  (void)w;
}

inline uint64_t full_mask() { return g.warps[g.cur->warp].exist; }

inline void warp_barrier(uint64_t mask, const char *what, const char *file, int line) {
  Fiber *me = g.cur;
  if (!g.in_launch || !me) fatal("XP3010", "%s called outside a kernel launch (%s:%d)", what, file, line);
  Warp &w = g.warps[me->warp];
  uint64_t bit = 1ull << me->lane;
  if (!(mask & bit))
    fatal("XP3006",
          "%s (%s:%d): lane %u of warp %u (%s) is not in its own member mask 0x%llx (a %d-lane %s needs a mask "
          "naming every participating lane)",
          what, file, line, me->lane, me->warp, where(), (unsigned long long)mask, XPS_WAVE,
          XPS_WAVE == 64 ? "wavefront" : "warp");
  WarpEntry *e = nullptr, *fresh = nullptr;
  for (auto &x : w.e) {
    if (x.used && x.mask == mask) { e = &x; break; }
    if (!x.used && !fresh) fresh = &x;
  }
  if (!e) {
    if (!fresh) fatal("XP3003", "%s (%s:%d): more than %d different member masks wait in warp %u at once", what, file, line,
                      (int)MAX_WARP_ENTRIES, me->warp);
    e = fresh;
    e->used = 1; e->mask = mask; e->arrived = 0; e->what = what; e->file = file; e->line = line;
  } else if (e->line != line || e->what != what || (e->file != file && strcmp(e->file, file) != 0)) {
    fatal("XP3003",
          "warp divergence in block (%u,%u,%u) warp %u: lane %u reached %s (%s:%d) while other lanes wait at %s (%s:%d)",
          blockIdx.x, blockIdx.y, blockIdx.z, me->warp, me->lane, what, file, line, e->what, e->file, e->line);
  }
  e->arrived |= bit;
  uint64_t need = mask & w.live;
  if ((e->arrived & need) == need) {
    release_warp_entry(w, *e, me->warp, me);
    maybe_preempt(me);
    return;
  }
  me->state = F_WARP_BARRIER;
  me->wait_what = what; me->wait_file = file; me->wait_line = line; me->wait_mask = mask;
  wave_settle(me->warp);
  switch_away(me, false);
}

/* The thread gives the others a turn (atomics and fences: spin loops poll with them). */
inline void yield_now() {
  Fiber *me = g.cur;
  if (!g.in_launch || !me || !g.rq_count) return;
  me->state = F_READY;
  if (g.sched) { /* round robin in rank order, so a spinning high-priority thread lets others run */
    Fiber *nx = rq_pop_after(g.rank[me->lin]);
    rq_push(me);
    switch_away(me, false, nx);
    return;
  }
  rq_push(me);
  switch_away(me, false);
}

/* Not [[noreturn]]: under ASan a call to a noreturn function unpoisons the whole fiber stack. */
inline void fiber_exit(Fiber *me) {
  me->state = F_DONE;
  g.live--;
  g.idle_polls = 0;
  Warp &w = g.warps[me->warp];
  w.live &= ~(1ull << me->lane);
  /* exited threads no longer count at barriers */
  if (g.bar_arrived > 0 && g.bar_arrived == g.live) release_block_barrier();
  for (auto &e : w.e) {
    if (!e.used) continue;
    uint64_t need = e.mask & w.live;
    if ((e.arrived & need) == need) release_warp_entry(w, e, me->warp, nullptr);
  }
  wave_settle(me->warp);
#if XPS_ASAN
  /* frames of this exit path never return: clear their redzones so the next block can reuse
     the stack (instrumented frames poison their redzones on entry, unpoison on return) */
  {
    char *lo = (char *)__builtin_frame_address(0) - 8192;
    if (lo < me->stack_lo) lo = me->stack_lo;
    __asan_unpoison_memory_region(lo, (size_t)(me->stack_lo + me->stack_size - lo));
  }
#endif
  switch_away(me, true);
}

/* --- stacks -------------------------------------------------------------------------------- */
struct StackPool {
  char **base = nullptr;   /* mmap'd regions: guard page + stack */
  int count = 0, cap = 0;
  size_t size = 0;         /* usable bytes per stack */
  size_t page = 4096;
};
inline StackPool g_stacks;

inline void *guard_hit(void *addr) {
  for (int i = 0; i < g_stacks.count; ++i) {
    char *b = g_stacks.base[i];
    if ((char *)addr >= b && (char *)addr < b + g_stacks.page) return b;
  }
  return nullptr;
}

inline void segv_handler(int sig, siginfo_t *si, void *uctx) {
  char msg[512];
  int n;
  bool sp_out = false;
#if defined(REG_RSP)
  if (g.in_launch && g.cur) {
    char *sp = (char *)((ucontext_t *)uctx)->uc_mcontext.gregs[REG_RSP];
    sp_out = sp < g.cur->stack_lo || sp > g.cur->stack_lo + g.cur->stack_size;
  }
#else
  (void)uctx;
#endif
  if (g.in_launch && (guard_hit(si->si_addr) || sp_out))
    n = snprintf(msg, sizeof msg,
                 "xpiler-runtime-error: XP3007 thread stack overflow in kernel (%s): a thread uses more than %zu KiB "
                 "of local memory (set XPS_STACK_KB to raise the emulator's per-thread stack)\n",
                 where(), g_stacks.size / 1024);
  else if (g.in_launch)
    n = snprintf(msg, sizeof msg,
                 "xpiler-runtime-error: XP3008 invalid memory access (signal %d at address %p) in kernel code, %s\n", sig,
                 si->si_addr, where());
  else {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  if (n > 0) { ssize_t r = write(2, msg, (size_t)n); (void)r; }
  _exit(97);
}

inline void install_handlers() {
#if !XPS_ASAN
  static bool done = false;
  if (done) return;
  done = true;
  static char altstack[64 * 1024];
  stack_t ss;
  ss.ss_sp = altstack; ss.ss_size = sizeof altstack; ss.ss_flags = 0;
  sigaltstack(&ss, nullptr);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = segv_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
#endif
}

inline void ensure_stacks(int n) {
  if (!g_stacks.size) {
    long kb = XPS_ASAN ? 512 : 128;
    if (const char *s = getenv("XPS_STACK_KB")) { long v = atol(s); if (v >= 16) kb = v; }
    g_stacks.page = (size_t)sysconf(_SC_PAGESIZE);
    g_stacks.size = ((size_t)kb * 1024 + g_stacks.page - 1) / g_stacks.page * g_stacks.page;
  }
  if (n <= g_stacks.count) return;
  if (n > g_stacks.cap) {
    int cap = n < 64 ? 64 : n;
    char **nb = (char **)realloc(g_stacks.base, sizeof(char *) * cap);
    if (!nb) fatal("XP3009", "out of memory allocating %d thread stacks", n);
    g_stacks.base = nb; g_stacks.cap = cap;
  }
  for (int i = g_stacks.count; i < n; ++i) {
    size_t total = g_stacks.size + g_stacks.page;
    void *p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      fatal("XP3009", "cannot map %d thread stacks of %zu KiB (memory limit?)", n, g_stacks.size / 1024);
    mprotect(p, g_stacks.page, PROT_NONE);
    g_stacks.base[i] = (char *)p;
  }
  g_stacks.count = n;
}

/* --- launching ----------------------------------------------------------------------------- */
struct Cfg {
  dim3 grid, block;
  size_t shmem;
};
inline Cfg cfg(dim3 grid, dim3 block, size_t shmem = 0, const void * /*stream*/ = nullptr) { return Cfg{grid, block, shmem}; }
inline Cfg cfg(dim3 grid, dim3 block, size_t shmem, int /*stream 0*/) { return Cfg{grid, block, shmem}; }

inline void prepare_block_state(int n) {
  int nw = (n + XPS_WAVE - 1) / XPS_WAVE;
  if (n > g.nfibers_cap) {
    free(g.fibers); free(g.rq); free(g.bar_waiters); free(g.rank); free(g.at_rank);
    g.fibers = (Fiber *)calloc(n, sizeof(Fiber));
    g.rq = (Fiber **)calloc(n + 1, sizeof(Fiber *));
    g.bar_waiters = (Fiber **)calloc(n, sizeof(Fiber *));
    g.rank = (int *)calloc(n, sizeof(int));
    g.at_rank = (int *)calloc(n, sizeof(int));
    g.nfibers_cap = n;
  }
  if (nw > g.nwarps_cap) {
    free(g.warps);
    g.warps = (Warp *)calloc(nw, sizeof(Warp));
    if (!g.warps || !g.fibers) fatal("XP3009", "out of memory for the state of %d threads", n);
    g.nwarps_cap = nw;
  }
  g.n = n; g.nwarps = nw; g.rq_cap = n + 1;
  ensure_stacks(n);
}

inline void run_block() {
  const int n = g.n;
  poison_shared();
  g.idle_polls = 0;
  const unsigned bx = blockDim.x, by = blockDim.y;
  for (int w = 0; w < g.nwarps; ++w) {
    Warp &W = g.warps[w];
    int lanes = n - w * XPS_WAVE;
    if (lanes > XPS_WAVE) lanes = XPS_WAVE;
    W.exist = lanes == 64 ? ~0ull : ((1ull << lanes) - 1);
    W.live = W.exist;
    for (auto &e : W.e) e.used = 0, e.arrived = 0;
    W.wave_waiting = 0;
  }
  g.rq_head = g.rq_tail = g.rq_count = 0;
  memset(g.rdy, 0, sizeof g.rdy);
  if (g.sched) assign_ranks();
  g.bar_arrived = 0; g.bar_nwaiters = 0; g.bar_round = 0;
  g.bar_red[0][0] = 0; g.bar_red[0][1] = 1; g.bar_red[0][2] = 0;
  g.live = n;
  for (int i = 0; i < n; ++i) {
    Fiber &f = g.fibers[i];
    f.lin = (unsigned)i;
    f.tid = uint3{(unsigned)i % bx, ((unsigned)i / bx) % by, (unsigned)i / (bx * by)};
    f.lane = (unsigned)i % XPS_WAVE;
    f.warp = (unsigned)i / XPS_WAVE;
    f.state = F_READY;
    f.asan_fake = nullptr;
    f.stack_lo = g_stacks.base[i] + g_stacks.page;
    f.stack_size = g_stacks.size;
    /* initial frame consumed by ctx_switch: [mxcsr|fcw][r15][r14][r13][r12][rbx][rbp][ret] */
    uintptr_t top = ((uintptr_t)(f.stack_lo + f.stack_size)) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 80);
    unsigned ctl[2] = {g.mxcsr_fcw[0], g.mxcsr_fcw[1]};
    memcpy(&sp[0], ctl, 8);
    sp[1] = 0; sp[2] = 0; sp[3] = 0;                /* r15 r14 r13 */
    sp[4] = (uint64_t)(uintptr_t)&fiber_main;       /* r12: entry */
    sp[5] = (uint64_t)(uintptr_t)&f;                /* rbx: argument */
    sp[6] = 0;                                      /* rbp */
    sp[7] = (uint64_t)(uintptr_t)&fiber_trampoline; /* return address */
    f.sp = sp;
    rq_push(&f);
  }
  Fiber *first = rq_pop();
  first->state = F_RUNNING;
  g.cur = first;
  threadIdx = first->tid;
  do_switch(&g.sched_sp, first->sp, first->stack_lo, first->stack_size, &g.sched_fake);
  g.cur = nullptr;
  if (g.live > 0) {
    /* nobody can run, somebody has not finished: a deadlock.  Describe it. */
    char buf[1400];
    int len = snprintf(buf, sizeof buf, "deadlock in block (%u,%u,%u) of %s: %d of %d threads can never continue:",
                       blockIdx.x, blockIdx.y, blockIdx.z, g.kernel_site, g.live, n);
    int nbar = 0, nwarp = 0;
    const Fiber *fb = nullptr, *fw = nullptr;
    for (int i = 0; i < n; ++i) {
      const Fiber &f = g.fibers[i];
      if (f.state == F_BLOCK_BARRIER) { if (!nbar++) fb = &f; }
      else if (f.state == F_WARP_BARRIER || f.state == F_WAVE_BARRIER) { if (!nwarp++) fw = &f; }
    }
    if (fb && len < (int)sizeof buf)
      len += snprintf(buf + len, sizeof buf - len, " %d wait at %s (%s:%d), first thread (%u,%u,%u);", nbar,
                      fb->wait_what, fb->wait_file, fb->wait_line, fb->tid.x, fb->tid.y, fb->tid.z);
    if (fw && len < (int)sizeof buf)
      len += snprintf(buf + len, sizeof buf - len,
                      " %d wait at warp collective %s (%s:%d), first thread (%u,%u,%u) lane %u of warp %u, mask 0x%llx;",
                      nwarp, fw->wait_what, fw->wait_file, fw->wait_line, fw->tid.x, fw->tid.y, fw->tid.z, fw->lane,
                      fw->warp, (unsigned long long)fw->wait_mask);
    if (len < (int)sizeof buf)
      snprintf(buf + len, sizeof buf - len, " %d exited (a barrier or warp collective inside code that not every thread reaches)",
               n - g.live);
    fatal("XP3001", "%s", buf);
  }
}

template <class F> inline void invoke_thunk(void *p) { (*(F *)p)(); }

template <class F> inline void launch_impl(const Cfg &c, F &body, const char *site) {
  if (g.in_launch)
    fatal("XP3011", "kernel launch from inside a kernel (dynamic parallelism) at %s is not supported by the emulator", site);
  const dim3 gr = c.grid, bl = c.block;
  unsigned long long nthreads = (unsigned long long)bl.x * bl.y * bl.z;
  if (!gr.x || !gr.y || !gr.z || !bl.x || !bl.y || !bl.z)
    fatal("XP3004", "invalid launch configuration at %s: grid (%u,%u,%u) block (%u,%u,%u) has a zero dimension", site, gr.x,
          gr.y, gr.z, bl.x, bl.y, bl.z);
  if (nthreads > 1024 || bl.x > 1024 || bl.y > 1024 || bl.z > 64)
    fatal("XP3004",
          "invalid launch configuration at %s: block (%u,%u,%u) = %llu threads exceeds the limit (1024 threads; x,y <= 1024, "
          "z <= 64)",
          site, bl.x, bl.y, bl.z, nthreads);
  if (gr.y > 65535 || gr.z > 65535 || gr.x > 2147483647u)
    fatal("XP3004", "invalid launch configuration at %s: grid (%u,%u,%u) exceeds the limits (y, z <= 65535)", site, gr.x, gr.y,
          gr.z);
  if (c.shmem > 232448)
    fatal("XP3005", "launch at %s asks for %zu bytes of dynamic shared memory; the largest block allows 232448 (227 KiB)", site,
          c.shmem);
  install_handlers();
  {
    unsigned m, cw = 0;
    __asm__ volatile("stmxcsr %0" : "=m"(m));
    unsigned short s;
    __asm__ volatile("fnstcw %0" : "=m"(s));
    cw = s;
    g.mxcsr_fcw[0] = m; g.mxcsr_fcw[1] = cw;
  }
  init_schedule();
  prepare_block_state((int)nthreads);
  void *smem = malloc(c.shmem ? c.shmem : 1);
  if (!smem) fatal("XP3009", "out of memory for %zu bytes of dynamic shared memory", c.shmem);
  if (c.shmem) memset(smem, 0xFF, c.shmem); /* uninitialised on a GPU: poison it */
  g_dyn_smem = smem;
  g_dyn_smem_bytes = c.shmem;
  gridDim = gr;
  blockDim = bl;
  g.invoke = &invoke_thunk<F>;
  g.body = (void *)&body;
  g.kernel_site = site;
  g.in_launch = true;
  for (unsigned z = 0; z < gr.z; ++z)
    for (unsigned y = 0; y < gr.y; ++y)
      for (unsigned x = 0; x < gr.x; ++x) {
        blockIdx = uint3{x, y, z};
        run_block();
      }
  g.in_launch = false;
  g_dyn_smem = nullptr;
  g_dyn_smem_bytes = 0;
  free(smem);
  threadIdx = uint3{0, 0, 0};
}

template <class F> inline void launch(const Cfg &c, F &&body, const char *site = __builtin_FILE(), int line = __builtin_LINE()) {
  static char buf[512];
  snprintf(buf, sizeof buf, "the launch at %s:%d", site, line);
  launch_impl(c, body, buf);
}

inline unsigned lane_id() { return g.cur ? g.cur->lane : 0; }

} // namespace xps

/* Public launch helper (the harness contract's name). */
template <class F> inline void xps_launch(dim3 grid, dim3 block, size_t shmem, F &&body) {
  ::xps::launch(::xps::cfg(grid, block, shmem), body);
}

#define XP_LAUNCH(J, F, ARGS)                                                                                          \
  ::xps::launch(::xps::cfg(dim3((J).grid.x, (J).grid.y, (J).grid.z), dim3((J).block.x, (J).block.y, (J).block.z),  \
                           (size_t)(J).shared),                                                                        \
                [=]() { F ARGS; })

/* dynamic shared memory declared through HIP's macro */
#define HIP_DYNAMIC_SHARED(type, var) type *const &var = reinterpret_cast<type *const &>(::xps::g_dyn_smem)
#define HIP_DYNAMIC_SHARED_ATTRIBUTE
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_SYMBOL(x) x
#define hipLaunchKernelGGL(K, G, B, SH, ST, ...) ::xps::launch(::xps::cfg((G), (B), (SH), (ST)), [&]() { K(__VA_ARGS__); })

/* ------------------------------------------------------------------------------------------
 * Barriers and fences
 * ---------------------------------------------------------------------------------------- */
inline void __syncthreads(XPS_SITE) { ::xps::block_barrier("__syncthreads()", XPS_SITE_FWD); }
inline int __syncthreads_count(int p, XPS_SITE) { return ::xps::block_barrier("__syncthreads_count()", XPS_SITE_FWD, p, 0); }
inline int __syncthreads_and(int p, XPS_SITE) { return ::xps::block_barrier("__syncthreads_and()", XPS_SITE_FWD, p, 1); }
inline int __syncthreads_or(int p, XPS_SITE) { return ::xps::block_barrier("__syncthreads_or()", XPS_SITE_FWD, p, 2); }
inline void __builtin_amdgcn_s_barrier(XPS_SITE) { ::xps::block_barrier("__builtin_amdgcn_s_barrier()", XPS_SITE_FWD); }
inline void __syncwarp(unsigned long long mask = ~0ull, XPS_SITE) {
  if (mask == ~0ull || mask == 0xffffffffull) mask &= ::xps::full_mask();
  ::xps::warp_barrier(mask, "__syncwarp()", XPS_SITE_FWD);
}
inline void __threadfence() { ::xps::poll_done(false); }
// CUDA's device trap: the launch fails (here: the process stops, so the test fails)
[[noreturn]] inline void __trap() { __builtin_trap(); }
inline void __threadfence_block() { ::xps::poll_done(false); }
inline void __threadfence_system() { ::xps::poll_done(false); }
inline void __builtin_amdgcn_fence(int, const char *) {}
inline void __builtin_amdgcn_wave_barrier(XPS_SITE) {
  ::xps::wave_barrier("__builtin_amdgcn_wave_barrier()", XPS_SITE_FWD);
}
inline void __nanosleep(unsigned) { ::xps::poll_done(false); }
inline long long clock64() {
  unsigned lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((long long)hi << 32) | lo;
}
inline long long wall_clock64() { return clock64(); }
inline unsigned __lane_id() { return ::xps::lane_id(); }
inline unsigned __builtin_amdgcn_workitem_id_x() { return threadIdx.x; }
inline unsigned __builtin_amdgcn_workitem_id_y() { return threadIdx.y; }
inline unsigned __builtin_amdgcn_workitem_id_z() { return threadIdx.z; }
inline unsigned __builtin_amdgcn_workgroup_id_x() { return blockIdx.x; }
inline unsigned __builtin_amdgcn_workgroup_id_y() { return blockIdx.y; }
inline unsigned __builtin_amdgcn_workgroup_id_z() { return blockIdx.z; }
inline unsigned __builtin_amdgcn_mbcnt_lo(unsigned mask, unsigned x) {
  unsigned l = ::xps::lane_id();
  return x + __builtin_popcount(mask & (l >= 32 ? ~0u : ((1u << l) - 1)));
}
inline unsigned __builtin_amdgcn_mbcnt_hi(unsigned mask, unsigned x) {
  unsigned l = ::xps::lane_id();
  return x + (l <= 32 ? 0 : __builtin_popcount(mask & ((1u << (l - 32)) - 1)));
}

/* ------------------------------------------------------------------------------------------
 * Warp / wavefront collectives
 * ---------------------------------------------------------------------------------------- */
namespace xps {

enum ShflMode { SH_IDX, SH_UP, SH_DOWN, SH_XOR };

inline uint64_t norm_mask(unsigned long long mask) {
  /* A CUDA-style full 32-bit mask means "the whole warp" in CUDA mode; under wave64 a
   * 32-bit mask is taken literally (lanes 32..63 are then not members: XP3006). */
  return (uint64_t)mask;
}

template <class T> inline T shfl(uint64_t mask, T var, int mode, int arg, int width, const char *what, const char *file,
                                 int line) {
  static_assert(sizeof(T) <= 16, "__shfl* supports values of at most 16 bytes");
  static_assert(std::is_trivially_copyable<T>::value, "__shfl* needs a trivially copyable value");
  Fiber *me = g.cur;
  if (!g.in_launch || !me) fatal("XP3010", "%s called outside a kernel launch (%s:%d)", what, file, line);
  if (width <= 0 || width > XPS_WAVE || (width & (width - 1)))
    fatal("XP3012", "%s (%s:%d): width %d is not a power of two in [1, %d]", what, file, line, width, XPS_WAVE);
  Warp &w = g.warps[me->warp];
  int lane = (int)me->lane;
  memcpy(w.slot[lane], &var, sizeof(T));
  warp_barrier(mask, what, file, line);
  int base = lane & ~(width - 1);
  int src = lane;
  switch (mode) {
    case SH_IDX: src = base + (arg & (width - 1)); break;
    case SH_UP: src = (lane - base) >= arg ? lane - arg : lane; break;
    case SH_DOWN: src = (lane - base) + arg < width ? lane + arg : lane; break;
    case SH_XOR: src = lane ^ arg; if (src >= base + width || src < 0 || src >= XPS_WAVE) src = lane; break;
  }
  T r;
  uint64_t part = mask & w.live;
  if (src == lane || (src >= 0 && src < XPS_WAVE && ((part >> src) & 1)))
    memcpy(&r, w.slot[src], sizeof(T));
  else
    memset((void *)&r, 0xFF, sizeof(T)); /* reading an inactive lane: undefined on a GPU, poison here */
  warp_barrier(mask, what, file, line);
  return r;
}

inline uint64_t ballot(uint64_t mask, int pred, const char *what, const char *file, int line) {
  Fiber *me = g.cur;
  if (!g.in_launch || !me) fatal("XP3010", "%s called outside a kernel launch (%s:%d)", what, file, line);
  Warp &w = g.warps[me->warp];
  w.slot[me->lane][0] = pred != 0;
  warp_barrier(mask, what, file, line);
  uint64_t part = mask & w.live, r = 0;
  for (uint64_t b = part; b; b &= b - 1) {
    int l = __builtin_ctzll(b);
    if (w.slot[l][0]) r |= 1ull << l;
  }
  warp_barrier(mask, what, file, line);
  return r;
}

template <class T, class Op> inline T warp_reduce(uint64_t mask, T v, Op op, const char *what, const char *file, int line) {
  Fiber *me = g.cur;
  if (!g.in_launch || !me) fatal("XP3010", "%s called outside a kernel launch (%s:%d)", what, file, line);
  Warp &w = g.warps[me->warp];
  memcpy(w.slot[me->lane], &v, sizeof(T));
  warp_barrier(mask, what, file, line);
  uint64_t part = mask & w.live;
  bool first = true;
  T r{};
  for (uint64_t b = part; b; b &= b - 1) {
    T x;
    memcpy(&x, w.slot[__builtin_ctzll(b)], sizeof(T));
    r = first ? x : op(r, x);
    first = false;
  }
  warp_barrier(mask, what, file, line);
  return r;
}

} // namespace xps

#define XPS_FULLMASK_DEFAULT(m) ((m) == 0xffffffffull && XPS_WAVE == 32 ? ::xps::full_mask() : (uint64_t)(m))

template <class T> inline T __shfl_sync(unsigned long long mask, T var, int srcLane, int width = warpSize, XPS_SITE) {
  return ::xps::shfl(XPS_FULLMASK_DEFAULT(mask), var, ::xps::SH_IDX, srcLane, width, "__shfl_sync", XPS_SITE_FWD);
}
template <class T> inline T __shfl_up_sync(unsigned long long mask, T var, unsigned delta, int width = warpSize, XPS_SITE) {
  return ::xps::shfl(XPS_FULLMASK_DEFAULT(mask), var, ::xps::SH_UP, (int)delta, width, "__shfl_up_sync", XPS_SITE_FWD);
}
template <class T> inline T __shfl_down_sync(unsigned long long mask, T var, unsigned delta, int width = warpSize, XPS_SITE) {
  return ::xps::shfl(XPS_FULLMASK_DEFAULT(mask), var, ::xps::SH_DOWN, (int)delta, width, "__shfl_down_sync", XPS_SITE_FWD);
}
template <class T> inline T __shfl_xor_sync(unsigned long long mask, T var, int laneMask, int width = warpSize, XPS_SITE) {
  return ::xps::shfl(XPS_FULLMASK_DEFAULT(mask), var, ::xps::SH_XOR, laneMask, width, "__shfl_xor_sync", XPS_SITE_FWD);
}
/* HIP (and pre-Volta CUDA) forms without a mask: the whole warp/wavefront */
template <class T> inline T __shfl(T var, int srcLane, int width = warpSize, XPS_SITE) {
  return ::xps::shfl(::xps::full_mask(), var, ::xps::SH_IDX, srcLane, width, "__shfl", XPS_SITE_FWD);
}
template <class T> inline T __shfl_up(T var, unsigned delta, int width = warpSize, XPS_SITE) {
  return ::xps::shfl(::xps::full_mask(), var, ::xps::SH_UP, (int)delta, width, "__shfl_up", XPS_SITE_FWD);
}
template <class T> inline T __shfl_down(T var, unsigned delta, int width = warpSize, XPS_SITE) {
  return ::xps::shfl(::xps::full_mask(), var, ::xps::SH_DOWN, (int)delta, width, "__shfl_down", XPS_SITE_FWD);
}
template <class T> inline T __shfl_xor(T var, int laneMask, int width = warpSize, XPS_SITE) {
  return ::xps::shfl(::xps::full_mask(), var, ::xps::SH_XOR, laneMask, width, "__shfl_xor", XPS_SITE_FWD);
}
inline int __builtin_amdgcn_ds_bpermute(int byte_index, int v, XPS_SITE) {
  return ::xps::shfl(::xps::full_mask(), v, ::xps::SH_IDX, (byte_index >> 2) & (XPS_WAVE - 1), XPS_WAVE,
                     "__builtin_amdgcn_ds_bpermute", XPS_SITE_FWD);
}
inline int __builtin_amdgcn_readlane(int v, int lane, XPS_SITE) {
  return ::xps::shfl(::xps::full_mask(), v, ::xps::SH_IDX, lane, XPS_WAVE, "__builtin_amdgcn_readlane", XPS_SITE_FWD);
}
inline int __builtin_amdgcn_readfirstlane(int v, XPS_SITE) {
  uint64_t m = ::xps::full_mask();
  uint64_t live = ::xps::g.warps[::xps::g.cur->warp].live;
  int first = __builtin_ctzll(live ? live : 1);
  return ::xps::shfl(m, v, ::xps::SH_IDX, first, XPS_WAVE, "__builtin_amdgcn_readfirstlane", XPS_SITE_FWD);
}

#if XPS_WAVE == 64
typedef unsigned long long xps_ballot_t;
#else
typedef unsigned xps_ballot_t;
#endif
inline xps_ballot_t __ballot_sync(unsigned long long mask, int pred, XPS_SITE) {
  return (xps_ballot_t)::xps::ballot(XPS_FULLMASK_DEFAULT(mask), pred, "__ballot_sync", XPS_SITE_FWD);
}
inline int __any_sync(unsigned long long mask, int pred, XPS_SITE) {
  return ::xps::ballot(XPS_FULLMASK_DEFAULT(mask), pred, "__any_sync", XPS_SITE_FWD) != 0;
}
inline int __all_sync(unsigned long long mask, int pred, XPS_SITE) {
  uint64_t m = XPS_FULLMASK_DEFAULT(mask);
  uint64_t part = m & ::xps::g.warps[::xps::g.cur ? ::xps::g.cur->warp : 0].live;
  return ::xps::ballot(m, pred, "__all_sync", XPS_SITE_FWD) == part;
}
inline xps_ballot_t __activemask() { return (xps_ballot_t)::xps::g.warps[::xps::g.cur->warp].live; }
inline unsigned long long __ballot(int pred, XPS_SITE) { return ::xps::ballot(::xps::full_mask(), pred, "__ballot", XPS_SITE_FWD); }
inline int __any(int pred, XPS_SITE) { return ::xps::ballot(::xps::full_mask(), pred, "__any", XPS_SITE_FWD) != 0; }
inline int __all(int pred, XPS_SITE) {
  uint64_t part = ::xps::full_mask() & ::xps::g.warps[::xps::g.cur->warp].live;
  return ::xps::ballot(::xps::full_mask(), pred, "__all", XPS_SITE_FWD) == part;
}
#define XPS_WARP_REDUCE(name, T, expr)                                                                             \
  inline T name(unsigned long long mask, T v, XPS_SITE) {                                                        \
    return ::xps::warp_reduce(XPS_FULLMASK_DEFAULT(mask), v, [](T a, T b) { return expr; }, #name, XPS_SITE_FWD); \
  }
XPS_WARP_REDUCE(__reduce_add_sync, int, a + b)
XPS_WARP_REDUCE(__reduce_add_sync, unsigned, a + b)
XPS_WARP_REDUCE(__reduce_min_sync, int, a < b ? a : b)
XPS_WARP_REDUCE(__reduce_min_sync, unsigned, a < b ? a : b)
XPS_WARP_REDUCE(__reduce_max_sync, int, a > b ? a : b)
XPS_WARP_REDUCE(__reduce_max_sync, unsigned, a > b ? a : b)
XPS_WARP_REDUCE(__reduce_and_sync, unsigned, a & b)
XPS_WARP_REDUCE(__reduce_or_sync, unsigned, a | b)
XPS_WARP_REDUCE(__reduce_xor_sync, unsigned, a ^ b)

/* ------------------------------------------------------------------------------------------
 * Atomics (one OS thread runs all fibers: a read-modify-write is atomic by construction)
 * ---------------------------------------------------------------------------------------- */
#define XPS_ATOMIC2(name, T, update)                                                                               \
  inline T name(T *p, T v) {                                                                                     \
    T old = *p;                                                                                                  \
    *p = (update);                                                                                               \
    ::xps::poll_done(memcmp(&old, p, sizeof(T)) != 0);                                                           \
    return old;                                                                                                  \
  }                                                                                                              \
  inline T name##_block(T *p, T v) { return name(p, v); }                                                        \
  inline T name##_system(T *p, T v) { return name(p, v); }
#define XPS_ATOMIC_ARITH(T)                                                                                        \
  XPS_ATOMIC2(atomicAdd, T, old + v)                                                                             \
  XPS_ATOMIC2(atomicSub, T, old - v)                                                                             \
  XPS_ATOMIC2(atomicExch, T, v)                                                                                  \
  XPS_ATOMIC2(atomicMax, T, old > v ? old : v)                                                                   \
  XPS_ATOMIC2(atomicMin, T, old < v ? old : v)
XPS_ATOMIC_ARITH(int)
XPS_ATOMIC_ARITH(unsigned)
XPS_ATOMIC_ARITH(unsigned long long)
XPS_ATOMIC_ARITH(long long)
XPS_ATOMIC_ARITH(float)
XPS_ATOMIC_ARITH(double)
XPS_ATOMIC_ARITH(_Float16)
#define XPS_ATOMIC_BITS(T)                                                                                         \
  XPS_ATOMIC2(atomicAnd, T, old & v)                                                                             \
  XPS_ATOMIC2(atomicOr, T, old | v)                                                                              \
  XPS_ATOMIC2(atomicXor, T, old ^ v)
XPS_ATOMIC_BITS(int)
XPS_ATOMIC_BITS(unsigned)
XPS_ATOMIC_BITS(unsigned long long)
inline unsigned atomicInc(unsigned *p, unsigned v) { unsigned old = *p; *p = old >= v ? 0 : old + 1; ::xps::poll_done(*p != old); return old; }
inline unsigned atomicDec(unsigned *p, unsigned v) { unsigned old = *p; *p = (old == 0 || old > v) ? v : old - 1; ::xps::poll_done(*p != old); return old; }
#define XPS_ATOMIC_CAS(T)                                                                                          \
  inline T atomicCAS(T *p, T cmp, T v) {                                                                         \
    T old = *p;                                                                                                  \
    if (old == cmp) *p = v;                                                                                      \
    ::xps::poll_done(*p != old); /* a CAS is often a spin loop: let the lock holder run */                       \
    return old;                                                                                                  \
  }                                                                                                              \
  inline T atomicCAS_block(T *p, T cmp, T v) { return atomicCAS(p, cmp, v); }                                   \
  inline T atomicCAS_system(T *p, T cmp, T v) { return atomicCAS(p, cmp, v); }
XPS_ATOMIC_CAS(int)
XPS_ATOMIC_CAS(unsigned)
XPS_ATOMIC_CAS(unsigned long long)
XPS_ATOMIC_CAS(unsigned short)

/* ------------------------------------------------------------------------------------------
 * Integer / bit intrinsics and math
 * ---------------------------------------------------------------------------------------- */
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline int __mul24(int a, int b) { return (int)((long long)((a << 8) >> 8) * ((b << 8) >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffff) * (b & 0xffffff); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
inline int __float_as_int(float f) { int x; memcpy(&x, &f, 4); return x; }
inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned x; memcpy(&x, &f, 4); return x; }
inline double __longlong_as_double(long long x) { double f; memcpy(&f, &x, 8); return f; }
inline long long __double_as_longlong(double f) { long long x; memcpy(&x, &f, 8); return x; }

#define XPS_MINMAX(T1, T2, R)                                                                                      \
  inline R max(T1 a, T2 b) { return (R)a > (R)b ? (R)a : (R)b; }                                                 \
  inline R min(T1 a, T2 b) { return (R)a < (R)b ? (R)a : (R)b; }
XPS_MINMAX(int, int, int)
XPS_MINMAX(unsigned, unsigned, unsigned)
XPS_MINMAX(int, unsigned, unsigned)
XPS_MINMAX(unsigned, int, unsigned)
XPS_MINMAX(long, long, long)
XPS_MINMAX(unsigned long, unsigned long, unsigned long)
XPS_MINMAX(long long, long long, long long)
XPS_MINMAX(unsigned long long, unsigned long long, unsigned long long)
XPS_MINMAX(long long, int, long long)
XPS_MINMAX(int, long long, long long)
XPS_MINMAX(unsigned long, int, unsigned long)
XPS_MINMAX(int, unsigned long, unsigned long)
inline float max(float a, float b) { return fmaxf(a, b); }
inline float min(float a, float b) { return fminf(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline float max(float a, int b) { return fmaxf(a, (float)b); }
inline float max(int a, float b) { return fmaxf((float)a, b); }
inline float min(float a, int b) { return fminf(a, (float)b); }
inline float min(int a, float b) { return fminf((float)a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double max(double a, float b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
template <class A, class B> inline typename std::common_type<A, B>::type max(A a, B b) {
  typedef typename std::common_type<A, B>::type R;
  return (R)a > (R)b ? (R)a : (R)b;
}
template <class A, class B> inline typename std::common_type<A, B>::type min(A a, B b) {
  typedef typename std::common_type<A, B>::type R;
  return (R)a < (R)b ? (R)a : (R)b;
}
inline _Float16 max(_Float16 a, _Float16 b) { return a > b ? a : b; }
inline _Float16 min(_Float16 a, _Float16 b) { return a < b ? a : b; }

inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float *s, float *c) { *s = sinf(x); *c = cosf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline float saturatef(float x) { return __saturatef(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fadd_rz(float a, float b) { return a + b; }
inline float __fmul_rz(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)floorf(x); }
inline int __float2int_ru(float x) { return (int)ceilf(x); }
inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline int __double2int_rn(double x) { return (int)nearbyint(x); }
inline float __double2float_rn(double x) { return (float)x; }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
inline float sinpif(float x) { return sinf(3.14159265358979323846f * x); }
inline float cospif(float x) { return cosf(3.14159265358979323846f * x); }

/* ------------------------------------------------------------------------------------------
 * Half precision (binary16 = _Float16) and bfloat16
 * ---------------------------------------------------------------------------------------- */
typedef _Float16 __half;
typedef _Float16 half;
struct __half2 { __half x, y; };
typedef __half2 half2;
struct __half2_raw { unsigned short x, y; };
struct __half_raw { unsigned short x; };

inline __half __float2half(float f) { return (__half)f; }
inline __half __float2half_rn(float f) { return (__half)f; }
inline __half __float2half_rz(float f) { return (__half)f; }
inline float __half2float(__half h) { return (float)h; }
inline __half __double2half(double d) { return (__half)d; }
inline __half __int2half_rn(int i) { return (__half)(float)i; }
inline __half __uint2half_rn(unsigned i) { return (__half)(float)i; }
inline int __half2int_rn(__half h) { return (int)nearbyintf((float)h); }
inline int __half2int_rz(__half h) { return (int)(float)h; }
inline __half __ushort_as_half(unsigned short u) { __half h; memcpy(&h, &u, 2); return h; }
inline unsigned short __half_as_ushort(__half h) { unsigned short u; memcpy(&u, &h, 2); return u; }
inline __half __short_as_half(short u) { __half h; memcpy(&h, &u, 2); return h; }
inline short __half_as_short(__half h) { short u; memcpy(&u, &h, 2); return u; }
inline __half __hadd(__half a, __half b) { return (__half)((float)a + (float)b); }
inline __half __hsub(__half a, __half b) { return (__half)((float)a - (float)b); }
inline __half __hmul(__half a, __half b) { return (__half)((float)a * (float)b); }
inline __half __hdiv(__half a, __half b) { return (__half)((float)a / (float)b); }
inline __half __hfma(__half a, __half b, __half c) { return (__half)fmaf((float)a, (float)b, (float)c); }
inline __half __hneg(__half a) { return (__half)(-(float)a); }
inline __half __habs(__half a) { return (__half)fabsf((float)a); }
inline __half __hmax(__half a, __half b) { return (float)a > (float)b ? a : b; }
inline __half __hmin(__half a, __half b) { return (float)a < (float)b ? a : b; }
inline bool __heq(__half a, __half b) { return (float)a == (float)b; }
inline bool __hne(__half a, __half b) { return (float)a != (float)b; }
inline bool __hlt(__half a, __half b) { return (float)a < (float)b; }
inline bool __hle(__half a, __half b) { return (float)a <= (float)b; }
inline bool __hgt(__half a, __half b) { return (float)a > (float)b; }
inline bool __hge(__half a, __half b) { return (float)a >= (float)b; }
inline bool __hisnan(__half a) { return std::isnan((float)a); }
inline bool __hisinf(__half a) { return std::isinf((float)a); }
inline __half hexp(__half a) { return (__half)expf((float)a); }
inline __half hlog(__half a) { return (__half)logf((float)a); }
inline __half hsqrt(__half a) { return (__half)sqrtf((float)a); }
inline __half hrsqrt(__half a) { return (__half)(1.0f / sqrtf((float)a)); }
inline __half hrcp(__half a) { return (__half)(1.0f / (float)a); }
inline __half htanh(__half a) { return (__half)tanhf((float)a); }
inline __half hfloor(__half a) { return (__half)floorf((float)a); }
inline __half hceil(__half a) { return (__half)ceilf((float)a); }
inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 make_half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 __half2half2(__half a) { return __half2{a, a}; }
inline __half2 __float2half2_rn(float f) { return __half2{(__half)f, (__half)f}; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{(__half)a, (__half)b}; }
inline __half __low2half(__half2 v) { return v.x; }
inline __half __high2half(__half2 v) { return v.y; }
inline float __low2float(__half2 v) { return (float)v.x; }
inline float __high2float(__half2 v) { return (float)v.y; }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2{a.x, b.x}; }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2{a.y, b.y}; }
inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
inline __half2 __hsub2(__half2 a, __half2 b) { return __half2{__hsub(a.x, b.x), __hsub(a.y, b.y)}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{__hmul(a.x, b.x), __hmul(a.y, b.y)}; }
inline __half2 __h2div(__half2 a, __half2 b) { return __half2{__hdiv(a.x, b.x), __hdiv(a.y, b.y)}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
inline __half2 __hmax2(__half2 a, __half2 b) { return __half2{__hmax(a.x, b.x), __hmax(a.y, b.y)}; }
inline __half2 __hmin2(__half2 a, __half2 b) { return __half2{__hmin(a.x, b.x), __hmin(a.y, b.y)}; }
inline __half2 __hneg2(__half2 a) { return __half2{__hneg(a.x), __hneg(a.y)}; }
inline __half2 __habs2(__half2 a) { return __half2{__habs(a.x), __habs(a.y)}; }
inline __half2 h2exp(__half2 a) { return __half2{hexp(a.x), hexp(a.y)}; }
inline __half2 h2sqrt(__half2 a) { return __half2{hsqrt(a.x), hsqrt(a.y)}; }
inline __half2 operator+(__half2 a, __half2 b) { return __hadd2(a, b); }
inline __half2 operator-(__half2 a, __half2 b) { return __hsub2(a, b); }
inline __half2 operator*(__half2 a, __half2 b) { return __hmul2(a, b); }
inline __half2 operator/(__half2 a, __half2 b) { return __h2div(a, b); }
inline __half2 &operator+=(__half2 &a, __half2 b) { return a = a + b; }
inline __half2 &operator*=(__half2 &a, __half2 b) { return a = a * b; }

/* bfloat16: 16 raw bits, conversions round to nearest even */
struct __nv_bfloat16 {
  unsigned short raw;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) {
    unsigned u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) raw = (unsigned short)((u >> 16) | 0x40);
    else raw = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  __nv_bfloat16(double d) : __nv_bfloat16((float)d) {}
  __nv_bfloat16(int i) : __nv_bfloat16((float)i) {}
  operator float() const { unsigned u = (unsigned)raw << 16; float f; memcpy(&f, &u, 4); return f; }
  __nv_bfloat16 &operator+=(float v) { return *this = __nv_bfloat16((float)*this + v); }
  __nv_bfloat16 &operator-=(float v) { return *this = __nv_bfloat16((float)*this - v); }
  __nv_bfloat16 &operator*=(float v) { return *this = __nv_bfloat16((float)*this * v); }
  __nv_bfloat16 &operator/=(float v) { return *this = __nv_bfloat16((float)*this / v); }
};
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat16 hip_bfloat16;
typedef __nv_bfloat16 __hip_bfloat16;
struct __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __nv_bfloat162 nv_bfloat162;
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }

/* ------------------------------------------------------------------------------------------
 * Vector types
 * ---------------------------------------------------------------------------------------- */
#define XPS_VEC2(N, T, A)                                                                                          \
  struct alignas(A) N { T x, y; };                                                                               \
  inline N make_##N(T x, T y) { return N{x, y}; }
#define XPS_VEC3(N, T)                                                                                             \
  struct N { T x, y, z; };                                                                                       \
  inline N make_##N(T x, T y, T z) { return N{x, y, z}; }
#define XPS_VEC4(N, T, A)                                                                                          \
  struct alignas(A) N { T x, y, z, w; };                                                                         \
  inline N make_##N(T x, T y, T z, T w) { return N{x, y, z, w}; }
XPS_VEC2(float2, float, 8) XPS_VEC3(float3, float) XPS_VEC4(float4, float, 16)
XPS_VEC2(double2, double, 16) XPS_VEC3(double3, double) XPS_VEC4(double4, double, 32)
XPS_VEC2(int2, int, 8) XPS_VEC3(int3, int) XPS_VEC4(int4, int, 16)
XPS_VEC2(uint2, unsigned, 8) XPS_VEC4(uint4, unsigned, 16)
XPS_VEC2(char2, signed char, 2) XPS_VEC4(char4, signed char, 4)
XPS_VEC2(uchar2, unsigned char, 2) XPS_VEC4(uchar4, unsigned char, 4)
XPS_VEC2(short2, short, 4) XPS_VEC4(short4, short, 8)
XPS_VEC2(ushort2, unsigned short, 4) XPS_VEC4(ushort4, unsigned short, 8)
XPS_VEC2(longlong2, long long, 16) XPS_VEC2(ulonglong2, unsigned long long, 16)
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }
inline float2 __half22float2(__half2 v) { return float2{(float)v.x, (float)v.y}; }
inline __half2 __float22half2_rn(float2 v) { return __half2{(__half)v.x, (__half)v.y}; }

/* read-only cache loads: plain loads here */
template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline T __ldcg(const T *p) { return *p; }
template <class T> inline T __ldca(const T *p) { return *p; }
template <class T> inline T __ldcs(const T *p) { return *p; }
template <class T> inline T __ldlu(const T *p) { return *p; }
template <class T> inline T __ldcv(const T *p) { return *p; }
template <class T> inline void __stcg(T *p, T v) { *p = v; }
template <class T> inline void __stcs(T *p, T v) { *p = v; }
template <class T> inline void __stwb(T *p, T v) { *p = v; }

/* ------------------------------------------------------------------------------------------
 * WMMA (nvcuda::wmma): every lane holds the whole tile; kernels may only use elementwise
 * operations on frag.x[i], exactly as the CUDA documentation requires.
 * ---------------------------------------------------------------------------------------- */
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}
namespace detail {
template <class Use, int M, int N, int K> struct shape;
template <int M, int N, int K> struct shape<matrix_a, M, N, K> { enum { rows = M, cols = K }; };
template <int M, int N, int K> struct shape<matrix_b, M, N, K> { enum { rows = K, cols = N }; };
template <int M, int N, int K> struct shape<accumulator, M, N, K> { enum { rows = M, cols = N }; };
template <class T> struct storage { typedef T type; };
template <> struct storage<precision::tf32> { typedef float type; };
inline void warp_all(const char *what, const char *file, int line) {
  ::xps::warp_barrier(::xps::full_mask(), what, file, line);
}
} // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
  static_assert((M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) || (M == 8 && N == 32 && K == 16) ||
                    (M == 16 && N == 16 && K == 8),
                "wmma shape not supported by the emulator (m16n16k16, m32n8k16, m8n32k16, m16n16k8)");
  typedef T element_type;
  typedef typename detail::storage<T>::type storage_element_type;
  enum { rows = detail::shape<Use, M, N, K>::rows, cols = detail::shape<Use, M, N, K>::cols, num_elements = rows * cols };
  storage_element_type x[num_elements];
};

inline float __float_to_tf32(float f) {
  unsigned u; memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  memcpy(&f, &u, 4);
  return f;
}

template <class Use, int M, int N, int K, class T, class L, class V>
inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const V &v) {
  for (int i = 0; i < f.num_elements; ++i) f.x[i] = (typename fragment<Use, M, N, K, T, L>::storage_element_type)v;
}

namespace detail {
template <class Frag, class P> inline void load_tile(Frag &f, const P *p, unsigned ldm, bool colmajor) {
  typedef typename Frag::storage_element_type S;
  for (int r = 0; r < Frag::rows; ++r)
    for (int c = 0; c < Frag::cols; ++c)
      f.x[r * Frag::cols + c] = (S)(colmajor ? p[(size_t)c * ldm + r] : p[(size_t)r * ldm + c]);
}
} // namespace detail

template <class Use, int M, int N, int K, class T, class P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, row_major> &f, const P *p, unsigned ldm, XPS_SITE) {
  detail::warp_all("wmma::load_matrix_sync", XPS_SITE_FWD);
  detail::load_tile(f, p, ldm, false);
  detail::warp_all("wmma::load_matrix_sync", XPS_SITE_FWD);
}
template <class Use, int M, int N, int K, class T, class P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, col_major> &f, const P *p, unsigned ldm, XPS_SITE) {
  detail::warp_all("wmma::load_matrix_sync", XPS_SITE_FWD);
  detail::load_tile(f, p, ldm, true);
  detail::warp_all("wmma::load_matrix_sync", XPS_SITE_FWD);
}
template <int M, int N, int K, class T, class P>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T, void> &f, const P *p, unsigned ldm, layout_t l, XPS_SITE) {
  detail::warp_all("wmma::load_matrix_sync", XPS_SITE_FWD);
  detail::load_tile(f, p, ldm, l == mem_col_major);
  detail::warp_all("wmma::load_matrix_sync", XPS_SITE_FWD);
}
template <int M, int N, int K, class T, class P>
inline void store_matrix_sync(P *p, const fragment<accumulator, M, N, K, T, void> &f, unsigned ldm, layout_t l, XPS_SITE) {
  typedef fragment<accumulator, M, N, K, T, void> F;
  detail::warp_all("wmma::store_matrix_sync", XPS_SITE_FWD);
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c) {
      P v = (P)f.x[r * F::cols + c];
      if (l == mem_col_major) p[(size_t)c * ldm + r] = v;
      else p[(size_t)r * ldm + c] = v;
    }
  detail::warp_all("wmma::store_matrix_sync", XPS_SITE_FWD);
}

/* D = A*B + C.  The lowest live lane computes; a lane whose operands are bytewise equal to the
 * leader's copies the result, any other lane computes its own (still correct, only slower). */
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC, class TD>
inline void mma_sync(fragment<accumulator, M, N, K, TD, void> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
                     const fragment<matrix_b, M, N, K, TB, LB> &b, const fragment<accumulator, M, N, K, TC, void> &c,
                     bool satf = false, XPS_SITE) {
  (void)satf;
  typedef fragment<matrix_a, M, N, K, TA, LA> FA;
  typedef fragment<matrix_b, M, N, K, TB, LB> FB;
  typedef fragment<accumulator, M, N, K, TC, void> FC;
  ::xps::Fiber *me = ::xps::g.cur;
  ::xps::Warp &w = ::xps::g.warps[me->warp];
  w.ptr[me->lane][0] = &a; w.ptr[me->lane][1] = &b; w.ptr[me->lane][2] = &c;
  detail::warp_all("wmma::mma_sync", XPS_SITE_FWD);
  unsigned leader = (unsigned)__builtin_ctzll(w.live);
  auto compute = [&](float *out) {
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float s = (float)c.x[i * N + j];
        for (int k = 0; k < K; ++k) s += (float)a.x[i * K + k] * (float)b.x[k * N + j];
        out[i * N + j] = s;
      }
  };
  bool same = me->lane == leader ||
              (memcmp(&a, w.ptr[leader][0], sizeof(FA)) == 0 && memcmp(&b, w.ptr[leader][1], sizeof(FB)) == 0 &&
               memcmp(&c, w.ptr[leader][2], sizeof(FC)) == 0);
  if (me->lane == leader) compute(w.tmp);
  detail::warp_all("wmma::mma_sync", XPS_SITE_FWD);
  typedef typename fragment<accumulator, M, N, K, TD, void>::storage_element_type SD;
  if (same) {
    for (int i = 0; i < M * N; ++i) d.x[i] = (SD)w.tmp[i];
  } else {
    float out[M * N];
    compute(out);
    for (int i = 0; i < M * N; ++i) d.x[i] = (SD)out[i];
  }
}
} // namespace wmma
} // namespace nvcuda

/* __dp4a (sm_61+): c plus the four products of the bytes of a and b, signed x signed (int) or
 * unsigned x unsigned (unsigned); the sum wraps modulo 2^32 like the instruction. */
inline int __dp4a(int a, int b, int c) {
  unsigned s = (unsigned)c;
  for (int e = 0; e < 4; ++e) s += (unsigned)((int)(signed char)(a >> (8 * e)) * (int)(signed char)(b >> (8 * e)));
  return (int)s;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int e = 0; e < 4; ++e) c += ((a >> (8 * e)) & 0xffu) * ((b >> (8 * e)) & 0xffu);
  return c;
}

/* ------------------------------------------------------------------------------------------
 * AMD MFMA builtins (gfx90a register layouts, wave64).  i = lane % 16, g = lane / 16.
 *   16x16x4f32:  lane supplies a = A[i][g], b = B[g][i]; holds D[4g+e][i] in element e.
 *   16x16x16f16: lane supplies a[e] = A[i][4g+e], b[e] = B[4g+e][i]; D as above.
 *   16x16x16i8:  the same with four signed bytes packed in an int; int32 D.
 *   16x16x16bf16_1k (gfx90a and later, not gfx908): the f16 layout with four bfloat16 bit
 *                patterns in a vector of four shorts; float D.
 * ---------------------------------------------------------------------------------------- */
typedef float xps_floatx4 __attribute__((vector_size(16)));
typedef _Float16 xps_halfx4 __attribute__((vector_size(8)));
namespace xps {
inline void mfma_check(const char *what, int cbsz, int abid, int blgp, const char *file, int line) {
  if (XPS_WAVE != 64) fatal("XP3013", "%s (%s:%d) needs a 64-lane wavefront (hip mode)", what, file, line);
  if (cbsz || abid || blgp)
    fatal("XP3013", "%s (%s:%d): cbsz/abid/blgp modifiers (%d,%d,%d) are not supported by the emulator; use 0, 0, 0", what, file,
          line, cbsz, abid, blgp);
  Warp &w = g.warps[g.cur->warp];
  if (w.exist != ~0ull) fatal("XP3013", "%s (%s:%d): the wavefront is partial (block size not a multiple of 64)", what, file, line);
}
} // namespace xps

inline xps_floatx4 __builtin_amdgcn_mfma_f32_16x16x4f32(float a, float b, xps_floatx4 c, int cbsz, int abid, int blgp, XPS_SITE) {
  const char *what = "__builtin_amdgcn_mfma_f32_16x16x4f32";
  ::xps::mfma_check(what, cbsz, abid, blgp, XPS_SITE_FWD);
  ::xps::Fiber *me = ::xps::g.cur;
  ::xps::Warp &w = ::xps::g.warps[me->warp];
  float ab[2] = {a, b};
  memcpy(w.slot[me->lane], ab, 8);
  ::xps::warp_barrier(::xps::full_mask(), what, XPS_SITE_FWD);
  unsigned i = me->lane % 16, gq = me->lane / 16;
  xps_floatx4 d;
  for (int e = 0; e < 4; ++e) {
    unsigned row = 4 * gq + e;
    float s = c[e];
    for (unsigned k = 0; k < 4; ++k) {
      float av, bv;
      memcpy(&av, w.slot[k * 16 + row], 4);    /* A[row][k] from lane k*16+row */
      memcpy(&bv, w.slot[k * 16 + i] + 4, 4);  /* B[k][i]   from lane k*16+i   */
      s += av * bv;
    }
    d[e] = s;
  }
  ::xps::warp_barrier(::xps::full_mask(), what, XPS_SITE_FWD);
  return d;
}

namespace xps {
/* The 16x16x16 step of two-byte operands (f16, bf16): lane l supplies a[e] = A[i][4g+e] and
 * b[e] = B[4g+e][i] (i = l % 16, g = l / 16) through the warp's slots; per output element the 16
 * products, each operand widened to float by widen(), are added to c[e] one at a time in ascending k. */
template <typename T, typename Widen>
inline xps_floatx4 mfma_16x16x16_2byte(const void *a, const void *b, xps_floatx4 c, Widen widen, const char *what,
                                       const char *file, int line) {
  Fiber *me = g.cur;
  Warp &w = g.warps[me->warp];
  memcpy(w.slot[me->lane], a, 8);
  memcpy(w.slot[me->lane] + 8, b, 8);
  warp_barrier(full_mask(), what, file, line);
  unsigned i = me->lane % 16, gq = me->lane / 16;
  xps_floatx4 d;
  for (int e = 0; e < 4; ++e) {
    unsigned row = 4 * gq + e;
    float s = c[e];
    for (unsigned k = 0; k < 16; ++k) {
      T av, bv;
      memcpy(&av, w.slot[(k / 4) * 16 + row] + 2 * (k % 4), 2);     /* A[row][k] */
      memcpy(&bv, w.slot[(k / 4) * 16 + i] + 8 + 2 * (k % 4), 2);   /* B[k][i]   */
      s += widen(av) * widen(bv);
    }
    d[e] = s;
  }
  warp_barrier(full_mask(), what, file, line);
  return d;
}
}  // namespace xps

inline xps_floatx4 __builtin_amdgcn_mfma_f32_16x16x16f16(xps_halfx4 a, xps_halfx4 b, xps_floatx4 c, int cbsz, int abid, int blgp,
                                                        XPS_SITE) {
  const char *what = "__builtin_amdgcn_mfma_f32_16x16x16f16";
  ::xps::mfma_check(what, cbsz, abid, blgp, XPS_SITE_FWD);
  return ::xps::mfma_16x16x16_2byte<_Float16>(&a, &b, c, [](_Float16 v) { return (float)v; }, what, XPS_SITE_FWD);
}

/* 16x16x16bf16_1k: lane supplies a[e] = A[i][4g+e], b[e] = B[4g+e][i] as bfloat16 bit patterns
 * (the upper half of the float of the same value). Each value is widened to float exactly (the bits
 * shifted up by 16) and, per output element, the 16 products are added to c[e] one at a time in
 * ascending k, in float: the order of the f16 builtin, and of the plain path of our outputs. */
typedef short xps_shortx4 __attribute__((vector_size(8)));
inline xps_floatx4 __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(xps_shortx4 a, xps_shortx4 b, xps_floatx4 c, int cbsz, int abid,
                                                            int blgp, XPS_SITE) {
  const char *what = "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k";
  ::xps::mfma_check(what, cbsz, abid, blgp, XPS_SITE_FWD);
  return ::xps::mfma_16x16x16_2byte<unsigned short>(
      &a, &b, c, [](unsigned short v) { return __uint_as_float((unsigned)v << 16); }, what, XPS_SITE_FWD);
}

/* 16x16x16i8: lane supplies the four signed bytes a = A[i][4g..4g+3], b = B[4g..4g+3][i] packed
 * in one int (byte e = element e); int32 sums, added in uint32 so that they wrap modulo 2^32. */
typedef int xps_intx4 __attribute__((vector_size(16)));
inline xps_intx4 __builtin_amdgcn_mfma_i32_16x16x16i8(int a, int b, xps_intx4 c, int cbsz, int abid, int blgp, XPS_SITE) {
  const char *what = "__builtin_amdgcn_mfma_i32_16x16x16i8";
  ::xps::mfma_check(what, cbsz, abid, blgp, XPS_SITE_FWD);
  ::xps::Fiber *me = ::xps::g.cur;
  ::xps::Warp &w = ::xps::g.warps[me->warp];
  memcpy(w.slot[me->lane], &a, 4);
  memcpy(w.slot[me->lane] + 4, &b, 4);
  ::xps::warp_barrier(::xps::full_mask(), what, XPS_SITE_FWD);
  unsigned i = me->lane % 16, gq = me->lane / 16;
  xps_intx4 d;
  for (int e = 0; e < 4; ++e) {
    unsigned row = 4 * gq + e;
    unsigned s = (unsigned)c[e];
    for (unsigned k = 0; k < 16; ++k) {
      signed char av, bv;
      memcpy(&av, w.slot[(k / 4) * 16 + row] + (k % 4), 1);       /* A[row][k] */
      memcpy(&bv, w.slot[(k / 4) * 16 + i] + 4 + (k % 4), 1);     /* B[k][i]   */
      s += (unsigned)((int)av * (int)bv);
    }
    d[e] = (int)s;
  }
  ::xps::warp_barrier(::xps::full_mask(), what, XPS_SITE_FWD);
  return d;
}

/* ------------------------------------------------------------------------------------------
 * Host runtime: CUDA names, HIP names mapped onto them.  Device memory is host heap memory.
 * ---------------------------------------------------------------------------------------- */
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorNotReady = 600,
  cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
struct xps_stream { int unused; };
struct xps_event { double t_ms; };
typedef xps_stream *cudaStream_t;
typedef xps_event *cudaEvent_t;
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8, cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
enum cudaFuncCache { cudaFuncCachePreferNone = 0, cudaFuncCachePreferShared = 1, cudaFuncCachePreferL1 = 2, cudaFuncCachePreferEqual = 3 };
#define cudaStreamDefault 0
#define cudaStreamNonBlocking 1
#define cudaEventDefault 0
#define cudaHostAllocDefault 0
#define cudaMemAttachGlobal 1

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin, sharedMemPerMultiprocessor, totalConstMem;
  int regsPerBlock, warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate, major, minor,
      multiProcessorCount, maxThreadsPerMultiProcessor, l2CacheSize, memoryClockRate, memoryBusWidth;
  char gcnArchName[256];
};

namespace xps {
inline cudaError_t &last_error() { static cudaError_t e = cudaSuccess; return e; }
inline double now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
inline cudaError_t dev_malloc(void **p, size_t n) {
  if (!p) return last_error() = cudaErrorInvalidValue;
  *p = malloc(n ? n : 1);
  if (!*p) return last_error() = cudaErrorMemoryAllocation;
  memset(*p, 0xFF, n); /* fresh device memory holds garbage on a GPU: make reading it visible */
  return cudaSuccess;
}
} // namespace xps

inline cudaError_t cudaMalloc(void **p, size_t n) { return ::xps::dev_malloc(p, n); }
template <class T> inline cudaError_t cudaMalloc(T **p, size_t n) { return ::xps::dev_malloc((void **)p, n); }
template <class T> inline cudaError_t cudaMallocManaged(T **p, size_t n, unsigned = 1) { return ::xps::dev_malloc((void **)p, n); }
template <class T> inline cudaError_t cudaMallocHost(T **p, size_t n) { return ::xps::dev_malloc((void **)p, n); }
template <class T> inline cudaError_t cudaHostAlloc(T **p, size_t n, unsigned) { return ::xps::dev_malloc((void **)p, n); }
inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind k) {
  if ((int)k < 0 || (int)k > 4) return ::xps::last_error() = cudaErrorInvalidMemcpyDirection;
  if (n && (!d || !s)) return ::xps::last_error() = cudaErrorInvalidValue;
  if (n) memmove(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t = nullptr) {
  return cudaMemcpy(d, s, n, k);
}
inline cudaError_t cudaMemcpy2D(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, cudaMemcpyKind) {
  for (size_t r = 0; r < h; ++r) memmove((char *)d + r * dp, (const char *)s + r * sp, w);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void *d, int v, size_t n) { if (n) memset(d, v, n); return cudaSuccess; }
inline cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t = nullptr) { return cudaMemset(d, v, n); }
template <class T> inline cudaError_t cudaMemcpyToSymbol(T &sym, const void *s, size_t n, size_t off = 0,
                                                          cudaMemcpyKind = cudaMemcpyHostToDevice) {
  memcpy((char *)&sym + off, s, n);
  return cudaSuccess;
}
template <class T> inline cudaError_t cudaMemcpyFromSymbol(void *d, const T &sym, size_t n, size_t off = 0,
                                                            cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  memcpy(d, (const char *)&sym + off, n);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaThreadSynchronize() { return cudaSuccess; }
inline cudaError_t cudaDeviceReset() { return cudaSuccess; }
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaGetLastError() { cudaError_t e = ::xps::last_error(); ::xps::last_error() = cudaSuccess; return e; }
inline cudaError_t cudaPeekAtLastError() { return ::xps::last_error(); }
inline const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    default: return "unknown error";
  }
}
inline const char *cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorUnknown"; }
inline cudaError_t cudaStreamCreate(cudaStream_t *s) { static xps_stream st; *s = &st; return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { return cudaStreamCreate(s); }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new xps_event{0}; return cudaSuccess; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { return cudaEventCreate(e); }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) { e->t_ms = ::xps::now_ms(); return cudaSuccess; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) { *ms = (float)(b->t_ms - a->t_ms); return cudaSuccess; }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
template <class F> inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) { return cudaSuccess; }
template <class F> inline cudaError_t cudaFuncSetCacheConfig(F, cudaFuncCache) { return cudaSuccess; }
inline cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "xpiler SIMT CPU emulator (warp %d)", XPS_WAVE);
  snprintf(p->gcnArchName, sizeof p->gcnArchName, "%s", XPS_WAVE == 64 ? "gfx90a" : "");
  p->totalGlobalMem = (size_t)16 << 30;
  p->sharedMemPerBlock = 49152;
  p->sharedMemPerBlockOptin = 232448;
  p->sharedMemPerMultiprocessor = 233472;
  p->totalConstMem = 65536;
  p->regsPerBlock = 65536;
  p->warpSize = XPS_WAVE;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
  p->clockRate = 1980000; p->major = XPS_WAVE == 64 ? 9 : 9; p->minor = 0;
  p->multiProcessorCount = XPS_WAVE == 64 ? 104 : 132;
  p->maxThreadsPerMultiProcessor = 2048;
  p->l2CacheSize = 50 << 20;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int *v, int, int) { *v = 0; return cudaSuccess; }

/* HIP runtime names */
typedef cudaError_t hipError_t;
typedef cudaMemcpyKind hipMemcpyKind;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;
typedef cudaFuncCache hipFuncCache_t;
constexpr hipError_t hipSuccess = cudaSuccess;
constexpr hipError_t hipErrorInvalidValue = cudaErrorInvalidValue;
constexpr hipError_t hipErrorOutOfMemory = cudaErrorMemoryAllocation;
constexpr hipError_t hipErrorMemoryAllocation = cudaErrorMemoryAllocation;
constexpr hipMemcpyKind hipMemcpyHostToHost = cudaMemcpyHostToHost;
constexpr hipMemcpyKind hipMemcpyHostToDevice = cudaMemcpyHostToDevice;
constexpr hipMemcpyKind hipMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
constexpr hipMemcpyKind hipMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;
constexpr hipMemcpyKind hipMemcpyDefault = cudaMemcpyDefault;
#define hipStreamDefault 0
#define hipStreamNonBlocking 1
#define hipEventDefault 0
#define hipHostMallocDefault 0
inline hipError_t hipMalloc(void **p, size_t n) { return ::xps::dev_malloc(p, n); }
template <class T> inline hipError_t hipMalloc(T **p, size_t n) { return ::xps::dev_malloc((void **)p, n); }
template <class T> inline hipError_t hipMallocManaged(T **p, size_t n, unsigned = 1) { return ::xps::dev_malloc((void **)p, n); }
template <class T> inline hipError_t hipHostMalloc(T **p, size_t n, unsigned = 0) { return ::xps::dev_malloc((void **)p, n); }
template <class T> inline hipError_t hipMallocHost(T **p, size_t n) { return ::xps::dev_malloc((void **)p, n); }
inline hipError_t hipFree(void *p) { return cudaFree(p); }
inline hipError_t hipHostFree(void *p) { return cudaFree(p); }
inline hipError_t hipFreeHost(void *p) { return cudaFree(p); }
inline hipError_t hipMemcpy(void *d, const void *s, size_t n, hipMemcpyKind k) { return cudaMemcpy(d, s, n, k); }
inline hipError_t hipMemcpyAsync(void *d, const void *s, size_t n, hipMemcpyKind k, hipStream_t st = nullptr) {
  return cudaMemcpyAsync(d, s, n, k, st);
}
inline hipError_t hipMemcpyHtoD(void *d, const void *s, size_t n) { return cudaMemcpy(d, s, n, cudaMemcpyHostToDevice); }
inline hipError_t hipMemcpyDtoH(void *d, const void *s, size_t n) { return cudaMemcpy(d, s, n, cudaMemcpyDeviceToHost); }
inline hipError_t hipMemset(void *d, int v, size_t n) { return cudaMemset(d, v, n); }
inline hipError_t hipMemsetAsync(void *d, int v, size_t n, hipStream_t st = nullptr) { return cudaMemsetAsync(d, v, n, st); }
template <class T> inline hipError_t hipMemcpyToSymbol(T &sym, const void *s, size_t n, size_t off = 0,
                                                        hipMemcpyKind k = hipMemcpyHostToDevice) {
  return cudaMemcpyToSymbol(sym, s, n, off, k);
}
template <class T> inline hipError_t hipMemcpyFromSymbol(void *d, const T &sym, size_t n, size_t off = 0,
                                                          hipMemcpyKind k = hipMemcpyDeviceToHost) {
  return cudaMemcpyFromSymbol(d, sym, n, off, k);
}
inline hipError_t hipDeviceSynchronize() { return cudaSuccess; }
inline hipError_t hipDeviceReset() { return cudaSuccess; }
inline hipError_t hipSetDevice(int) { return cudaSuccess; }
inline hipError_t hipGetDevice(int *d) { return cudaGetDevice(d); }
inline hipError_t hipGetDeviceCount(int *n) { return cudaGetDeviceCount(n); }
inline hipError_t hipGetLastError() { return cudaGetLastError(); }
inline hipError_t hipPeekAtLastError() { return cudaPeekAtLastError(); }
inline const char *hipGetErrorString(hipError_t e) { return cudaGetErrorString(e); }
inline const char *hipGetErrorName(hipError_t e) { return e == cudaSuccess ? "hipSuccess" : "hipErrorUnknown"; }
inline hipError_t hipStreamCreate(hipStream_t *s) { return cudaStreamCreate(s); }
inline hipError_t hipStreamCreateWithFlags(hipStream_t *s, unsigned f) { return cudaStreamCreateWithFlags(s, f); }
inline hipError_t hipStreamDestroy(hipStream_t s) { return cudaStreamDestroy(s); }
inline hipError_t hipStreamSynchronize(hipStream_t s) { return cudaStreamSynchronize(s); }
inline hipError_t hipEventCreate(hipEvent_t *e) { return cudaEventCreate(e); }
inline hipError_t hipEventCreateWithFlags(hipEvent_t *e, unsigned f) { return cudaEventCreateWithFlags(e, f); }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t s = nullptr) { return cudaEventRecord(e, s); }
inline hipError_t hipEventSynchronize(hipEvent_t e) { return cudaEventSynchronize(e); }
inline hipError_t hipEventElapsedTime(float *ms, hipEvent_t a, hipEvent_t b) { return cudaEventElapsedTime(ms, a, b); }
inline hipError_t hipEventDestroy(hipEvent_t e) { return cudaEventDestroy(e); }
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t *p, int d) { return cudaGetDeviceProperties(p, d); }
inline hipError_t hipDeviceGetAttribute(int *v, int a, int d) { return cudaDeviceGetAttribute(v, a, d); }
template <class F> inline hipError_t hipFuncSetAttribute(F, int, int) { return cudaSuccess; }
template <class F> inline hipError_t hipFuncSetCacheConfig(F, hipFuncCache_t) { return cudaSuccess; }

#endif /* XP_SIMT_H */
