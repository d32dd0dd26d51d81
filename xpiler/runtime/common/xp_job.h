/* xp_job.h: the harness side of a verification run (C and C++).
 *
 * A job folder holds job.txt (launch dimensions, scalars, array sizes) and in.bin (every
 * array argument's initial bytes, in signature order).  The generated main() loads the job,
 * calls the kernel through the dialect runtime's XP_LAUNCH, and stores every array back into
 * out.bin so the tester can also check that inputs were left alone.
 *
 * job.txt lines:  grid X Y Z | block X Y Z | shared N | dim X Y Z | functype N | nargs N
 *                 array I NBYTES | iscalar I VALUE | fscalar I VALUE
 *
 * Guard zones (docs/verification.md, "Guard zones"): every array sits between two zones of
 * XP_GUARD_BYTES filled with XP_GUARD_BYTE.  Under AddressSanitizer the zones are poisoned, so an
 * instrumented access there is reported as before; a write the sanitizer does not see (an
 * AVX-512 masked store: gcc does not instrument those builtins) changes a zone, and
 * xp_job_store then reports XP4280 and exits with the runtime-error status (97).
 */
#ifndef XP_JOB_H
#define XP_JOB_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SANITIZE_ADDRESS__)
#define XP_JOB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XP_JOB_ASAN 1
#endif
#endif
#ifdef XP_JOB_ASAN
#include <sanitizer/asan_interface.h>
#define XP_JOB_POISON(p, n) __asan_poison_memory_region((p), (n))
#define XP_JOB_UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define XP_JOB_POISON(p, n) ((void)(p), (void)(n))
#define XP_JOB_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
#define XP_GUARD_BYTES 4096
#define XP_GUARD_BYTE 0xA5

#define XP_MAX_ARGS 64

typedef struct { unsigned x, y, z; } xp_dim3;

typedef struct {
  xp_dim3 grid, block;
  size_t shared;
  xp_dim3 dim;
  int func_type; /* bang: 0 = block, N = unionN */
  int nargs;
  void* ptr[XP_MAX_ARGS];
  size_t bytes[XP_MAX_ARGS];
  double scalar[XP_MAX_ARGS];
  long long iscalar[XP_MAX_ARGS];
} xp_job;

static int xp_job_load(xp_job* J, const char* dir) {
  char path[4096];
  memset(J, 0, sizeof(*J));
  J->grid.x = J->grid.y = J->grid.z = 1;
  J->block.x = J->block.y = J->block.z = 1;
  J->dim.x = J->dim.y = J->dim.z = 1;
  snprintf(path, sizeof path, "%s/job.txt", dir);
  FILE* f = fopen(path, "r");
  if (!f) { fprintf(stderr, "xpiler-harness: cannot open %s\n", path); return 1; }
  char key[64];
  while (fscanf(f, "%63s", key) == 1) {
    int i; unsigned long long n; double d; long long ll;
    if (!strcmp(key, "grid")) { if (fscanf(f, "%u %u %u", &J->grid.x, &J->grid.y, &J->grid.z) != 3) goto bad; }
    else if (!strcmp(key, "block")) { if (fscanf(f, "%u %u %u", &J->block.x, &J->block.y, &J->block.z) != 3) goto bad; }
    else if (!strcmp(key, "dim")) { if (fscanf(f, "%u %u %u", &J->dim.x, &J->dim.y, &J->dim.z) != 3) goto bad; }
    else if (!strcmp(key, "shared")) { if (fscanf(f, "%llu", &n) != 1) goto bad; J->shared = (size_t)n; }
    else if (!strcmp(key, "functype")) { if (fscanf(f, "%d", &J->func_type) != 1) goto bad; }
    else if (!strcmp(key, "nargs")) { if (fscanf(f, "%d", &J->nargs) != 1 || J->nargs > XP_MAX_ARGS) goto bad; }
    else if (!strcmp(key, "array")) {
      if (fscanf(f, "%d %llu", &i, &n) != 2 || i < 0 || i >= XP_MAX_ARGS) goto bad;
      J->bytes[i] = (size_t)n;
    } else if (!strcmp(key, "iscalar")) {
      if (fscanf(f, "%d %lld", &i, &ll) != 2 || i < 0 || i >= XP_MAX_ARGS) goto bad;
      J->iscalar[i] = ll; J->scalar[i] = (double)ll;
    } else if (!strcmp(key, "fscalar")) {
      if (fscanf(f, "%d %lf", &i, &d) != 2 || i < 0 || i >= XP_MAX_ARGS) goto bad;
      J->scalar[i] = d; J->iscalar[i] = (long long)d;
    } else goto bad;
  }
  fclose(f);
  snprintf(path, sizeof path, "%s/in.bin", dir);
  f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "xpiler-harness: cannot open %s\n", path); return 1; }
  for (int i = 0; i < XP_MAX_ARGS; ++i) {
    if (!J->bytes[i]) continue;
    /* guard zone, array, guard zone: AddressSanitizer sees an instrumented overrun (the zones
       are poisoned), xp_job_store sees an uninstrumented write (a zone changed) */
    unsigned char* base = (unsigned char*)malloc(J->bytes[i] + 2 * XP_GUARD_BYTES);
    if (!base) { fprintf(stderr, "xpiler-harness: out of memory for argument %d\n", i); fclose(f); return 1; }
    memset(base, XP_GUARD_BYTE, XP_GUARD_BYTES);
    memset(base + XP_GUARD_BYTES + J->bytes[i], XP_GUARD_BYTE, XP_GUARD_BYTES);
    J->ptr[i] = base + XP_GUARD_BYTES;
    if (fread(J->ptr[i], 1, J->bytes[i], f) != J->bytes[i]) {
      fprintf(stderr, "xpiler-harness: short read for argument %d\n", i); fclose(f); return 1;
    }
    XP_JOB_POISON(base, XP_GUARD_BYTES);
    XP_JOB_POISON(base + XP_GUARD_BYTES + J->bytes[i], XP_GUARD_BYTES);
  }
  fclose(f);
  return 0;
