/* xp_bang.h -- xpiler's functional emulator of Cambricon BANG C on the CPU (C++17, g++).
 *
 * A .mlu file is first rewritten by xpiler/platforms/bang.py (prepare()):
 *   - `k<<<dim, ktype, queue>>>(args)` becomes `xpb_launch_cnrt(dim, ktype, queue, [&]() { k(args); })`;
 *   - every `__nram__` / `__wram__` / `__mlu_shared__` declaration becomes a reference into the
 *     current core's (or cluster's) flat arena: file-scope arrays get a fixed slot (xpb::StaticSlot
 *     + a thread_local reference, initialised in each task thread), function-scope NRAM/WRAM arrays a
 *     scoped stack allocation (xpb::ScopedAlloc), SRAM arrays always a static slot.
 * This header then supplies the task model (one OS thread per task, cores of a cluster concurrent,
 * clusters one after another unless the kernel uses __sync_all), the memories with their limits,
 * __memcpy with direction checks, the __bang_* operations with their rules, and the CNRT host API.
 * A violated rule prints `xpiler-runtime-error: XP30xx ...` on stderr and exits with status 97.
 * See manuals/bang/emulator.md.
 */
#ifndef XP_BANG_H
#define XP_BANG_H

#ifndef __cplusplus
#error "the xpiler BANG emulator is C++17: compile .mlu sources with g++ -std=c++17"
#endif

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>
#include <pthread.h>
#include <unistd.h>

/* ------------------------------------------------------------------ types */
typedef _Float16 half;

