// The fp8 wire's kernels against the host arithmetic (core/fp8_block.hpp), byte for byte: the
// quantized wire image equals fp8_quantize_block's codes and scales block by block, the
// dequantized elements equal fp8_store of fp8_dequantize, and the accumulating form equals the
// fp32 sum rounded once (a NaN where the host has a NaN, whatever its payload); float, float16 and
// bfloat16 (a float source is also an fp32 partial sum), both encodings, counts across block and
// vector boundaries, aligned and misaligned operands, data with a wide range in every block,
// subnormals, NaN and infinities. Outputs are poisoned and every byte around them is compared.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "gpu_support.hpp"
#include "relay/gpu/fp8_kernels.hpp"

using namespace relay;
using relay::test::device_buffer;
using relay::test::poison;

namespace {

template <class T>
T to_t(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return T::from_float(v);
}
template <class T>
float from_t(T x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else
    return x.to_float();
}

// Values of every kind: wide exponents, subnormals of float and of fp8's scales, NaN, +-Inf,
// zeros of both signs.
template <class T>
std::vector<T> mixed_data(std::size_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  std::uniform_int_distribution<int> kind(0, 99), exponent(-40, 40);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (std::size_t i = 0; i < n; ++i) {
    const int k = kind(rng);
    const float s = (rng() & 1) ? -1.0f : 1.0f;
    float x = s * std::ldexp(mant(rng), exponent(rng));
    if (k < 2) x = std::numeric_limits<float>::quiet_NaN();
    if (k >= 2 && k < 4) x = s * std::numeric_limits<float>::infinity();
    if (k >= 4 && k < 6) x = s * 0.0f;
    if (k >= 6 && k < 10) x = s * std::ldexp(mant(rng), -140);  // float and bf16 subnormals
    v[i] = to_t<T>(x);
  }
  return v;
}

// The wire image by the host: fp8_quantize_block per 32 elements.
template <class T>
std::vector<unsigned char> host_wire(const std::vector<T>& x, std::size_t at, std::size_t n,
                                     fp8_format f) {
  std::vector<unsigned char> w(fp8_wire_bytes(n));
  for (std::size_t first = 0; first < n; first += 32) {
    const int m = static_cast<int>(std::min<std::size_t>(32, n - first));
    float block[32];
    for (int e = 0; e < m; ++e)
      block[e] = from_t(x[at + first + static_cast<std::size_t>(e)]);
    const std::int8_t k = fp8_quantize_block(f, block, m, w.data() + first);
    w[n + first / 32] = static_cast<unsigned char>(k);
  }
  return w;
}

template <class T>
void check_format(fp8_format f, std::size_t n, std::size_t misalign, std::mt19937_64& rng) {
  INFO("format " << (f == fp8_format::e4m3 ? "e4m3" : "e4m3_fnuz") << ", " << sizeof(T)
                 << "-byte elements, count " << n << ", misaligned by " << misalign << " elements");
  const std::size_t pad = 64;  // poisoned bytes before and after every output
  const std::vector<T> x = mixed_data<T>(n + misalign, rng);
  device_buffer src((n + misalign) * sizeof(T) + 16);
  RELAY_GPU_REQUIRE(gpu::rt::memcpy(src.data(), x.data(), x.size() * sizeof(T)));
  const T* in = reinterpret_cast<const T*>(src.data()) + misalign;

  // Quantize: the image, byte for byte, framed by untouched poison.
  const std::size_t wire_bytes = fp8_wire_bytes(n);
  device_buffer wire(wire_bytes + 2 * pad + misalign);
  std::vector<unsigned char> poisoned(wire.bytes(), poison);
  wire.upload(poisoned);
  unsigned char* w = wire.data() + pad + misalign;  // misaligned with the source's misalignment
  RELAY_GPU_REQUIRE(gpu::launch_fp8_quantize(in, w, n, f, nullptr));
  RELAY_GPU_REQUIRE(gpu::rt::device_synchronize());
  const std::vector<unsigned char> got = wire.download();
  const std::vector<unsigned char> want = host_wire(x, misalign, n, f);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool inside = i >= pad + misalign && i < pad + misalign + wire_bytes;
    const unsigned char expected = inside ? want[i - pad - misalign] : poison;
    if (got[i] != expected)
      FAIL("wire byte " << static_cast<long long>(i) - static_cast<long long>(pad + misalign)
                        << ": " << int(got[i]) << ", want " << int(expected));
  }

  // Dequantize, and dequantize-accumulate onto the source, against the host's arithmetic.
  for (bool accumulate : {false, true}) {
    INFO((accumulate ? "dequantize-accumulate" : "dequantize"));
    device_buffer out((n + misalign) * sizeof(T) + 2 * pad);
    out.upload(std::vector<unsigned char>(out.bytes(), poison));
    T* o = reinterpret_cast<T*>(out.data() + pad) + misalign;
    RELAY_GPU_REQUIRE(gpu::launch_fp8_dequantize(w, n, f, o, accumulate ? in : nullptr, nullptr));
    RELAY_GPU_REQUIRE(gpu::rt::device_synchronize());
    const std::vector<unsigned char> back = out.download();
    for (std::size_t i = 0; i < back.size(); ++i) {
      const std::size_t lo = pad + misalign * sizeof(T), hi = lo + n * sizeof(T);
      if ((i < lo || i >= hi) && back[i] != poison) FAIL("byte " << i << " outside the output");
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint8_t code = want[i];
      const int k = static_cast<std::int8_t>(want[n + i / 32]);
      const float v = fp8_dequantize(f, code, k);
      T expected{};
      if (accumulate)
        expected = to_t<T>(from_t(x[misalign + i]) + v);
      else
        expected = fp8_store<T>(v, !fp8_is_nan(f, code));
      T actual;
      std::memcpy(&actual, back.data() + pad + (misalign + i) * sizeof(T), sizeof(T));
      // A NaN is a NaN: its payload is the hardware's (NVIDIA's arithmetic returns 0x7fffffff).
      if (std::isnan(from_t(expected))) {
        if (!std::isnan(from_t(actual)))
          FAIL("element " << i << ": " << from_t(actual) << ", want NaN");
        continue;
      }
      if (std::memcmp(&actual, &expected, sizeof(T)) != 0)
        FAIL("element " << i << ": " << from_t(actual) << ", want " << from_t(expected));
    }
  }
}

template <class T>
void check_all(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  INFO("seed " << seed);
  for (fp8_format f : {fp8_format::e4m3, fp8_format::e4m3_fnuz})
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{31}, std::size_t{32},
          std::size_t{33}, std::size_t{1000}, std::size_t{(1u << 20) + 7}})
      for (std::size_t misalign : {std::size_t{0}, std::size_t{1}, std::size_t{3}})
        check_format<T>(f, n, misalign, rng);
}

}  // namespace

TEST_CASE("fp8 quantize and dequantize kernels give the host's bytes: float", "[gpu][fp8]") {
  check_all<float>(relay::test::env_or("RELAY_TEST_SEED", 20261204));
}

TEST_CASE("fp8 quantize and dequantize kernels give the host's bytes: bfloat16", "[gpu][fp8]") {
  check_all<bfloat16>(relay::test::env_or("RELAY_TEST_SEED", 20261205));
}

TEST_CASE("fp8 quantize and dequantize kernels give the host's bytes: float16", "[gpu][fp8]") {
  check_all<float16>(relay::test::env_or("RELAY_TEST_SEED", 20261206));
}
