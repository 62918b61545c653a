// The one portability macro the core needs: functions the GPU kernels share with the host.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define RELAY_HOST_DEVICE __host__ __device__
#else
#define RELAY_HOST_DEVICE
#endif