struct bfloat16_t {
  uint16_t bits;
  bfloat16_t() = default;
  bfloat16_t(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { bits = (uint16_t)((u >> 16) | 0x40u); return; }
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    bits = (uint16_t)(u >> 16);
  }
  operator float() const {
    uint32_t u = (uint32_t)bits << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

/* Macros the real compiler (cncc) predefines; the emulator models an MLU270-sized core. */
#define __BANG__ 1
#ifndef __BANG_ARCH__
#define __BANG_ARCH__ 270
#endif
#define __MLU_NRAM_SIZE__ 512   /* KiB per core */
#define __MLU_WRAM_SIZE__ 1024  /* KiB per core */
#define __MLU_SRAM_SIZE__ 2048  /* KiB per cluster */

/* --------------------------------------------------------------- qualifiers */
#define __mlu_global__
#define __mlu_entry__
#define __mlu_func__
#define __mlu_device__
#define __mlu_host__
#define __mlu_const__
/* Declarations are rewritten by prepare(); qualifiers left elsewhere (casts, parameters) vanish. */
#define __nram__
#define __wram__
#define __mlu_shared__

typedef enum {
  GDRAM2NRAM = 0, NRAM2GDRAM, GDRAM2WRAM, NRAM2WRAM, NRAM2NRAM, GDRAM2SRAM,
  SRAM2NRAM, NRAM2SRAM, SRAM2GDRAM, GDRAM2GDRAM, SRAM2WRAM, XPB_MEMCPY_DIRS
} mluMemcpyDirection_t;

namespace xpb {

/* ------------------------------------------------------- memories, context */
enum Mem { MEM_GDRAM = 0, MEM_NRAM = 1, MEM_WRAM = 2, MEM_SRAM = 3 };
static const char* const kMemName[4] = {"GDRAM", "NRAM", "WRAM", "SRAM"};
constexpr size_t kNramBytes = 512u * 1024u;        /* per core */
constexpr size_t kWramBytes = 1024u * 1024u;       /* per core */
constexpr size_t kSramBytes = 2u * 1024u * 1024u;  /* per cluster */
constexpr size_t kAlign = 64;                      /* every on-chip array starts 64-byte aligned */
constexpr unsigned char kPoison = 0xFF;            /* fresh on-chip memory: NaN for float/half, -1 for ints */

inline size_t capacity(int m) { return m == MEM_NRAM ? kNramBytes : m == MEM_WRAM ? kWramBytes : kSramBytes; }
inline size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

struct Loc { const char* file; int line; };
#define XPB_HERE (::xpb::Loc{__FILE__, __LINE__})

/* Per task (thread) state.  Plain POD in __thread storage: never has a dynamic initialiser, so
 * touching it cannot trigger the TLS initialisation of the file-scope arena references. */
struct Ctx {
  int active;
  int task_id, task_dim, tx, ty, tz, dx, dy, dz;
  int core_id, core_dim, cluster_id, cluster_dim, union_n;
  int slot;          /* index of this task inside the running wave */
  char* nram;
  char* wram;
  char* sram;
  size_t nram_top, wram_top;
};
static __thread Ctx tls;

/* ------------------------------------------------------------- error exit */
inline std::mutex& fail_mutex() { static std::mutex m; return m; }

inline void describe_task(char* buf, size_t n) {
  if (tls.active)
    snprintf(buf, n, "task %d (cluster %d, core %d)", tls.task_id, tls.cluster_id, tls.core_id);
  else
    snprintf(buf, n, "host code");
}

[[noreturn]] inline void vfail(const Loc* loc, const char* code, const char* fmt, va_list ap) {
  fail_mutex().lock(); /* never released: the process ends here */
  char msg[3072], who[128];
  vsnprintf(msg, sizeof msg, fmt, ap);
  describe_task(who, sizeof who);
  if (loc && loc->file)
    fprintf(stderr, "xpiler-runtime-error: %s %s [%s:%d, %s]\n", code, msg, loc->file, loc->line, who);
  else
    fprintf(stderr, "xpiler-runtime-error: %s %s [%s]\n", code, msg, who);
  fflush(stderr);
  fflush(stdout);
  _exit(97);
}
[[noreturn]] inline void fail(const char* code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
[[noreturn]] inline void fail(const char* code, const char* fmt, ...) {
  va_list ap; va_start(ap, fmt); vfail(nullptr, code, fmt, ap);
}
[[noreturn]] inline void fail_at(Loc loc, const char* code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
[[noreturn]] inline void fail_at(Loc loc, const char* code, const char* fmt, ...) {
  va_list ap; va_start(ap, fmt); vfail(&loc, code, fmt, ap);
}
/* A note: the source steps outside a documented rule but the result is well defined, so the run
 * goes on.  One line `xpiler-runtime-note: XPnnnn <message> [file:line]` per call site (the
 * tester puts it into the verdict's notes). */
inline void note_at(Loc loc, const char* code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
inline void note_at(Loc loc, const char* code, const char* fmt, ...) {
  static std::mutex m;
  static std::set<std::pair<std::string, int>> seen;
  std::lock_guard<std::mutex> lk(m);
  if (!seen.insert({std::string(loc.file ? loc.file : "?"), loc.line}).second) return;
  char msg[1024];
  va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof msg, fmt, ap); va_end(ap);
  fprintf(stderr, "xpiler-runtime-note: %s %s [%s:%d]\n", code, msg, loc.file ? loc.file : "?", loc.line);
  fflush(stderr);
}

/* ----------------------------------------------------- launch-wide state */
struct Barrier { int arrived; unsigned long gen; };
enum TaskState { TS_IDLE = 0, TS_RUNNING, TS_WAITING, TS_DONE };
struct TaskInfo { int task_id; int state; int bar_kind; int bar_cluster; Loc where; };

struct Launch {
  std::mutex m;
  std::condition_variable cv;
  int running = 0;            /* a launch is in progress */
  int task_dim = 0, core_dim = 1, cluster_dim = 0;
  int wave_first_cluster = 0, wave_clusters = 0, wave_tasks = 0;
  int live = 0, blocked = 0;
  std::vector<char*> nram, wram, sram;   /* arenas of the wave: per task slot / per cluster */
  std::vector<Barrier> cluster_bar;
  Barrier all_bar{0, 0};
  std::vector<TaskInfo> info;
};
inline Launch g_launch;
inline int g_sync_all_used = 0;           /* set by prepare()'s prelude when the source calls __sync_all */
inline size_t g_static_top[4] = {0, 0, 0, 0};
inline std::mutex& reg_mutex() { static std::mutex m; return m; }

/* --------------------------------------------------- where does a pointer live */
struct Where { int mem; bool own; int owner; size_t off; };

inline Where locate(const void* p) {
  const char* c = (const char*)p;
  Launch& L = g_launch;
  if (tls.active) {
    if (c >= tls.nram && c < tls.nram + kNramBytes) return {MEM_NRAM, true, tls.slot, (size_t)(c - tls.nram)};
    if (c >= tls.wram && c < tls.wram + kWramBytes) return {MEM_WRAM, true, tls.slot, (size_t)(c - tls.wram)};
    if (c >= tls.sram && c < tls.sram + kSramBytes) return {MEM_SRAM, true, tls.cluster_id, (size_t)(c - tls.sram)};
  }
  for (size_t i = 0; i < L.nram.size(); ++i) {
    if (L.nram[i] && c >= L.nram[i] && c < L.nram[i] + kNramBytes) return {MEM_NRAM, false, (int)i, (size_t)(c - L.nram[i])};
    if (L.wram[i] && c >= L.wram[i] && c < L.wram[i] + kWramBytes) return {MEM_WRAM, false, (int)i, (size_t)(c - L.wram[i])};
  }
  for (size_t i = 0; i < L.sram.size(); ++i)
    if (L.sram[i] && c >= L.sram[i] && c < L.sram[i] + kSramBytes) return {MEM_SRAM, false, (int)i, (size_t)(c - L.sram[i])};
  return {MEM_GDRAM, true, -1, 0};
}

inline const char* where_name(const Where& w, char* buf, size_t n) {
  if (w.mem == MEM_GDRAM || w.own) snprintf(buf, n, "%s", kMemName[w.mem]);
  else if (w.mem == MEM_SRAM) snprintf(buf, n, "the SRAM of another cluster");
  else snprintf(buf, n, "the %s of another core", kMemName[w.mem]);
  return buf;
}

/* Check that [p, p+bytes) lies in memory `want` of this task.  Codes: wrong space / past the end. */
inline void need_mem(Loc loc, const char* code_space, const char* code_end, const char* op, const char* role,
                     const void* p, long long bytes, int want) {
  if (bytes <= 0) return;
  if (!tls.active) fail_at(loc, "XP3099", "%s called outside a kernel task", op);
  Where w = locate(p);
  char wn[64];
  if (w.mem != want || !w.own)
    fail_at(loc, code_space, "%s: %s %p (%lld bytes) lies in %s, not in %s", op, role, p, bytes,
            where_name(w, wn, sizeof wn), kMemName[want]);
  if (want != MEM_GDRAM && w.off + (size_t)bytes > capacity(want))
    fail_at(loc, code_end, "%s: %s at %s offset %zu with %lld bytes runs %lld bytes past the end of %s (%zu bytes)",
            op, role, kMemName[want], w.off, bytes, (long long)(w.off + (size_t)bytes - capacity(want)),
            kMemName[want], capacity(want));
}
inline void need_in_array(Loc loc, const char* op, const char* role, const void* p, long long bytes, int mem);
/* An operand of a __bang_* operation: in this task's NRAM (WRAM), and inside the declared array it
 * starts in (XP4230, as for copies): a vector op past a __nram__ array that stays inside NRAM
 * would silently read or write the next array. */
inline void need_nram(Loc loc, const char* op, const char* role, const void* p, long long bytes) {
  need_mem(loc, "XP3058", "XP3059", op, role, p, bytes, MEM_NRAM);
  need_in_array(loc, op, role, p, bytes, MEM_NRAM);
}
inline void need_wram(Loc loc, const char* op, const char* role, const void* p, long long bytes) {
  need_mem(loc, "XP3058", "XP3059", op, role, p, bytes, MEM_WRAM);
  need_in_array(loc, op, role, p, bytes, MEM_WRAM);
}

/* ------------------------------------------------------------ allocation */
inline char* base_of(int m) {
  return m == MEM_NRAM ? tls.nram : m == MEM_WRAM ? tls.wram : tls.sram;
}
inline const char* overflow_code(int m) { return m == MEM_NRAM ? "XP3053" : m == MEM_WRAM ? "XP3054" : "XP3055"; }
inline const char* qual_name(int m) { return m == MEM_NRAM ? "__nram__" : m == MEM_WRAM ? "__wram__" : "__mlu_shared__"; }

/* Declared on-chip arrays, so a copy is checked against the array it starts in, not only against
 * the memory (XP4230): a copy past a __nram__ array that stays inside NRAM would silently write
 * the next array.  Function-scope arrays: a per-task stack (POD in __thread, reset per task);
 * file-scope and __mlu_shared__ arrays: one list for the program (offsets are the same in every
 * arena).  Only the first kMaxArrays function-scope arrays of a task are recorded; a copy that
 * starts in no recorded array is checked against the memory only, as before. */
struct ArrayRec { int mem; size_t off; size_t bytes; const char* name; const char* file; int line; };
constexpr int kMaxArrays = 64;
struct TaskArrays { int n; int live; ArrayRec rec[kMaxArrays]; };   /* live: declared and in scope, recorded or not */
static __thread TaskArrays tls_arrays;
inline std::vector<ArrayRec>& static_arrays() { static std::vector<ArrayRec> v; return v; }

/* The array whose bytes (with the alignment padding after it) hold offset `off` of memory `mem`. */
inline bool array_at(int mem, size_t off, ArrayRec* out) {
  for (int i = tls_arrays.n - 1; i >= 0; --i) {
    const ArrayRec& a = tls_arrays.rec[i];
    if (a.mem == mem && off >= a.off && off < a.off + round_up(a.bytes ? a.bytes : 1, kAlign)) { *out = a; return true; }
  }
  std::lock_guard<std::mutex> lk(reg_mutex());
  for (const ArrayRec& a : static_arrays())
    if (a.mem == mem && off >= a.off && off < a.off + round_up(a.bytes ? a.bytes : 1, kAlign)) { *out = a; return true; }
  return false;
}

/* [p, p+bytes) of this task's on-chip memory `mem` (already checked to lie in it) stays inside
 * the declared array it starts in. */
inline void need_in_array(Loc loc, const char* op, const char* role, const void* p, long long bytes, int mem) {
  if (bytes <= 0 || mem == MEM_GDRAM || !tls.active) return;
  Where w = locate(p);
  if (w.mem != mem || !w.own) return;
  ArrayRec a;
  if (!array_at(mem, w.off, &a)) {
    /* every byte of on-chip memory a kernel may touch belongs to a declared array: an operand
     * that starts in none (e.g. right after the last one) is past the end of the array its
     * pointer came from.  Only said when every live array is recorded. */
    if (tls_arrays.live > kMaxArrays) return;
    const ArrayRec* before = nullptr;
    for (int i = 0; i < tls_arrays.n; ++i) {
      const ArrayRec& r = tls_arrays.rec[i];
      if (r.mem == mem && r.off <= w.off && (!before || r.off > before->off)) before = &r;
    }
    std::vector<ArrayRec> st;
    { std::lock_guard<std::mutex> lk(reg_mutex()); st = static_arrays(); }
    for (const ArrayRec& r : st)
      if (r.mem == mem && r.off <= w.off && (!before || r.off > before->off)) before = &r;
    if (before)
      fail_at(loc, "XP4230", "%s: %s at %s offset %zu lies in no declared array: it starts %zu bytes past the end of %s array '%s' (%zu bytes, declared at %s:%d)",
              op, role, kMemName[mem], w.off, w.off - (before->off + before->bytes), qual_name(mem), before->name,
              before->bytes, before->file ? before->file : "?", before->line);
    fail_at(loc, "XP4230", "%s: %s at %s offset %zu lies in no declared %s array", op, role, kMemName[mem], w.off,
            qual_name(mem));
  }
  size_t end = a.off + a.bytes;
  if (w.off + (size_t)bytes > end) {
    if (w.off >= end)
      fail_at(loc, "XP4230", "%s: %s starts %zu bytes past the end of %s array '%s' (%zu bytes, declared at %s:%d)",
              op, role, w.off - end, qual_name(mem), a.name, a.bytes, a.file ? a.file : "?", a.line);
    fail_at(loc, "XP4230", "%s: %s at byte %zu of %s array '%s' (%zu bytes, declared at %s:%d) with %lld bytes runs %lld bytes past the array's end (inside %s, into whatever lies after the array)",
            op, role, w.off - a.off, qual_name(mem), a.name, a.bytes, a.file ? a.file : "?", a.line, bytes,
            (long long)(w.off + (size_t)bytes - end), kMemName[mem]);
  }
}

/* A file-scope __nram__/__wram__ array, or any __mlu_shared__ array: one fixed offset in every
 * core's (cluster's) arena, reserved once for the whole program. */
struct StaticSlot {
  int mem;
  size_t off;
  StaticSlot(int m, size_t bytes, size_t align, const char* name, const char* file, int line) : mem(m), off(0) {
    std::lock_guard<std::mutex> lk(reg_mutex());
    size_t a = align > kAlign ? align : kAlign;
    off = round_up(g_static_top[m], a);
    if (off + bytes > capacity(m) || bytes > capacity(m)) {
      Loc loc{file, line};
      fail_at(loc, overflow_code(m), "%s overflow: %s array '%s' needs %zu bytes but only %zu of %zu bytes are free (%s is %zu KiB per %s)",
              kMemName[m], qual_name(m), name, bytes, capacity(m) > off ? capacity(m) - off : 0, capacity(m),
              kMemName[m], capacity(m) / 1024, m == MEM_SRAM ? "cluster" : "core");
    }
    g_static_top[m] = off + bytes;
    static_arrays().push_back(ArrayRec{m, off, bytes, name, file, line});
    if (m == MEM_SRAM) { /* registered while clusters run: poison its bytes in every live arena */
      for (char* s : g_launch.sram) if (s) std::memset(s + off, kPoison, bytes);
    }
  }
  void* addr() const {
    char* b = base_of(mem);
    if (!b) fail("XP3099", "%s array used outside a kernel task", qual_name(mem));
    return b + off;
  }
};

/* A function-scope __nram__/__wram__ array: stack allocation in this core's arena, released at scope end. */
struct ScopedAlloc {
  int mem;
  size_t saved;
  char* ptr;
  int saved_arrays;
  ScopedAlloc(int m, size_t bytes, size_t align, const char* name, const char* file, int line) : mem(m), saved(0), ptr(nullptr), saved_arrays(tls_arrays.n) {
    Loc loc{file, line};
    if (!tls.active) fail_at(loc, "XP3099", "%s array '%s' declared outside a kernel task", qual_name(m), name);
    size_t& top = m == MEM_NRAM ? tls.nram_top : tls.wram_top;
    saved = top;
    size_t a = align > kAlign ? align : kAlign;
    size_t off = round_up(top, a);
    if (bytes > capacity(m) || off + bytes > capacity(m))
      fail_at(loc, overflow_code(m), "%s overflow: %s array '%s' needs %zu bytes but %zu of %zu bytes are already in use (%s is %zu KiB per core)",
              kMemName[m], qual_name(m), name, bytes, off, capacity(m), kMemName[m], capacity(m) / 1024);
    ptr = base_of(m) + off;
    top = off + bytes;
    std::memset(ptr, kPoison, bytes);
    if (tls_arrays.n < kMaxArrays) tls_arrays.rec[tls_arrays.n++] = ArrayRec{m, off, bytes, name, file, line};
    ++tls_arrays.live;
  }
  ~ScopedAlloc() { (m_top()) = saved; tls_arrays.n = saved_arrays; --tls_arrays.live; }
  size_t& m_top() { return mem == MEM_NRAM ? tls.nram_top : tls.wram_top; }
  ScopedAlloc(const ScopedAlloc&) = delete;
  ScopedAlloc& operator=(const ScopedAlloc&) = delete;
};

/* ------------------------------------------------------------- barriers */
inline void check_deadlock_locked() {
  Launch& L = g_launch;
  if (L.live <= 0 || L.blocked < L.live) return;
  char msg[2600];
  size_t k = (size_t)snprintf(msg, sizeof msg, "deadlock: every running task waits at a barrier that can never complete;");
  int shown = 0;
  for (const TaskInfo& t : L.info) {
    if (shown >= 8) { k += (size_t)snprintf(msg + k, sizeof msg - k, " ..."); break; }
    if (k >= sizeof msg - 200) break;
    if (t.state == TS_WAITING)
      k += (size_t)snprintf(msg + k, sizeof msg - k, " task %d waits at %s (%s:%d);", t.task_id,
                            t.bar_kind == 0 ? "__sync_cluster()" : "__sync_all()", t.where.file ? t.where.file : "?", t.where.line);
    else if (t.state == TS_DONE)
      k += (size_t)snprintf(msg + k, sizeof msg - k, " task %d has finished;", t.task_id);
    else continue;
    ++shown;
  }
  if (k > 0 && msg[k - 1] == ';') msg[k - 1] = '\0';
  fail("XP3063", "%s (every core of a cluster must reach __sync_cluster(), and every task __sync_all(), the same number of times)", msg);
}

inline void barrier(Loc loc, int kind) {
  if (!tls.active) fail_at(loc, "XP3099", "%s called outside a kernel task", kind == 0 ? "__sync_cluster()" : "__sync_all()");
  Launch& L = g_launch;
  int participants = kind == 0 ? tls.core_dim : tls.task_dim;
  if (kind == 1 && L.wave_tasks != tls.task_dim)
    fail_at(loc, "XP3064", "__sync_all(): only %d of %d tasks are resident (the source was not prepared by xpiler, so clusters run one after another)",
            L.wave_tasks, tls.task_dim);
  if (participants <= 1) return;
  std::unique_lock<std::mutex> lk(L.m);
  Barrier& b = kind == 0 ? L.cluster_bar[(size_t)(tls.cluster_id - L.wave_first_cluster)] : L.all_bar;
  b.arrived++;
  if (b.arrived == participants) {
    b.arrived = 0;
    b.gen++;
    L.blocked -= participants - 1;
    for (TaskInfo& t : L.info)
      if (t.state == TS_WAITING && t.bar_kind == kind && (kind == 1 || t.bar_cluster == tls.cluster_id)) t.state = TS_RUNNING;
    L.cv.notify_all();
    return;
  }
  TaskInfo& me = L.info[(size_t)tls.slot];
  me.state = TS_WAITING; me.bar_kind = kind; me.bar_cluster = tls.cluster_id; me.where = loc;
  L.blocked++;
  check_deadlock_locked();
  unsigned long g = b.gen;
  L.cv.wait(lk, [&] { return b.gen != g; });
}

/* --------------------------------------------------------------- launch */
struct TaskArg { int task_id; int slot; int cluster_slot; const std::function<void()>* body; };

inline void* task_main(void* vp) {
  TaskArg* a = (TaskArg*)vp;
  Launch& L = g_launch;
  Ctx& c = tls;
  std::memset(&c, 0, sizeof c);
  tls_arrays.n = 0;
  tls_arrays.live = 0;
  c.task_id = a->task_id;
  c.task_dim = L.task_dim;
  c.core_dim = L.core_dim;
  c.cluster_dim = L.cluster_dim;
  c.core_id = a->task_id % L.core_dim;
  c.cluster_id = a->task_id / L.core_dim;
  c.slot = a->slot;
  c.nram = L.nram[(size_t)a->slot];
  c.wram = L.wram[(size_t)a->slot];
  c.sram = L.sram[(size_t)a->cluster_slot];
  c.union_n = L.core_dim == 1 ? 0 : 1;
  {
    std::lock_guard<std::mutex> lk(reg_mutex());
    c.nram_top = round_up(g_static_top[MEM_NRAM], kAlign);
    c.wram_top = round_up(g_static_top[MEM_WRAM], kAlign);
  }
  std::memset(c.nram, kPoison, c.nram_top);
  std::memset(c.wram, kPoison, c.wram_top);
  c.active = 1;
  (*a->body)();
  {
    std::lock_guard<std::mutex> lk(L.m);
    L.info[(size_t)a->slot].state = TS_DONE;
    L.live--;
    check_deadlock_locked();
  }
  c.active = 0;
  return nullptr;
}

/* union_n: 0 = BLOCK, N = UNIONn (job / spec convention). */
inline void launch(unsigned x, unsigned y, unsigned z, int union_n, const std::function<void()>& body) {
  if (tls.active) fail("XP3062", "kernel launched from inside a kernel task");
  if (x == 0 || y == 0 || z == 0) fail("XP3062", "launch dimension is zero (dim = {%u, %u, %u})", x, y, z);
  if (union_n != 0 && union_n != 1 && union_n != 2 && union_n != 4 && union_n != 8)
    fail("XP3062", "unknown function type %d (use BLOCK or UNION1/2/4/8)", union_n);
  long long td = (long long)x * y * z;
  if (td > 65536) fail("XP3062", "taskDim %lld is too large for the emulator (max 65536)", td);
  if (union_n && td % (4LL * union_n) != 0)
    fail("XP3062", "UNION%d launch needs taskDim (= %u*%u*%u = %lld) to be a multiple of %d (4 cores x %d clusters)",
         union_n, x, y, z, td, 4 * union_n, union_n);
  Launch& L = g_launch;
  L.task_dim = (int)td;
  L.core_dim = union_n ? 4 : 1;
  L.cluster_dim = L.task_dim / L.core_dim;
  int wave = g_sync_all_used ? L.cluster_dim : 1;
  if (const char* e = getenv("XPB_WAVE_CLUSTERS")) { int v = atoi(e); if (v > 0) wave = v; }
  if (wave > L.cluster_dim) wave = L.cluster_dim;
  int wave_tasks_max = wave * L.core_dim;
  L.nram.assign((size_t)wave_tasks_max, nullptr);
  L.wram.assign((size_t)wave_tasks_max, nullptr);
  L.sram.assign((size_t)wave, nullptr);
  for (int i = 0; i < wave_tasks_max; ++i) {
    L.nram[(size_t)i] = (char*)malloc(kNramBytes);
    L.wram[(size_t)i] = (char*)malloc(kWramBytes);
    if (!L.nram[(size_t)i] || !L.wram[(size_t)i]) fail("XP3099", "out of host memory for NRAM/WRAM arenas");
  }
  for (int i = 0; i < wave; ++i) {
    L.sram[(size_t)i] = (char*)malloc(kSramBytes);
    if (!L.sram[(size_t)i]) fail("XP3099", "out of host memory for SRAM arenas");
  }
  std::vector<pthread_t> th((size_t)wave_tasks_max);
  std::vector<TaskArg> args((size_t)wave_tasks_max);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, (size_t)4 << 20);
  for (int c0 = 0; c0 < L.cluster_dim; c0 += wave) {
    int nc = std::min(wave, L.cluster_dim - c0);
    int nt = nc * L.core_dim;
    {
      std::lock_guard<std::mutex> lk(L.m);
      L.wave_first_cluster = c0; L.wave_clusters = nc; L.wave_tasks = nt;
      L.live = nt; L.blocked = 0;
      L.cluster_bar.assign((size_t)nc, Barrier{0, 0});
      L.all_bar = Barrier{0, 0};
      L.info.assign((size_t)nt, TaskInfo{0, TS_IDLE, 0, 0, Loc{nullptr, 0}});
      std::lock_guard<std::mutex> rk(reg_mutex());
      size_t sram_used = g_static_top[MEM_SRAM];
      for (int i = 0; i < nc; ++i) std::memset(L.sram[(size_t)i], kPoison, sram_used);
    }
    for (int i = 0; i < nt; ++i) {
      args[(size_t)i] = TaskArg{c0 * L.core_dim + i, i, i / L.core_dim, &body};
      L.info[(size_t)i].task_id = c0 * L.core_dim + i;
      L.info[(size_t)i].state = TS_RUNNING;
    }
    for (int i = 0; i < nt; ++i)
      if (pthread_create(&th[(size_t)i], &attr, task_main, &args[(size_t)i]) != 0)
        fail("XP3099", "cannot start task thread %d of %d", i, nt);
    for (int i = 0; i < nt; ++i) pthread_join(th[(size_t)i], nullptr);
  }
  pthread_attr_destroy(&attr);
  for (char* p : L.nram) free(p);
  for (char* p : L.wram) free(p);
  for (char* p : L.sram) free(p);
  L.nram.clear(); L.wram.clear(); L.sram.clear();
}

/* ------------------------------------------------------------- __memcpy */
struct DirInfo { const char* name; int dst; int src; };
inline const DirInfo& dir_info(int d) {
  static const DirInfo t[XPB_MEMCPY_DIRS] = {
      {"GDRAM2NRAM", MEM_NRAM, MEM_GDRAM}, {"NRAM2GDRAM", MEM_GDRAM, MEM_NRAM}, {"GDRAM2WRAM", MEM_WRAM, MEM_GDRAM},
      {"NRAM2WRAM", MEM_WRAM, MEM_NRAM},   {"NRAM2NRAM", MEM_NRAM, MEM_NRAM},   {"GDRAM2SRAM", MEM_SRAM, MEM_GDRAM},
      {"SRAM2NRAM", MEM_NRAM, MEM_SRAM},   {"NRAM2SRAM", MEM_SRAM, MEM_NRAM},   {"SRAM2GDRAM", MEM_GDRAM, MEM_SRAM},
      {"GDRAM2GDRAM", MEM_GDRAM, MEM_GDRAM}, {"SRAM2WRAM", MEM_WRAM, MEM_SRAM}};
  return t[d];
}

inline void memcpy_impl(Loc loc, const char* op, void* dst, const void* src, long long seg, int dir,
                        long long dst_stride, long long src_stride, long long segnum) {
  if (dir < 0 || dir >= XPB_MEMCPY_DIRS) fail_at(loc, "XP3052", "%s: unknown direction %d", op, dir);
  const DirInfo& d = dir_info(dir);
  if (seg < 0) fail_at(loc, "XP3052", "%s(%s): negative size %lld bytes", op, d.name, seg);
  if (segnum < 0) fail_at(loc, "XP3052", "%s(%s): negative segnum %lld", op, d.name, segnum);
  char role_d[64], role_s[64], opn[64];
  snprintf(opn, sizeof opn, "%s(%s)", op, d.name);
  /* pass 0: every segment inside its memory (XP3050/XP3051); pass 1: inside the declared array
   * it starts in (XP4230); pass 2: the copy */
  for (int pass = 0; pass < 3; ++pass)
    for (long long i = 0; i <= segnum; ++i) {
      char* dp = (char*)dst + i * dst_stride;
      const char* sp = (const char*)src + i * src_stride;
      if (pass == 2) { if (seg) std::memmove(dp, sp, (size_t)seg); continue; }
      if (segnum) { snprintf(role_d, sizeof role_d, "destination segment %lld", i); snprintf(role_s, sizeof role_s, "source segment %lld", i); }
      else { snprintf(role_d, sizeof role_d, "destination"); snprintf(role_s, sizeof role_s, "source"); }
      if (pass == 0) {
        need_mem(loc, "XP3050", "XP3051", opn, role_d, dp, seg, d.dst);
        need_mem(loc, "XP3050", "XP3051", opn, role_s, sp, seg, d.src);
      } else {
        need_in_array(loc, opn, role_d, dp, seg, d.dst);
        need_in_array(loc, opn, role_s, sp, seg, d.src);
      }
    }
}

/* ---------------------------------------------------------- __bang_* helpers */
template <class T> struct ident { typedef T type; };
template <class T> constexpr bool is_fh = std::is_same<T, float>::value || std::is_same<T, half>::value;

template <class T> inline void vec_rule(Loc loc, const char* op, long long n) {
  long long bytes = n * (long long)sizeof(T);
  if (n < 0 || bytes % 128 != 0)
    fail_at(loc, "XP3056", "%s: n = %lld elements of %zu bytes = %lld bytes, not a multiple of 128 (round n up to a multiple of %zu and pad the NRAM buffer)",
            op, n, sizeof(T), bytes, 128 / sizeof(T));
}
inline void arg_rule(Loc loc, bool ok, const char* op, const char* what) {
  if (!ok) fail_at(loc, "XP3060", "%s: invalid arguments: %s", op, what);
}

#define XPB_FH(T, OP) static_assert(::xpb::is_fh<T>, OP " supports float and half operands only")

#define XPB_BINARY(FN, OPNAME, EXPR)                                                             \
  template <class T> inline void FN(Loc loc, T* dst, const T* a, const T* b, int n) {            \
    XPB_FH(T, OPNAME);                                                                           \
    vec_rule<T>(loc, OPNAME, n);                                                                 \
    long long nb = (long long)n * (long long)sizeof(T);                                          \
    need_nram(loc, OPNAME, "dst", dst, nb);                                                      \
    need_nram(loc, OPNAME, "src0", a, nb);                                                       \
    need_nram(loc, OPNAME, "src1", b, nb);                                                       \
    for (int i = 0; i < n; ++i) { float x = (float)a[i], y = (float)b[i]; dst[i] = (T)(EXPR); }  \
  }
XPB_BINARY(op_add, "__bang_add", x + y)
XPB_BINARY(op_sub, "__bang_sub", x - y)
XPB_BINARY(op_mul, "__bang_mul", x * y)
XPB_BINARY(op_maxequal, "__bang_maxequal", (x > y || std::isnan(x)) ? x : y)
XPB_BINARY(op_minequal, "__bang_minequal", (x < y || std::isnan(x)) ? x : y)
XPB_BINARY(op_div, "__bang_div", x / y)
XPB_BINARY(op_maximum, "__bang_maximum", (x > y || std::isnan(x)) ? x : y)
XPB_BINARY(op_minimum, "__bang_minimum", (x < y || std::isnan(x)) ? x : y)
XPB_BINARY(op_eq, "__bang_eq", x == y ? 1.0f : 0.0f)
XPB_BINARY(op_ne, "__bang_ne", x != y ? 1.0f : 0.0f)
XPB_BINARY(op_lt, "__bang_lt", x < y ? 1.0f : 0.0f)
XPB_BINARY(op_le, "__bang_le", x <= y ? 1.0f : 0.0f)
XPB_BINARY(op_gt, "__bang_gt", x > y ? 1.0f : 0.0f)
XPB_BINARY(op_ge, "__bang_ge", x >= y ? 1.0f : 0.0f)
XPB_BINARY(op_and, "__bang_and", (x != 0.0f && y != 0.0f) ? 1.0f : 0.0f)
XPB_BINARY(op_or, "__bang_or", (x != 0.0f || y != 0.0f) ? 1.0f : 0.0f)

/* __bang_div(dst, src, scalar, n) and __bang_div(dst, a, b, tmp, n) seen in public kernels */
template <class T> inline void op_div(Loc loc, T* dst, const T* a, typename ident<T>::type s, int n) {
  XPB_FH(T, "__bang_div");
  vec_rule<T>(loc, "__bang_div", n);
  long long nb = (long long)n * (long long)sizeof(T);
  need_nram(loc, "__bang_div", "dst", dst, nb);
  need_nram(loc, "__bang_div", "src", a, nb);
  for (int i = 0; i < n; ++i) dst[i] = (T)((float)a[i] / (float)s);
}
template <class T> inline void op_div(Loc loc, T* dst, const T* a, const T* b, T* tmp, int n) {
  need_nram(loc, "__bang_div", "tmp", tmp, (long long)n * (long long)sizeof(T));
  op_div<T>(loc, dst, a, b, n);
}

#define XPB_SCALAR(FN, OPNAME, EXPR)                                                                  \
  template <class T> inline void FN(Loc loc, T* dst, const T* src, typename ident<T>::type s, int n) { \
    XPB_FH(T, OPNAME);                                                                                \
    vec_rule<T>(loc, OPNAME, n);                                                                      \
    long long nb = (long long)n * (long long)sizeof(T);                                               \
    need_nram(loc, OPNAME, "dst", dst, nb);                                                           \
    need_nram(loc, OPNAME, "src", src, nb);                                                           \
    float y = (float)s;                                                                               \
    for (int i = 0; i < n; ++i) { float x = (float)src[i]; dst[i] = (T)(EXPR); }                     \
  }
XPB_SCALAR(op_add_scalar, "__bang_add_scalar", x + y)
XPB_SCALAR(op_sub_scalar, "__bang_sub_scalar", x - y)
XPB_SCALAR(op_mul_scalar, "__bang_mul_scalar", x * y)
XPB_SCALAR(op_div_scalar, "__bang_div_scalar", x / y)
XPB_SCALAR(op_maxeq_scalar, "__bang_maxeq_scalar", (x > y || std::isnan(x)) ? x : y)
XPB_SCALAR(op_mineq_scalar, "__bang_mineq_scalar", (x < y || std::isnan(x)) ? x : y)
XPB_SCALAR(op_eq_scalar, "__bang_eq_scalar", x == y ? 1.0f : 0.0f)
XPB_SCALAR(op_ne_scalar, "__bang_ne_scalar", x != y ? 1.0f : 0.0f)
XPB_SCALAR(op_lt_scalar, "__bang_lt_scalar", x < y ? 1.0f : 0.0f)
XPB_SCALAR(op_le_scalar, "__bang_le_scalar", x <= y ? 1.0f : 0.0f)
XPB_SCALAR(op_gt_scalar, "__bang_gt_scalar", x > y ? 1.0f : 0.0f)
XPB_SCALAR(op_ge_scalar, "__bang_ge_scalar", x >= y ? 1.0f : 0.0f)

#define XPB_CYCLE(FN, OPNAME, EXPR)                                                                  \
  template <class T> inline void FN(Loc loc, T* dst, const T* src, const T* seg, int n, int seg_n) {  \
    XPB_FH(T, OPNAME);                                                                               \
    vec_rule<T>(loc, OPNAME, n);                                                                     \
    vec_rule<T>(loc, OPNAME " (segment length)", seg_n);                                            \
    if (seg_n <= 0 || n % seg_n != 0)                                                                \
      fail_at(loc, "XP3056", "%s: n = %d is not a multiple of the segment length %d", OPNAME, n, seg_n); \
    long long nb = (long long)n * (long long)sizeof(T);                                              \
    need_nram(loc, OPNAME, "dst", dst, nb);                                                          \
    need_nram(loc, OPNAME, "src", src, nb);                                                          \
    need_nram(loc, OPNAME, "seg", seg, (long long)seg_n * (long long)sizeof(T));                     \
    for (int i = 0; i < n; ++i) { float x = (float)src[i], y = (float)seg[i % seg_n]; dst[i] = (T)(EXPR); } \
  }
XPB_CYCLE(op_cycle_add, "__bang_cycle_add", x + y)
XPB_CYCLE(op_cycle_sub, "__bang_cycle_sub", x - y)
XPB_CYCLE(op_cycle_mul, "__bang_cycle_mul", x * y)
XPB_CYCLE(op_cycle_maxequal, "__bang_cycle_maxequal", (x > y || std::isnan(x)) ? x : y)
XPB_CYCLE(op_cycle_minequal, "__bang_cycle_minequal", (x < y || std::isnan(x)) ? x : y)

inline float gelu_exact(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }
inline float gelu_tanh(float x) { return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x))); }
inline float sign_of(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }

#define XPB_UNARY(FN, OPNAME, EXPR)                                           \
  template <class T> inline void FN(Loc loc, T* dst, const T* src, int n) {   \
    XPB_FH(T, OPNAME);                                                        \
    vec_rule<T>(loc, OPNAME, n);                                              \
    long long nb = (long long)n * (long long)sizeof(T);                       \
    need_nram(loc, OPNAME, "dst", dst, nb);                                   \
    need_nram(loc, OPNAME, "src", src, nb);                                   \
    for (int i = 0; i < n; ++i) { float x = (float)src[i]; dst[i] = (T)(EXPR); } \
  }
XPB_UNARY(op_exp, "__bang_active_exp", std::exp(x))
XPB_UNARY(op_active_recip, "__bang_active_recip", 1.0f / x)
XPB_UNARY(op_recip, "__bang_recip", 1.0f / x)
XPB_UNARY(op_relu, "__bang_active_relu", x > 0.0f ? x : 0.0f)
XPB_UNARY(op_sign, "__bang_active_sign", sign_of(x))
XPB_UNARY(op_sigmoid, "__bang_active_sigmoid", 1.0f / (1.0f + std::exp(-x)))
XPB_UNARY(op_gelu, "__bang_active_gelu", gelu_exact(x))
XPB_UNARY(op_gelup, "__bang_active_gelup", gelu_tanh(x))
XPB_UNARY(op_tanh, "__bang_active_tanh", std::tanh(x))
XPB_UNARY(op_sqrt, "__bang_sqrt", std::sqrt(x))
XPB_UNARY(op_rsqrt, "__bang_rsqrt", 1.0f / std::sqrt(x))
XPB_UNARY(op_square, "__bang_square", x * x)
XPB_UNARY(op_abs, "__bang_abs", std::fabs(x))
XPB_UNARY(op_sin, "__bang_sin", std::sin(x))
/* spellings of newer BANG releases and ops public kernels use (same float-computed contract) */
XPB_UNARY(op_sigmoid_v, "__bang_sigmoid", 1.0f / (1.0f + std::exp(-x)))
XPB_UNARY(op_relu_v, "__bang_relu", x > 0.0f ? x : 0.0f)
XPB_UNARY(op_exp_v, "__bang_exp", std::exp(x))
XPB_UNARY(op_log_v, "__bang_log", std::log(x))
XPB_UNARY(op_active_log, "__bang_active_log", std::log(x))
XPB_UNARY(op_tanh_v, "__bang_tanh", std::tanh(x))
XPB_UNARY(op_gelu_v, "__bang_gelu", gelu_exact(x))
XPB_UNARY(op_active_abs, "__bang_active_abs", std::fabs(x))
XPB_UNARY(op_active_sqrt, "__bang_active_sqrt", std::sqrt(x))
XPB_UNARY(op_active_rsqrt, "__bang_active_rsqrt", 1.0f / std::sqrt(x))
XPB_UNARY(op_cos, "__bang_cos", std::cos(x))
XPB_UNARY(op_pow2, "__bang_pow2", std::exp2(x))
XPB_UNARY(op_not, "__bang_not", x == 0.0f ? 1.0f : 0.0f)

/* fills */
template <class T> inline void op_write_zero(Loc loc, T* dst, int n) {
  static_assert(std::is_arithmetic<T>::value || std::is_same<T, half>::value, "__bang_write_zero needs a typed pointer");
  vec_rule<T>(loc, "__bang_write_zero", n);
  need_nram(loc, "__bang_write_zero", "dst", dst, (long long)n * (long long)sizeof(T));
  for (int i = 0; i < n; ++i) dst[i] = (T)0;
}
template <class T, class V> inline void op_write_value(Loc loc, T* dst, int n, V v) {
  vec_rule<T>(loc, "__bang_write_value", n);
  need_nram(loc, "__bang_write_value", "dst", dst, (long long)n * (long long)sizeof(T));
  for (int i = 0; i < n; ++i) dst[i] = (T)v;
}
/* __memset_nram(dst, n, value): n elements of dst's type (of value's type when dst is void*); no length rule */
template <class T, class V> inline void op_memset_nram(Loc loc, T* dst, int n, V v) {
  typedef typename std::conditional<std::is_void<T>::value, V, typename std::remove_cv<T>::type>::type E;
  if (n < 0) fail_at(loc, "XP3060", "__memset_nram: negative element count %d", n);
  need_nram(loc, "__memset_nram", "dst", dst, (long long)n * (long long)sizeof(E));
  E* d = (E*)dst;
  for (int i = 0; i < n; ++i) d[i] = (E)v;
}

/* conversions */
inline void op_float2half(Loc loc, half* dst, const float* src, int n) {
  vec_rule<half>(loc, "__bang_float2half_rn", n);
  vec_rule<float>(loc, "__bang_float2half_rn", n);
  need_nram(loc, "__bang_float2half_rn", "dst", dst, (long long)n * 2);
  need_nram(loc, "__bang_float2half_rn", "src", src, (long long)n * 4);
  for (int i = 0; i < n; ++i) dst[i] = (half)src[i];  /* round to nearest even */
}
inline void op_half2float(Loc loc, float* dst, const half* src, int n) {
  vec_rule<half>(loc, "__bang_half2float", n);
  vec_rule<float>(loc, "__bang_half2float", n);
  need_nram(loc, "__bang_half2float", "dst", dst, (long long)n * 4);
  need_nram(loc, "__bang_half2float", "src", src, (long long)n * 2);
  for (int i = 0; i < n; ++i) dst[i] = (float)src[i];
}

/* reductions */
template <class T> inline void op_argext(Loc loc, const char* op, bool want_max, T* dst, const T* src, int n) {
  XPB_FH(T, "__bang_max/__bang_min");
  vec_rule<T>(loc, op, n);
  if (n <= 0) fail_at(loc, "XP3060", "%s: empty input (n = %d)", op, n);
  need_nram(loc, op, "dst", dst, 2LL * (long long)sizeof(T));
  need_nram(loc, op, "src", src, (long long)n * (long long)sizeof(T));
  int best = 0;
  float bv = (float)src[0];
  for (int i = 1; i < n; ++i) {
    float v = (float)src[i];
    if (want_max ? v > bv : v < bv) { bv = v; best = i; }
  }
  dst[0] = (T)bv;
  dst[1] = (T)(float)best;
}
template <class T> inline void op_max(Loc loc, T* dst, const T* src, int n) { op_argext<T>(loc, "__bang_max", true, dst, src, n); }
template <class T> inline void op_min(Loc loc, T* dst, const T* src, int n) { op_argext<T>(loc, "__bang_min", false, dst, src, n); }
template <class T> inline void op_sum(Loc loc, T* dst, const T* src, int n) {
  XPB_FH(T, "__bang_sum");
  vec_rule<T>(loc, "__bang_sum", n);
  need_nram(loc, "__bang_sum", "dst", dst, (long long)sizeof(T));
  need_nram(loc, "__bang_sum", "src", src, (long long)n * (long long)sizeof(T));
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) acc += (float)src[i];
  dst[0] = (T)acc;
}
/* __bang_reduce_sum(dst, src, n): one sum per 128-byte group of src, stored contiguously:
 * dst[g] = sum(src[g*L .. g*L+L-1]), L = 128 / sizeof(T) (n = L gives the whole sum in dst[0]) */
