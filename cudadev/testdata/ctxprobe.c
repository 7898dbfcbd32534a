// ctxprobe: which stream-bound libcuda calls run with no current context,
// or with another context current, and what a launch costs in each case.
//   gcc -O2 -o /tmp/ctxprobe ctxprobe.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
//   /tmp/ctxprobe kernels.sm_90.cubin
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
#define CK(x) do{CUresult r=(x); if(r){const char*s;cuGetErrorName(r,&s);printf("%s: %s\n",#x,s);exit(1);}}while(0)
static const char*nm(CUresult r){const char*s="?";cuGetErrorName(r,&s);return s;}
CUstream st; CUfunction fn; CUevent ev; CUdeviceptr a,b,wd; volatile unsigned long long *w; CUgraphExec ge;
static void probe(const char*tag){
  printf("[%s] launch: %s\n",tag,nm(cuLaunchKernel(fn,1,1,1,32,1,1,0,st,0,0)));
  printf("[%s] writeValue64: %s\n",tag,nm(cuStreamWriteValue64(st,wd,7,0)));
  printf("[%s] waitValue64: %s\n",tag,nm(cuStreamWaitValue64(st,wd,7,CU_STREAM_WAIT_VALUE_GEQ)));
  CUstreamBatchMemOpParams p[2]={0};
  p[0].waitValue.operation=CU_STREAM_MEM_OP_WAIT_VALUE_64; p[0].waitValue.address=wd; p[0].waitValue.value64=7; p[0].waitValue.flags=CU_STREAM_WAIT_VALUE_GEQ;
  p[1].writeValue.operation=CU_STREAM_MEM_OP_WRITE_VALUE_64; p[1].writeValue.address=wd; p[1].writeValue.value64=8;
  printf("[%s] batchMemOp: %s\n",tag,nm(cuStreamBatchMemOp(st,2,p,0)));
  printf("[%s] eventRecord: %s\n",tag,nm(cuEventRecord(ev,st)));
  printf("[%s] streamWaitEvent: %s\n",tag,nm(cuStreamWaitEvent(st,ev,0)));
  printf("[%s] memcpyAsync: %s\n",tag,nm(cuMemcpyAsync(b,a,1<<20,st)));
  printf("[%s] memsetD8Async: %s\n",tag,nm(cuMemsetD8Async(a,1,1<<20,st)));
  printf("[%s] memsetD32Async: %s\n",tag,nm(cuMemsetD32Async(a,1,1<<18,st)));
  printf("[%s] graphLaunch: %s\n",tag,nm(cuGraphLaunch(ge,st)));
  printf("[%s] streamQuery: %s\n",tag,nm(cuStreamQuery(st)));
  printf("[%s] eventQuery: %s\n",tag,nm(cuEventQuery(ev)));
  printf("[%s] streamSynchronize: %s word=%llu\n",tag,nm(cuStreamSynchronize(st)),*w);
  double in=0; for(int k=0;k<200;k++){double t=now(); for(int i=0;i<256;i++) cuLaunchKernel(fn,1,1,1,32,1,1,0,st,0,0); in+=now()-t; cuStreamSynchronize(st);}
  printf("[%s] launch in batches of 256: %.0f ns\n",tag,in/(200*256));
  in=0; for(int k=0;k<200;k++){double t=now(); for(int i=0;i<256;i++) cuStreamWriteValue64(st,wd,i,0); in+=now()-t; cuStreamSynchronize(st);}
  printf("[%s] writeValue64 in batches of 256: %.0f ns\n",tag,in/(200*256));
}
int main(int argc,char**argv){
  CUdevice dev; CUcontext ctx,other,c; CUmodule mod;
  CK(cuInit(0)); CK(cuDeviceGet(&dev,0));
  CK(cuDevicePrimaryCtxSetFlags(dev,CU_CTX_SCHED_BLOCKING_SYNC));
  CK(cuDevicePrimaryCtxRetain(&ctx,dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&st,CU_STREAM_NON_BLOCKING)); CK(cuModuleLoad(&mod,argv[1])); CK(cuModuleGetFunction(&fn,mod,"empty"));
  CK(cuEventCreate(&ev,CU_EVENT_DISABLE_TIMING)); CK(cuMemAlloc(&a,1<<20)); CK(cuMemAlloc(&b,1<<20));
  CK(cuMemHostAlloc((void**)&w,4096,CU_MEMHOSTALLOC_PORTABLE|CU_MEMHOSTALLOC_DEVICEMAP)); CK(cuMemHostGetDevicePointer(&wd,(void*)w,0));
  CUgraph g; CK(cuGraphCreate(&g,0)); CUDA_KERNEL_NODE_PARAMS kp={0}; kp.func=fn; kp.gridDimX=kp.gridDimY=kp.gridDimZ=1; kp.blockDimX=32; kp.blockDimY=kp.blockDimZ=1;
  CUgraphNode nd; CK(cuGraphAddKernelNode(&nd,g,0,0,&kp)); CK(cuGraphInstantiate(&ge,g,0));
  probe("current");
  CK(cuCtxSetCurrent(NULL)); probe("none");
  CK(cuCtxGetCurrent(&c)); printf("after none: current=%p\n",(void*)c);
  
#if CUDA_VERSION >= 13000
  CK(cuCtxCreate(&other,NULL,0,dev));
#else
  CK(cuCtxCreate(&other,0,dev));
#endif
  CK(cuCtxGetCurrent(&c)); printf("other=%p current=%p primary=%p\n",(void*)other,(void*)c,(void*)ctx);
  probe("other");
  CK(cuCtxGetCurrent(&c)); printf("after other: current=%p\n",(void*)c);
  return 0;
}
