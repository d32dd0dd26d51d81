#!/usr/bin/env bash
# Two c outputs of gemv (same signature: A, x, y, M, K) timed alternately in ONE process, one thread:
#   benchmarks/gemv_ab.sh OLD/gemv.c NEW/gemv.c [M K]
# Each of 41 rounds (after 5 warm-up rounds) calls old then new on the same inputs; prints the
# median and minimum ms of each and the largest difference of their outputs. Native build
# (gcc -O2 -march=native -fopenmp, as benchmarks/cpu_perf.py); run with OMP_NUM_THREADS=1.
set -euo pipefail
old=$1; new=$2; M=${3:-2048}; K=${4:-2048}
d=$(mktemp -d)
for v in old new; do
  f=$old; [ $v = new ] && f=$new
  sed "s/\bgemv(/gemv_$v(/; s/\bgemv_host(/gemv_host_$v(/" "$f" > "$d/$v.c"
done
cat > "$d/drv.c" <<C
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <math.h>
void gemv_old(); void gemv_new();
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec*1e-6;}
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return x<y?-1:x>y;}
int main(void){int M=$M,K=$K; float*A=malloc(4L*M*K),*x=malloc(4L*K),*y=malloc(4L*M),*y2=malloc(4L*M);
srand(1); for(long i=0;i<(long)M*K;i++)A[i]=(rand()%2000-1000)/1000.f; for(int i=0;i<K;i++)x[i]=(rand()%2000-1000)/1000.f;
double to[41],tn[41]; for(int r=-5;r<41;r++){double t0=now();gemv_old(A,x,y,M,K);double t1=now();gemv_new(A,x,y2,M,K);double t2=now();
if(r>=0){to[r]=t1-t0;tn[r]=t2-t1;}}
double e=0;for(int i=0;i<M;i++)e=fmax(e,fabs(y[i]-y2[i]));
qsort(to,41,8,cmp);qsort(tn,41,8,cmp);
printf("M=%d K=%d old median %.3f ms min %.3f | new median %.3f ms min %.3f | old/new %.2f | max |old-new| %g\n",M,K,to[20],to[0],tn[20],tn[0],to[20]/tn[20],e);return 0;}
C
gcc -O2 -march=native -fopenmp -w "$d/drv.c" "$d/old.c" "$d/new.c" -o "$d/ab" -lm
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$d/ab"
rm -rf "$d"