template <class T> inline void op_reduce_sum(Loc loc, T* dst, const T* src, int n) {
  XPB_FH(T, "__bang_reduce_sum");
  vec_rule<T>(loc, "__bang_reduce_sum", n);
  const int L = 128 / (int)sizeof(T), groups = n / L;
  need_nram(loc, "__bang_reduce_sum", "src", src, (long long)n * (long long)sizeof(T));
  need_nram(loc, "__bang_reduce_sum", "dst", dst, (long long)(groups ? groups : 1) * (long long)sizeof(T));
  std::vector<float> out((size_t)groups);
  for (int g = 0; g < groups; ++g) {
    float acc = 0.0f;
    for (int i = 0; i < L; ++i) acc += (float)src[(size_t)g * L + i];
    out[(size_t)g] = acc;
  }
  for (int g = 0; g < groups; ++g) dst[g] = (T)out[(size_t)g];
}
/* __bang_argmax / __bang_argmin(dst, src, n): dst[0] = the extreme value, the 4 bytes after it
 * (read as *(uint32_t*)(dst + 1)) = its index (first occurrence) */
template <class T> inline void op_argext_u32(Loc loc, const char* op, bool want_max, T* dst, const T* src, int n) {
  XPB_FH(T, "__bang_argmax/__bang_argmin");
  vec_rule<T>(loc, op, n);
  if (n <= 0) fail_at(loc, "XP3060", "%s: empty input (n = %d)", op, n);
  need_nram(loc, op, "dst", dst, (long long)sizeof(T) + 4);
  need_nram(loc, op, "src", src, (long long)n * (long long)sizeof(T));
  uint32_t best = 0;
  float bv = (float)src[0];
  for (int i = 1; i < n; ++i) {
    float v = (float)src[i];
    if (want_max ? v > bv : v < bv) { bv = v; best = (uint32_t)i; }
  }
  dst[0] = (T)bv;
  std::memcpy((char*)dst + sizeof(T), &best, 4);
}
template <class T> inline void op_argmax(Loc loc, T* dst, const T* src, int n) { op_argext_u32<T>(loc, "__bang_argmax", true, dst, src, n); }
template <class T> inline void op_argmin(Loc loc, T* dst, const T* src, int n) { op_argext_u32<T>(loc, "__bang_argmin", false, dst, src, n); }

