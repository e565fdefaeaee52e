// Two kinds of tenant for the GPU check's two-process run (scripts/device-check.sh, step
// "colocation"), each an ordinary CUDA runtime program that the interposer and tesserad manage:
//
//   colocation_app decode MS   a decode-like serving loop: one CUDA graph per step (32
//                              memory-bound kernels over 64 MiB, as a decode step streams weights),
//                              replayed back to back for MS ms; each step timed with events
//   colocation_app gemm MS     a best-effort compute loop: an FMA-bound kernel over every SM,
//                              launched back to back for MS ms
//
// Each prints one JSON line: the mode, the steps or kernels done, their rate, and for decode the
// step time's median and P99 in ms. Needs a GPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_check.h"

// One pass over a slice of the buffer: read, scale, write (bandwidth-bound, like a decode step's
// weight streaming).
__global__ void stream_pass(const float4* in, float4* out, size_t n, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float4 v = in[i];
    v.x *= scale;
    v.y *= scale;
    v.z *= scale;
    v.w *= scale;
    out[i] = v;
  }
}

// Compute-bound: a long chain of FMAs per thread, written once so it is not optimised away.
__global__ void fma_loop(float* out, int iterations) {
  float a = threadIdx.x * 1e-3f;
  float b = 1.0001f;
  for (int i = 0; i < iterations; ++i) a = fmaf(a, b, 1e-7f);
  if (a == -1.0f) out[blockIdx.x] = a;  // never true; keeps the loop
}

double percentile(std::vector<float> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(rank, v.size() - 1)];
}

int decode(int ms) {
  constexpr size_t kBytes = size_t{64} << 20;
  constexpr size_t kN = kBytes / sizeof(float4);
  constexpr int kKernels = 32;
  float4* a = nullptr;
  float4* b = nullptr;
  CHECK(cudaMalloc(&a, kBytes));
  CHECK(cudaMalloc(&b, kBytes));
  CHECK(cudaMemset(a, 0, kBytes));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < kKernels; ++k) {
    const size_t slice = kN / kKernels;
    stream_pass<<<sms * 4, 256, 0, s>>>(a + k * slice, b + k * slice, slice, 1.0f);
  }
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  std::vector<float> steps;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    CHECK(cudaEventRecord(start, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaEventRecord(end, s));
    CHECK(cudaEventSynchronize(end));
    float step = 0;
    CHECK(cudaEventElapsedTime(&step, start, end));
    steps.push_back(step);
  }
  std::printf(
      "{\"mode\": \"decode\", \"steps\": %zu, \"steps_per_s\": %.1f, \"p50_ms\": %.4f, "
      "\"p99_ms\": %.4f}\n",
      steps.size(), steps.size() * 1000.0 / ms, percentile(steps, 0.5), percentile(steps, 0.99));
  return 0;
}

int gemm(int ms) {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(float) * sms * 8));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  long kernels = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 8; ++i) fma_loop<<<sms * 8, 256, 0, s>>>(out, 1 << 14);
    CHECK(cudaStreamSynchronize(s));
    kernels += 8;
  }
  std::printf("{\"mode\": \"gemm\", \"kernels\": %ld, \"kernels_per_s\": %.1f}\n", kernels,
              kernels * 1000.0 / ms);
  return 0;
}

int main(int argc, char** argv) {
  const int ms = argc == 3 ? std::atoi(argv[2]) : 0;
  if (argc == 3 && ms > 0 && std::strcmp(argv[1], "decode") == 0) return decode(ms);
  if (argc == 3 && ms > 0 && std::strcmp(argv[1], "gemm") == 0) return gemm(ms);
  std::fprintf(stderr, "usage: %s decode|gemm MILLISECONDS\n", argv[0]);
  return 2;
}