bad:
  fprintf(stderr, "xpiler-harness: malformed job.txt near '%s'\n", key);
  fclose(f);
  return 1;
}

/* 0, or the runtime-error status after reporting XP4280 for the first array whose guard zone a
   write changed (the byte offset is from the array's start: negative before it) */
static int xp_job_check_guards(const xp_job* J) {
  for (int i = 0; i < XP_MAX_ARGS; ++i) {
    if (!J->bytes[i]) continue;
    unsigned char* a = (unsigned char*)J->ptr[i];
    unsigned char* zone[2] = {a - XP_GUARD_BYTES, a + J->bytes[i]};
    for (int z = 0; z < 2; ++z) {
      XP_JOB_UNPOISON(zone[z], XP_GUARD_BYTES);
      long first = -1, last = -1, n = 0;
      for (long b = 0; b < XP_GUARD_BYTES; ++b)
        if (zone[z][b] != (unsigned char)XP_GUARD_BYTE) { if (first < 0) first = b; last = b; ++n; }
      XP_JOB_POISON(zone[z], XP_GUARD_BYTES);
      if (n) {
        long off0 = z ? (long)J->bytes[i] + first : first - XP_GUARD_BYTES;
        long off1 = z ? (long)J->bytes[i] + last : last - XP_GUARD_BYTES;
        fprintf(stderr, "xpiler-runtime-error: XP4280 argument %d (%zu bytes): %ld bytes %s it were written "
                "(bytes %ld..%ld from its start), a write AddressSanitizer did not see\n",
                i, J->bytes[i], n, z ? "after" : "before", off0, off1);
        return 97;
      }
    }
  }
  return 0;
}

static int xp_job_store(const xp_job* J, const char* dir) {
  char path[4096];
  int guard_rc = xp_job_check_guards(J);
  if (guard_rc) return guard_rc;
  snprintf(path, sizeof path, "%s/out.bin", dir);
  FILE* f = fopen(path, "wb");
  if (!f) { fprintf(stderr, "xpiler-harness: cannot write %s\n", path); return 91; }
  for (int i = 0; i < XP_MAX_ARGS; ++i)
    if (J->bytes[i] && fwrite(J->ptr[i], 1, J->bytes[i], f) != J->bytes[i]) { fclose(f); return 91; }
  fclose(f);
  return 0;
}
#endif