/* pools: src [H][W][C] -> dst [Ho][Wo][C], no padding */
enum PoolKind { POOL_SUM, POOL_AVG, POOL_MAX, POOL_MIN };
template <class T> inline void op_pool(Loc loc, const char* op, int kind, T* dst, const T* src, int C, int H, int W,
                                       int kh, int kw, int sh, int sw) {
  XPB_FH(T, "__bang_*pool");
  char why[160];
  snprintf(why, sizeof why, "C=%d H=%d W=%d kh=%d kw=%d sh=%d sw=%d (need all > 0, kh <= H, kw <= W)", C, H, W, kh, kw, sh, sw);
  arg_rule(loc, C > 0 && H > 0 && W > 0 && kh > 0 && kw > 0 && sh > 0 && sw > 0 && kh <= H && kw <= W, op, why);
  /* The channel rule (C*sizeof(T) % 64 == 0) is the documented alignment for the pool unit; public
   * code also pools one channel (a row sum: C = 1, H = 1, kw = W).  The result is well defined,
   * so the emulator computes it and notes the rule (XP3040) instead of refusing the source. */
  if ((long long)C * (long long)sizeof(T) % 64 != 0)
    note_at(loc, "XP3040", "%s: C = %d channels of %zu bytes = %lld bytes, not a multiple of 64 (the documented pool alignment; computed as written)",
            op, C, sizeof(T), (long long)C * (long long)sizeof(T));
  int Ho = (H - kh) / sh + 1, Wo = (W - kw) / sw + 1;
  need_nram(loc, op, "src", src, (long long)H * W * C * (long long)sizeof(T));
  need_nram(loc, op, "dst", dst, (long long)Ho * Wo * C * (long long)sizeof(T));
  std::vector<float> out((size_t)Ho * Wo * C);
  for (int oh = 0; oh < Ho; ++oh)
    for (int ow = 0; ow < Wo; ++ow)
      for (int c = 0; c < C; ++c) {
        float acc = kind == POOL_SUM || kind == POOL_AVG ? 0.0f : (float)src[((size_t)(oh * sh) * W + ow * sw) * C + c];
        for (int i = 0; i < kh; ++i)
          for (int j = 0; j < kw; ++j) {
            float v = (float)src[((size_t)(oh * sh + i) * W + (ow * sw + j)) * C + c];
            if (kind == POOL_SUM || kind == POOL_AVG) acc += v;
            else if (kind == POOL_MAX) acc = v > acc ? v : acc;
            else acc = v < acc ? v : acc;
          }
        if (kind == POOL_AVG) acc /= (float)(kh * kw);
        out[((size_t)oh * Wo + ow) * C + c] = acc;
      }
  for (size_t i = 0; i < out.size(); ++i) dst[i] = (T)out[i];
}

