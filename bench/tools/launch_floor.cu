// The host's floor for issuing one kernel on this machine: cudaLaunchKernel of an empty kernel
// with a small and a large argument block (the ipc transport's one-shot launch passes about 200
// bytes), back to back in batches of 100 (the stream drained between batches, untimed), as
// tests/gpu/ipc hostpath times relay's calls. Context for relay's host issue time, not a test.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 bench/tools/launch_floor.cu -o launch_floor && ./launch_floor
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

struct small_args {
  unsigned long long a[2];
};
struct large_args {
  unsigned long long a[28];  // 224 bytes
};
__global__ void empty_small(small_args) {}
__global__ void empty_large(large_args) {}

template <class Launch>
void time_launches(const char* what, cudaStream_t stream, Launch launch) {
  const int calls = 1000, batch = 100;
  std::vector<double> each(calls);
  double total = 0;
  for (int first = 0; first < calls; first += batch) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = first; i < first + batch; ++i) {
      const auto t = std::chrono::steady_clock::now();
      launch();
      each[i] =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
    }
    total +=
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (cudaStreamSynchronize(stream) != cudaSuccess) std::printf("synchronize failed\n");
  }
  std::sort(each.begin(), each.end());
  std::printf("%s: %.2f us a launch (mean of %d, batches of %d), median %.2f us\n", what,
              total / calls, calls, batch, each[calls / 2]);
}

int main() {
  cudaStream_t stream;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return 1;
  for (int round = 0; round < 2; ++round) {  // the first round warms the driver up
    time_launches("empty kernel, 16-byte arguments", stream,
                  [&] { empty_small<<<1, 32, 0, stream>>>(small_args{}); });
    time_launches("empty kernel, 224-byte arguments", stream,
                  [&] { empty_large<<<1, 32, 0, stream>>>(large_args{}); });
    time_launches("empty kernel, 224-byte arguments, 132 blocks of 256", stream,
                  [&] { empty_large<<<132, 256, 0, stream>>>(large_args{}); });
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) std::printf("error: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
