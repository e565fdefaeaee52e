// A plain CUDA runtime program (cudart static): what the interposer is for. It launches with
// <<<>>> on a stream and on the per-thread default stream, with cudaLaunchKernelEx, cooperatively,
// inside a stream capture and as a graph, then checks every result on the host. It needs a GPU:
// cudart cannot initialise against the fake libcuda (docs/cuda.md, "The interposer").
#include <cooperative_groups.h>

#include <cstdio>

#include "cuda_check.h"

namespace cg = cooperative_groups;

__global__ void add(int* x, int n, int v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}

// Every block adds its part, then (after a grid-wide barrier) block 0 checks the whole array.
__global__ void add_then_check(int* x, int n, int v, int expect, int* bad) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
  cg::this_grid().sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    for (int j = 0; j < n; ++j) {
      if (x[j] != expect) ++*bad;
    }
  }
}

int main() {
  constexpr int n = 1 << 16;
  constexpr int threads = 256;
  constexpr int blocks = n / threads;
  int* x = nullptr;
  int* bad = nullptr;
  CHECK(cudaMalloc(&x, n * sizeof(int)));
  CHECK(cudaMallocManaged(&bad, sizeof(int)));
  *bad = 0;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaMemsetAsync(x, 0, n * sizeof(int), s));
  add<<<blocks, threads, 0, s>>>(x, n, 1);  // 1
  CHECK(cudaStreamSynchronize(s));
  add<<<blocks, threads, 0, cudaStreamPerThread>>>(x, n, 2);  // 3
  CHECK(cudaStreamSynchronize(cudaStreamPerThread));
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.stream = s;
  CHECK(cudaLaunchKernelEx(&config, add, x, n, 4));  // 7
  // Cooperative: a grid small enough to be co-resident on a 16-SM partition.
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, add_then_check, threads, 0));
  int coop_blocks = per_sm * 16 < blocks ? per_sm * 16 : blocks;
  int coop_n = coop_blocks * threads;
  int v = 8, expect = 15;
  void* args[] = {&x, &coop_n, &v, &expect, &bad};
  CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(add_then_check), coop_blocks, threads,
                                    args, 0, s));
  // The rest of the array was not touched by the cooperative kernel: add 8 there too.
  add<<<blocks, threads, 0, s>>>(x + coop_n, n - coop_n, 8);  // 15
  // A graph captured from the stream, launched twice.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  add<<<blocks, threads, 0, s>>>(x, n, 16);
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, s));  // 31
  CHECK(cudaGraphLaunch(exec, s));  // 47
  static int host[n];
  CHECK(cudaMemcpyAsync(host, x, n * sizeof(int), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += host[i] != 47;
  if (wrong != 0 || *bad != 0) {
    std::fprintf(stderr, "%d elements wrong, cooperative check saw %d\n", wrong, *bad);
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