/* conv: src NRAM [H][W][Cin], filter WRAM [Cout][kh][kw][Cin], dst NRAM [Ho][Wo][Cout] */
template <class TD, class TS> inline void op_conv(Loc loc, TD* dst, const TS* src, const TS* filter, int Cin, int H, int W,
                                                  int kh, int kw, int sw, int sh, int Cout) {
  XPB_FH(TS, "__bang_conv");
  XPB_FH(TD, "__bang_conv");
  const char* op = "__bang_conv";
  char why[200];
  snprintf(why, sizeof why, "Cin=%d H=%d W=%d kh=%d kw=%d sw=%d sh=%d Cout=%d (need all > 0, kh <= H, kw <= W)", Cin, H, W, kh, kw, sw, sh, Cout);
  arg_rule(loc, Cin > 0 && H > 0 && W > 0 && kh > 0 && kw > 0 && sw > 0 && sh > 0 && Cout > 0 && kh <= H && kw <= W, op, why);
  int Ho = (H - kh) / sh + 1, Wo = (W - kw) / sw + 1;
  need_nram(loc, op, "src (input)", src, (long long)H * W * Cin * (long long)sizeof(TS));
  need_wram(loc, op, "filter", filter, (long long)Cout * kh * kw * Cin * (long long)sizeof(TS));
  need_nram(loc, op, "dst", dst, (long long)Ho * Wo * Cout * (long long)sizeof(TD));
  std::vector<float> out((size_t)Ho * Wo * Cout);
  for (int oh = 0; oh < Ho; ++oh)
    for (int ow = 0; ow < Wo; ++ow)
      for (int co = 0; co < Cout; ++co) {
        float acc = 0.0f;
        for (int i = 0; i < kh; ++i)
          for (int j = 0; j < kw; ++j) {
            const TS* s = src + ((size_t)(oh * sh + i) * W + (ow * sw + j)) * Cin;
            const TS* f = filter + (((size_t)co * kh + i) * kw + j) * Cin;
            for (int ci = 0; ci < Cin; ++ci) acc += (float)s[ci] * (float)f[ci];
          }
        out[((size_t)oh * Wo + ow) * Cout + co] = acc;
      }
  for (size_t i = 0; i < out.size(); ++i) dst[i] = (TD)out[i];
}

