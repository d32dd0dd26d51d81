/* xp_job.h: the harness side of a verification run (C and C++).
 *
 * A job folder holds job.txt (launch dimensions, scalars, array sizes) and in.bin (every
 * array argument's initial bytes, in signature order).  The generated main() loads the job,
 * calls the kernel through the dialect runtime's XP_LAUNCH, and stores every array back into
 * out.bin so the tester can also check that inputs were left alone.
 *
 * job.txt lines:  grid X Y Z | block X Y Z | shared N | dim X Y Z | functype N | nargs N
 *                 array I NBYTES | iscalar I VALUE | fscalar I VALUE
 */
#ifndef XP_JOB_H
#define XP_JOB_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    J->ptr[i] = malloc(J->bytes[i]); /* exact size: AddressSanitizer sees any overrun */
    if (!J->ptr[i] || fread(J->ptr[i], 1, J->bytes[i], f) != J->bytes[i]) {
      fprintf(stderr, "xpiler-harness: short read for argument %d\n", i); fclose(f); return 1;
    }
  }
  fclose(f);
  return 0;
bad:
  fprintf(stderr, "xpiler-harness: malformed job.txt near '%s'\n", key);
  fclose(f);
  return 1;
}

static int xp_job_store(const xp_job* J, const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/out.bin", dir);
  FILE* f = fopen(path, "wb");
  if (!f) { fprintf(stderr, "xpiler-harness: cannot write %s\n", path); return 91; }
  for (int i = 0; i < XP_MAX_ARGS; ++i)
    if (J->bytes[i] && fwrite(J->ptr[i], 1, J->bytes[i], f) != J->bytes[i]) { fclose(f); return 91; }
  fclose(f);
  return 0;
}
#endif
