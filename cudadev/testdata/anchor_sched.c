// anchor_sched: anchor_cuda.c's launch figures under a chosen scheduling of the
// primary context ("auto", CUDA's default, or "blocking", which cudadev
// sets), and the host's cost of launches enqueued in batches that never
// fill the stream, the yardstick of BenchmarkGPULaunchBatch.
//   gcc -O2 -o /tmp/anchor_sched anchor_sched.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
//   /tmp/anchor_sched kernels.sm_90.cubin blocking
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdint.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
#define CK(x) do{CUresult r=(x); if(r){const char*s;cuGetErrorName(r,&s);printf("%s: %s\n",#x,s);exit(1);}}while(0)
int main(int argc,char**argv){
  const char*mode=argc>2?argv[2]:"auto";
  CUdevice dev; CUcontext ctx; CUstream st; CUmodule mod; CUfunction fn;
  CK(cuInit(0)); CK(cuDeviceGet(&dev,0));
  if(!strcmp(mode,"blocking")) CK(cuDevicePrimaryCtxSetFlags(dev,CU_CTX_SCHED_BLOCKING_SYNC));
  CK(cuDevicePrimaryCtxRetain(&ctx,dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&st,CU_STREAM_NON_BLOCKING)); CK(cuModuleLoad(&mod,argv[1])); CK(cuModuleGetFunction(&fn,mod,"empty"));
  {CUcontext c; double a=now(); for(int i=0;i<1000000;i++){cuCtxPushCurrent(ctx); cuCtxPopCurrent(&c);} printf("C[%s] push+pop: %.1f ns\n",mode,(now()-a)/1e6);}
  const int N=100000; double *lat=malloc(sizeof(double)*10000);
  for(int i=0;i<1000;i++) CK(cuLaunchKernel(fn,1,1,1,32,1,1,0,st,0,0));
  CK(cuStreamSynchronize(st));
  double t0=now(); for(int i=0;i<N;i++) cuLaunchKernel(fn,1,1,1,32,1,1,0,st,0,0); double t1=now(); cuStreamSynchronize(st);
  printf("C[%s] launch enqueue: %.0f ns/launch\n",mode,(t1-t0)/N);
  double in=0; for(int b=0;b<400;b++){double a=now(); for(int i=0;i<256;i++) cuLaunchKernel(fn,1,1,1,32,1,1,0,st,0,0); in+=now()-a; cuStreamSynchronize(st);}
  printf("C[%s] launch enqueue in batches of 256: %.0f ns/launch\n",mode,in/(400*256));
  uint64_t *hw; CUdeviceptr dw; CK(cuMemHostAlloc((void**)&hw,64,CU_MEMHOSTALLOC_PORTABLE|CU_MEMHOSTALLOC_DEVICEMAP)); CK(cuMemHostGetDevicePointer(&dw,hw,0)); *hw=0;
  for(int i=1;i<=5000;i++){double a=now(); cuLaunchKernel(fn,1,1,1,32,1,1,0,st,0,0); CK(cuStreamWriteValue64(st,dw,i,0)); while(__atomic_load_n(hw,__ATOMIC_ACQUIRE)<(uint64_t)i); lat[i-1]=now()-a;}
  qsort(lat,5000,sizeof(double),cmp); printf("C[%s] launch+writeValue64+spin median: %.0f ns\n",mode,lat[2500]);
  t0=now(); for(uint64_t i=5001;i<=5000+N;i++){cuLaunchKernel(fn,1,1,1,32,1,1,0,st,0,0); cuStreamWriteValue64(st,dw,i,0);} while(__atomic_load_n(hw,__ATOMIC_ACQUIRE)<5000+N); t1=now();
  printf("C[%s] launch+write64 pipelined: %.0f ns/value\n",mode,(t1-t0)/N);
  return 0;
}