/* matmul: lhs NRAM [M][K], rhs WRAM [K][N], dst NRAM [M][N] */
template <class TD, class TS> inline void op_matmul(Loc loc, TD* dst, const TS* lhs, const TS* rhs, int M, int K, int N) {
  static_assert((std::is_same<TD, float>::value && (std::is_same<TS, float>::value || std::is_same<TS, half>::value)) ||
                    (std::is_same<TD, half>::value && std::is_same<TS, half>::value),
                "__bang_matmul operand types: (float*, float*, float*), (float*, half*, half*), (half*, half*, half*), "
                "or (float*, int8_t*, int8_t*, M, K, N, pos)");
  const char* op = "__bang_matmul";
  char why[120];
  snprintf(why, sizeof why, "M=%d K=%d N=%d (need all > 0)", M, K, N);
  arg_rule(loc, M > 0 && K > 0 && N > 0, op, why);
  need_nram(loc, op, "lhs", lhs, (long long)M * K * (long long)sizeof(TS));
  need_wram(loc, op, "rhs", rhs, (long long)K * N * (long long)sizeof(TS));
  need_nram(loc, op, "dst", dst, (long long)M * N * (long long)sizeof(TD));
  std::vector<float> out((size_t)M * N, 0.0f);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) {
      float a = (float)lhs[(size_t)m * K + k];
      const TS* r = rhs + (size_t)k * N;
      float* o = &out[(size_t)m * N];
      for (int n = 0; n < N; ++n) o[n] += a * (float)r[n];
    }
  for (size_t i = 0; i < out.size(); ++i) dst[i] = (TD)out[i];
}
inline void op_matmul(Loc loc, float* dst, const int8_t* lhs, const int8_t* rhs, int M, int K, int N, int pos) {
  const char* op = "__bang_matmul(int8)";
  char why[120];
  snprintf(why, sizeof why, "M=%d K=%d N=%d (need all > 0)", M, K, N);
  arg_rule(loc, M > 0 && K > 0 && N > 0, op, why);
  need_nram(loc, op, "lhs", lhs, (long long)M * K);
  need_wram(loc, op, "rhs", rhs, (long long)K * N);
  need_nram(loc, op, "dst", dst, (long long)M * N * 4);
  std::vector<int32_t> acc((size_t)M * N, 0);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n) acc[(size_t)m * N + n] += (int32_t)lhs[(size_t)m * K + k] * (int32_t)rhs[(size_t)k * N + n];
  for (size_t i = 0; i < acc.size(); ++i) dst[i] = std::ldexp((float)acc[i], pos);
}

/* mlp: src NRAM [K], weight WRAM [N][K], dst NRAM [N] */
template <class TD, class TS> inline void op_mlp(Loc loc, TD* dst, const TS* src, const TS* w, int K, int N) {
  XPB_FH(TS, "__bang_mlp");
  XPB_FH(TD, "__bang_mlp");
  const char* op = "__bang_mlp";
  char why[120];
  snprintf(why, sizeof why, "K=%d N=%d (need both > 0)", K, N);
  arg_rule(loc, K > 0 && N > 0, op, why);
  need_nram(loc, op, "src", src, (long long)K * (long long)sizeof(TS));
  need_wram(loc, op, "weight", w, (long long)N * K * (long long)sizeof(TS));
  need_nram(loc, op, "dst", dst, (long long)N * (long long)sizeof(TD));
  std::vector<float> out((size_t)N);
  for (int n = 0; n < N; ++n) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += (float)src[k] * (float)w[(size_t)n * K + k];
    out[(size_t)n] = acc;
  }
  for (int n = 0; n < N; ++n) dst[n] = (TD)out[(size_t)n];
}
/* fix-position form: the position only matters for int8 operands; float/half ignore it */
template <class TD, class TS> inline void op_mlp(Loc loc, TD* dst, const TS* src, const TS* w, int K, int N, int /*pos*/) {
  op_mlp<TD, TS>(loc, dst, src, w, K, N);
}
inline void op_mlp(Loc loc, float* dst, const int8_t* src, const int8_t* w, int K, int N, int pos) {
  const char* op = "__bang_mlp(int8)";
  arg_rule(loc, K > 0 && N > 0, op, "K and N must be > 0");
  need_nram(loc, op, "src", src, (long long)K);
  need_wram(loc, op, "weight", w, (long long)N * K);
  need_nram(loc, op, "dst", dst, (long long)N * 4);
  for (int n = 0; n < N; ++n) {
    int32_t acc = 0;
    for (int k = 0; k < K; ++k) acc += (int32_t)src[k] * (int32_t)w[(size_t)n * K + k];
    dst[n] = std::ldexp((float)acc, pos);
  }
}

/* transpose: src [H][W] -> dst [W][H] (any element type) */
template <class T> inline void op_transpose(Loc loc, T* dst, const T* src, int H, int W) {
  const char* op = "__bang_transpose";
  arg_rule(loc, H > 0 && W > 0, op, "H and W must be > 0");
  long long nb = (long long)H * W * (long long)sizeof(T);
  need_nram(loc, op, "dst", dst, nb);
  need_nram(loc, op, "src", src, nb);
  std::vector<T> tmp((size_t)H * W);
  for (int h = 0; h < H; ++h)
    for (int w = 0; w < W; ++w) tmp[(size_t)w * H + h] = src[(size_t)h * W + w];
  std::memcpy((void*)dst, tmp.data(), (size_t)nb);
}

}  // namespace xpb

/* ------------------------------------------------------ task-model builtins */
#define taskId ((int)::xpb::tls.task_id)
#define taskDim ((int)::xpb::tls.task_dim)
#define taskIdX ((int)(::xpb::tls.task_id % (int)::xpb::g_launch_dims[0]))
#define taskIdY ((int)((::xpb::tls.task_id / (int)::xpb::g_launch_dims[0]) % (int)::xpb::g_launch_dims[1]))
#define taskIdZ ((int)(::xpb::tls.task_id / ((int)::xpb::g_launch_dims[0] * (int)::xpb::g_launch_dims[1])))
#define taskDimX ((int)::xpb::g_launch_dims[0])
#define taskDimY ((int)::xpb::g_launch_dims[1])
#define taskDimZ ((int)::xpb::g_launch_dims[2])
#define coreId ((int)::xpb::tls.core_id)
#define coreDim ((int)::xpb::tls.core_dim)
/* The emulator runs only the compute (IPU) cores of a cluster; the memory core (MPU), which real
 * kernels guard with __is_mpu() for SRAM-only work, is not modelled: code under it never runs. */
#define __is_mpu() (false)
#define __is_ipu() (true)
#define clusterId ((int)::xpb::tls.cluster_id)
#define clusterDim ((int)::xpb::tls.cluster_dim)

namespace xpb {
inline unsigned g_launch_dims[3] = {1, 1, 1};
inline void launch_dims(unsigned x, unsigned y, unsigned z, int union_n, const std::function<void()>& body) {
  g_launch_dims[0] = x ? x : 1; g_launch_dims[1] = y ? y : 1; g_launch_dims[2] = z ? z : 1;
  launch(x, y, z, union_n, body);
}
}  // namespace xpb

/* ------------------------------------------------------------ synchronisation */
#define __sync_cluster() ::xpb::barrier(XPB_HERE, 0)
#define __sync_all() ::xpb::barrier(XPB_HERE, 1)
#define __sync() ((void)0)
#define __sync_io() ((void)0)
#define __sync_compute() ((void)0)
#define __sync_io_move_compute() ((void)0)
#define __sync_move() ((void)0)

/* ---------------------------------------------------------------- copies */
inline void xpb_memcpy(xpb::Loc loc, const char* op, void* dst, const void* src, long long bytes, mluMemcpyDirection_t dir) {
  xpb::memcpy_impl(loc, op, dst, src, bytes, (int)dir, 0, 0, 0);
}
inline void xpb_memcpy(xpb::Loc loc, const char* op, void* dst, const void* src, long long seg, mluMemcpyDirection_t dir,
                       long long dst_stride, long long src_stride, long long segnum) {
  xpb::memcpy_impl(loc, op, dst, src, seg, (int)dir, dst_stride, src_stride, segnum);
}
#define __memcpy(...) xpb_memcpy(XPB_HERE, "__memcpy", __VA_ARGS__)
#define __memcpy_async(...) xpb_memcpy(XPB_HERE, "__memcpy_async", __VA_ARGS__)

/* ------------------------------------------------------------ operations */
#define __bang_add(...) ::xpb::op_add(XPB_HERE, __VA_ARGS__)
#define __bang_sub(...) ::xpb::op_sub(XPB_HERE, __VA_ARGS__)
#define __bang_mul(...) ::xpb::op_mul(XPB_HERE, __VA_ARGS__)
#define __bang_div(...) ::xpb::op_div(XPB_HERE, __VA_ARGS__)
#define __bang_maxequal(...) ::xpb::op_maxequal(XPB_HERE, __VA_ARGS__)
#define __bang_minequal(...) ::xpb::op_minequal(XPB_HERE, __VA_ARGS__)
#define __bang_add_scalar(...) ::xpb::op_add_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_sub_scalar(...) ::xpb::op_sub_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_mul_scalar(...) ::xpb::op_mul_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_div_scalar(...) ::xpb::op_div_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_add_const(...) ::xpb::op_add_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_sub_const(...) ::xpb::op_sub_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_mul_const(...) ::xpb::op_mul_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_cycle_add(...) ::xpb::op_cycle_add(XPB_HERE, __VA_ARGS__)
#define __bang_cycle_sub(...) ::xpb::op_cycle_sub(XPB_HERE, __VA_ARGS__)
#define __bang_cycle_mul(...) ::xpb::op_cycle_mul(XPB_HERE, __VA_ARGS__)
#define __bang_active_exp(...) ::xpb::op_exp(XPB_HERE, __VA_ARGS__)
#define __bang_active_recip(...) ::xpb::op_active_recip(XPB_HERE, __VA_ARGS__)
#define __bang_recip(...) ::xpb::op_recip(XPB_HERE, __VA_ARGS__)
#define __bang_active_relu(...) ::xpb::op_relu(XPB_HERE, __VA_ARGS__)
#define __bang_active_sign(...) ::xpb::op_sign(XPB_HERE, __VA_ARGS__)
#define __bang_active_sigmoid(...) ::xpb::op_sigmoid(XPB_HERE, __VA_ARGS__)
#define __bang_active_gelu(...) ::xpb::op_gelu(XPB_HERE, __VA_ARGS__)
#define __bang_active_gelup(...) ::xpb::op_gelup(XPB_HERE, __VA_ARGS__)
#define __bang_active_tanh(...) ::xpb::op_tanh(XPB_HERE, __VA_ARGS__)
#define __bang_sqrt(...) ::xpb::op_sqrt(XPB_HERE, __VA_ARGS__)
#define __bang_rsqrt(...) ::xpb::op_rsqrt(XPB_HERE, __VA_ARGS__)
#define __bang_square(...) ::xpb::op_square(XPB_HERE, __VA_ARGS__)
#define __bang_abs(...) ::xpb::op_abs(XPB_HERE, __VA_ARGS__)
#define __bang_sin(...) ::xpb::op_sin(XPB_HERE, __VA_ARGS__)
#define __bang_sigmoid(...) ::xpb::op_sigmoid_v(XPB_HERE, __VA_ARGS__)
#define __bang_relu(...) ::xpb::op_relu_v(XPB_HERE, __VA_ARGS__)
#define __bang_exp(...) ::xpb::op_exp_v(XPB_HERE, __VA_ARGS__)
#define __bang_log(...) ::xpb::op_log_v(XPB_HERE, __VA_ARGS__)
#define __bang_active_log(...) ::xpb::op_active_log(XPB_HERE, __VA_ARGS__)
#define __bang_tanh(...) ::xpb::op_tanh_v(XPB_HERE, __VA_ARGS__)
#define __bang_gelu(...) ::xpb::op_gelu_v(XPB_HERE, __VA_ARGS__)
#define __bang_active_abs(...) ::xpb::op_active_abs(XPB_HERE, __VA_ARGS__)
#define __bang_active_sqrt(...) ::xpb::op_active_sqrt(XPB_HERE, __VA_ARGS__)
#define __bang_active_rsqrt(...) ::xpb::op_active_rsqrt(XPB_HERE, __VA_ARGS__)
#define __bang_cos(...) ::xpb::op_cos(XPB_HERE, __VA_ARGS__)
#define __bang_pow2(...) ::xpb::op_pow2(XPB_HERE, __VA_ARGS__)
#define __bang_not(...) ::xpb::op_not(XPB_HERE, __VA_ARGS__)
#define __bang_maximum(...) ::xpb::op_maximum(XPB_HERE, __VA_ARGS__)
#define __bang_minimum(...) ::xpb::op_minimum(XPB_HERE, __VA_ARGS__)
#define __bang_eq(...) ::xpb::op_eq(XPB_HERE, __VA_ARGS__)
#define __bang_ne(...) ::xpb::op_ne(XPB_HERE, __VA_ARGS__)
#define __bang_lt(...) ::xpb::op_lt(XPB_HERE, __VA_ARGS__)
#define __bang_le(...) ::xpb::op_le(XPB_HERE, __VA_ARGS__)
#define __bang_gt(...) ::xpb::op_gt(XPB_HERE, __VA_ARGS__)
#define __bang_ge(...) ::xpb::op_ge(XPB_HERE, __VA_ARGS__)
#define __bang_and(...) ::xpb::op_and(XPB_HERE, __VA_ARGS__)
#define __bang_or(...) ::xpb::op_or(XPB_HERE, __VA_ARGS__)
#define __bang_maxeq_scalar(...) ::xpb::op_maxeq_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_mineq_scalar(...) ::xpb::op_mineq_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_eq_scalar(...) ::xpb::op_eq_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_ne_scalar(...) ::xpb::op_ne_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_lt_scalar(...) ::xpb::op_lt_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_le_scalar(...) ::xpb::op_le_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_gt_scalar(...) ::xpb::op_gt_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_ge_scalar(...) ::xpb::op_ge_scalar(XPB_HERE, __VA_ARGS__)
#define __bang_cycle_maxequal(...) ::xpb::op_cycle_maxequal(XPB_HERE, __VA_ARGS__)
#define __bang_cycle_minequal(...) ::xpb::op_cycle_minequal(XPB_HERE, __VA_ARGS__)
#define __bang_reduce_sum(...) ::xpb::op_reduce_sum(XPB_HERE, __VA_ARGS__)
#define __bang_argmax(...) ::xpb::op_argmax(XPB_HERE, __VA_ARGS__)
#define __bang_argmin(...) ::xpb::op_argmin(XPB_HERE, __VA_ARGS__)
#define __bang_write_zero(...) ::xpb::op_write_zero(XPB_HERE, __VA_ARGS__)
#define __bang_write_value(...) ::xpb::op_write_value(XPB_HERE, __VA_ARGS__)
#define __memset_nram(...) ::xpb::op_memset_nram(XPB_HERE, __VA_ARGS__)
#define __bang_float2half_rn(...) ::xpb::op_float2half(XPB_HERE, __VA_ARGS__)
#define __bang_float2half(...) ::xpb::op_float2half(XPB_HERE, __VA_ARGS__)
#define __bang_half2float(...) ::xpb::op_half2float(XPB_HERE, __VA_ARGS__)
#define __bang_max(...) ::xpb::op_max(XPB_HERE, __VA_ARGS__)
#define __bang_min(...) ::xpb::op_min(XPB_HERE, __VA_ARGS__)
#define __bang_sum(...) ::xpb::op_sum(XPB_HERE, __VA_ARGS__)
#define __bang_sumpool(dst, src, ...) ::xpb::op_pool(XPB_HERE, "__bang_sumpool", ::xpb::POOL_SUM, dst, src, __VA_ARGS__)
#define __bang_avgpool(dst, src, ...) ::xpb::op_pool(XPB_HERE, "__bang_avgpool", ::xpb::POOL_AVG, dst, src, __VA_ARGS__)
#define __bang_maxpool(dst, src, ...) ::xpb::op_pool(XPB_HERE, "__bang_maxpool", ::xpb::POOL_MAX, dst, src, __VA_ARGS__)
#define __bang_minpool(dst, src, ...) ::xpb::op_pool(XPB_HERE, "__bang_minpool", ::xpb::POOL_MIN, dst, src, __VA_ARGS__)
#define __bang_conv(...) ::xpb::op_conv(XPB_HERE, __VA_ARGS__)
#define __bang_matmul(...) ::xpb::op_matmul(XPB_HERE, __VA_ARGS__)
#define __bang_mlp(...) ::xpb::op_mlp(XPB_HERE, __VA_ARGS__)
#define __bang_transpose(...) ::xpb::op_transpose(XPB_HERE, __VA_ARGS__)
#define __bang_printf printf

/* scalar helpers used in device code */
inline half __float2half(float f) { return (half)f; }
inline half __float2half_rn(float f) { return (half)f; }
inline float __half2float(half h) { return (float)h; }
template <class A, class B> inline typename std::common_type<A, B>::type min(A a, B b) {
  typedef typename std::common_type<A, B>::type R;
  return (R)a < (R)b ? (R)a : (R)b;
}
template <class A, class B> inline typename std::common_type<A, B>::type max(A a, B b) {
  typedef typename std::common_type<A, B>::type R;
  return (R)a > (R)b ? (R)a : (R)b;
}

/* ------------------------------------------------------------------ CNRT */
typedef enum { cnrtSuccess = 0, cnrtErrorArgsInvalid = 1, cnrtErrorNoMem = 2, cnrtErrorSys = 3 } cnrtRet_t;
#define CNRT_RET_SUCCESS cnrtSuccess
typedef struct { unsigned int x, y, z; } cnrtDim3_t;
typedef enum {
  CNRT_FUNC_TYPE_BLOCK = 1, CNRT_FUNC_TYPE_UNION1 = 4, CNRT_FUNC_TYPE_UNION2 = 8,
  CNRT_FUNC_TYPE_UNION4 = 16, CNRT_FUNC_TYPE_UNION8 = 32
} cnrtFunctionType_t;
typedef enum {
  cnrtMemcpyHostToDev = 0, cnrtMemcpyDevToDev = 1, cnrtMemcpyDevToHost = 2, cnrtMemcpyHostToHost = 3
} cnrtMemTransDir_t;
#define CNRT_MEM_TRANS_DIR_HOST2DEV cnrtMemcpyHostToDev
#define CNRT_MEM_TRANS_DIR_DEV2DEV cnrtMemcpyDevToDev
#define CNRT_MEM_TRANS_DIR_DEV2HOST cnrtMemcpyDevToHost
#define CNRT_MEM_TRANS_DIR_HOST2HOST cnrtMemcpyHostToHost
struct xpb_cnrt_queue { int id; };
typedef xpb_cnrt_queue* cnrtQueue_t;

namespace xpb {
inline std::map<uintptr_t, size_t>& device_allocs() { static std::map<uintptr_t, size_t> m; return m; }
inline std::mutex& device_mutex() { static std::mutex m; return m; }
/* size of the device allocation containing [p, p+n), or -1 (not device memory), -2 (overruns it) */
inline long long device_extent(const void* p, size_t n) {
  std::lock_guard<std::mutex> lk(device_mutex());
  auto& m = device_allocs();
  uintptr_t a = (uintptr_t)p;
  auto it = m.upper_bound(a);
  if (it == m.begin()) return -1;
  --it;
  if (a >= it->first + (it->second ? it->second : 1)) return -1;
  if (a + n > it->first + it->second) return -2;
  return (long long)it->second;
}
inline int func_type_to_union(cnrtFunctionType_t t) {
  switch ((int)t) {
    case CNRT_FUNC_TYPE_BLOCK: return 0;
    case CNRT_FUNC_TYPE_UNION1: return 1;
    case CNRT_FUNC_TYPE_UNION2: return 2;
    case CNRT_FUNC_TYPE_UNION4: return 4;
    case CNRT_FUNC_TYPE_UNION8: return 8;
    default: fail("XP3062", "unknown cnrtFunctionType_t value %d", (int)t);
  }
}
}  // namespace xpb

inline cnrtRet_t cnrtMalloc(void** p, size_t bytes) {
  if (!p) return cnrtErrorArgsInvalid;
  void* q = malloc(bytes ? bytes : 1);
  if (!q) return cnrtErrorNoMem;
  std::memset(q, xpb::kPoison, bytes);
  std::lock_guard<std::mutex> lk(xpb::device_mutex());
  xpb::device_allocs()[(uintptr_t)q] = bytes;
  *p = q;
  return cnrtSuccess;
}
inline cnrtRet_t cnrtFree(void* p) {
  if (!p) return cnrtSuccess;
  {
    std::lock_guard<std::mutex> lk(xpb::device_mutex());
    auto& m = xpb::device_allocs();
    auto it = m.find((uintptr_t)p);
    if (it == m.end()) xpb::fail("XP3065", "cnrtFree(%p): not a pointer returned by cnrtMalloc (or freed twice)", p);
    m.erase(it);
  }
  free(p);
  return cnrtSuccess;
}
inline void xpb_cnrt_need(const char* what, const void* p, size_t n, bool device) {
  long long e = xpb::device_extent(p, n);
  if (device && e == -1) xpb::fail("XP3065", "cnrtMemcpy: %s %p is not device memory from cnrtMalloc", what, p);
  if (device && e == -2) xpb::fail("XP3065", "cnrtMemcpy: %s %p + %zu bytes overruns its cnrtMalloc allocation", what, p, n);
  if (!device && e != -1) xpb::fail("XP3065", "cnrtMemcpy: %s %p is device memory, but the direction says host memory", what, p);
}
inline cnrtRet_t cnrtMemcpy(void* dst, const void* src, size_t bytes, cnrtMemTransDir_t dir) {
  if (bytes == 0) return cnrtSuccess;
  switch (dir) {
    case cnrtMemcpyHostToDev: xpb_cnrt_need("destination", dst, bytes, true); xpb_cnrt_need("source", src, bytes, false); break;
    case cnrtMemcpyDevToHost: xpb_cnrt_need("destination", dst, bytes, false); xpb_cnrt_need("source", src, bytes, true); break;
    case cnrtMemcpyDevToDev: xpb_cnrt_need("destination", dst, bytes, true); xpb_cnrt_need("source", src, bytes, true); break;
    case cnrtMemcpyHostToHost: xpb_cnrt_need("destination", dst, bytes, false); xpb_cnrt_need("source", src, bytes, false); break;
    default: xpb::fail("XP3065", "cnrtMemcpy: unknown direction %d", (int)dir);
  }
  std::memmove(dst, src, bytes);
  return cnrtSuccess;
}
inline cnrtRet_t cnrtMemset(void* p, int value, size_t bytes) {
  if (bytes && xpb::device_extent(p, bytes) < 0) xpb::fail("XP3065", "cnrtMemset(%p, %zu bytes): not inside a cnrtMalloc allocation", p, bytes);
  std::memset(p, value, bytes);
  return cnrtSuccess;
}
inline cnrtRet_t cnrtQueueCreate(cnrtQueue_t* q) { static xpb_cnrt_queue one{0}; if (q) *q = &one; return cnrtSuccess; }
inline cnrtRet_t cnrtQueueDestroy(cnrtQueue_t) { return cnrtSuccess; }
inline cnrtRet_t cnrtQueueSync(cnrtQueue_t) { return cnrtSuccess; }  /* launches are synchronous */
inline cnrtRet_t cnrtSyncQueue(cnrtQueue_t) { return cnrtSuccess; }
inline cnrtRet_t cnrtInit(unsigned int) { return cnrtSuccess; }
inline cnrtRet_t cnrtSetDevice(int) { return cnrtSuccess; }
inline cnrtRet_t cnrtGetDevice(int* d) { if (d) *d = 0; return cnrtSuccess; }
inline cnrtRet_t cnrtGetDeviceCount(unsigned int* n) { if (n) *n = 1; return cnrtSuccess; }
inline const char* cnrtGetErrorStr(cnrtRet_t r) { return r == cnrtSuccess ? "cnrtSuccess" : "cnrt error"; }
#define CNRT_CHECK(expr)                                                                         \
  do {                                                                                           \
    cnrtRet_t xpb_r_ = (expr);                                                                   \
    if (xpb_r_ != cnrtSuccess) xpb::fail("XP3065", "%s returned %d", #expr, (int)xpb_r_);         \
  } while (0)

/* `kernel<<<dim, ktype, queue>>>(args)` after prepare() */
template <class F> inline void xpb_launch_cnrt(cnrtDim3_t dim, cnrtFunctionType_t ktype, cnrtQueue_t, F&& body) {
  xpb::launch_dims(dim.x, dim.y, dim.z, xpb::func_type_to_union(ktype), std::function<void()>(body));
}
/* harness launch: func_type 0 = BLOCK, N = UNIONn */
template <class D, class F> inline void xpb_launch(const D& dim, int func_type, F&& body) {
  xpb::launch_dims(dim.x, dim.y, dim.z, func_type, std::function<void()>(body));
}
#define XP_LAUNCH(J, F, ARGS) xpb_launch((J).dim, (J).func_type, [=]() { F ARGS; })

#endif /* XP_BANG_H */
