// The fp8 wire's kernels against the host arithmetic (core/fp8_block.hpp), byte for byte: the
// quantized wire image equals fp8_quantize_block's codes, zero padding and float scales block by
// block, the dequantized elements equal fp8_store of fp8_dequantize, and the accumulating form
// equals the fp32 sum rounded once (a NaN where the host has a NaN, whatever its payload); float,
// float16 and bfloat16 (a float source is also an fp32 partial sum), both encodings, both
// conversion paths (fast: NVIDIA's hardware conversions where the device has them; software:
// AMD's path, run here too), counts across block, padding and vector boundaries, aligned and
// misaligned operands (an image off 4-byte alignment reads and writes its scales byte by byte).
// Data: random values with a wide range in every block, subnormals, NaN and infinities; random
// finite values (blocks with no NaN code, the common case); blocks of one constant each, which
// must arrive bit for bit; and hand-made blocks of every case a fast path could get wrong (zeros
// of both signs, the target and just above it, quotients on and beside ties between codes,
// values rounding up into the next binade, fp8 and float subnormal results, the scale's floor,
// blocks of only NaN or infinities, blocks whose largest element is near T's largest, so that
// the stores take the saturating path). The list kernels the GPU executor launches: ends of
// several counts and alignments in one launch. Outputs are poisoned and every byte around them
// is compared.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "gpu_support.hpp"
#include "relay/exec/gpu/lowering.hpp"
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

// Random finite values, a binade per block within +-12 of a random centre: no NaN codes, so the
// kernels' common path throughout.
template <class T>
std::vector<T> finite_data(std::size_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  std::uniform_int_distribution<int> centre(-30, 30), spread(-12, 12);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  int c = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % fp8_block_elements == 0) c = centre(rng);
    const float s = (rng() & 1) ? -1.0f : 1.0f;
    v[i] = to_t<T>(s * std::ldexp(mant(rng), c + spread(rng)));
  }
  return v;
}

// The largest finite value of T, as a float.
template <class T>
float t_max() {
  if constexpr (std::is_same_v<T, float>)
    return std::numeric_limits<float>::max();
  else if constexpr (std::is_same_v<T, bfloat16>)
    return bfloat16::from_bits(0x7f7f).to_float();
  else
    return 65504.0f;
}

// Blocks of one constant each from element `first` on (random normal values of T from 2^-100 up,
// and the example's 101, 102, 203): every element must arrive as it left.
template <class T>
std::vector<T> constant_data(std::size_t n, std::mt19937_64& rng, std::size_t first) {
  std::vector<T> v(n);
  std::uniform_int_distribution<int> exponent(std::is_same_v<T, float16> ? -14 : -100,
                                              std::is_same_v<T, float16> ? 14 : 100);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  const float fixed[] = {101.0f, 102.0f, 203.0f};
  T c{};
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t b = i < first ? 0 : (i - first) / fp8_block_elements;
    if (i == 0 || (i >= first && (i - first) % fp8_block_elements == 0)) {
      const float random = ((rng() & 1) ? -1.0f : 1.0f) * std::ldexp(mant(rng), exponent(rng));
      c = to_t<T>(b < 3 ? fixed[b] : random);
    }
    v[i] = c;
  }
  return v;
}

// Hand-made blocks of 128 for format f, each a case where a conversion's shortcut could differ
// from the reference. Element 0 of most blocks sets the block's maximum (and so its scale, here
// mostly 1: a maximum of 2^e, the target), the rest probe the codes at that scale.
template <class T>
std::vector<T> edge_data(fp8_format f) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float target = f == fp8_format::e4m3 ? 256.0f : 128.0f;   // 2^e: scale 1
  const float step = f == fp8_format::e4m3 ? 0x1p-9f : 0x1p-10f;  // fp8's subnormal step
  const float ulp_top = f == fp8_format::e4m3 ? 16.0f : 8.0f;     // the step below the target
  // 3 as the maximum: the scale 3 / 2^e, not a power of two, and 1.0625 * the scale (exact: the
  // scale has 2 significant bits) a tie between codes 1 and 1.125 whose quotient the division
  // gives exactly; one float step either side of it is no tie.
  const float s3 = 3.0f / target, tie = 1.0625f * s3;
  std::vector<std::vector<float>> blocks = {
      // zeros of both signs only; then zeros beside a maximum
      {0.0f, -0.0f, 0.0f, -0.0f},
      {target, 0.0f, -0.0f, -target},
      // at scale 1: the largest code used, the codes below it, ties
      {target, -target, target - ulp_top / 2, target - ulp_top / 4, target - 3 * ulp_top / 4,
       target - ulp_top, 1.0625f, 1.1875f, -1.0625f, 1.0625001f, 1.0624999f, 15.5f, 15.75f, -31.0f},
      // rounding up into the next binade: 1.9375 (tie, odd: up to 2), 1.96875, 3.875, 7.9
      {target, 1.9375f, 1.96875f, 3.875f, -3.9375f, 7.9f, 0.99f, 0.96875f, 0.9375f},
      // fp8 subnormals at scale 1: steps, half steps (ties to even), around the smallest normal
      {target, step, -step, step / 2, 1.5f * step, 2.5f * step, -2.5f * step, 7.5f * step, 8 * step,
       7.75f * step, step / 2 * 1.0001f, step / 4, 3.4f * step, -0.49f * step},
      // a scale that is no power of two: quotients on a tie and a float step either side of it
      {3.0f, tie, std::nextafter(tie, 1.0f), std::nextafter(tie, 0.0f), -tie, 2.0f, 1.0f, 0.1f},
      // float subnormals beside a normal maximum (they scale to zero) and a block of only them
      // (the scale's floor, 2^-126)
      {target, 0x1p-140f, -0x1p-149f, 0x1.8p-127f},
      {0x1p-140f, -0x1p-149f, 0x1.8p-127f, 0x1p-135f, -0x1.fp-130f},
      // at the floor's edge: 2^(e - 126) itself and just below it
      {target * 0x1p-126f, 0x1.8p-130f, -0x1p-127f},
      {std::nextafter(target * 0x1p-126f, 0.0f), 0x1.8p-130f, -0x1p-127f},
      // just above the target: the scale just above 1, every quotient just below its element
      {std::nextafter(target, 1e9f), target, target - 1, -target + 3},
      // only NaN; only infinities; NaN and infinities (the scale 0 in all three)
      {nan, nan, -nan, nan},
      {inf, -inf, inf},
      {nan, inf, -inf, -nan},
      // NaN and infinities beside finite values: the scale from the finite ones only
      {inf, 3.0f, nan, -0.5f, -inf, 0.0f, -0.0f, 1e-3f},
      // huge and tiny maxima: the largest and smallest scales (above the plain store's scale)
      {t_max<T>(), -t_max<T>(), t_max<T>() * 0.75f, 1.0f, -0.0f},
      {t_max<T>() * 0.9990f, t_max<T>() * 0.997f, -t_max<T>() * 0.5f, 2.0f},
      {0x1.ep-119f, 0x1p-126f, 0x1.8p-120f, -0x1.fp-125f},
  };
  std::vector<T> v;
  for (auto& block : blocks) {
    block.resize(fp8_block_elements, 0.0f);
    for (std::size_t i = 5; i < block.size(); ++i)  // the rest: the block's probes again, halved
      if (block[i] == 0.0f && i % 2 == 1) block[i] = block[i % 5] * 0.5f;
    for (float x : block)
      v.push_back(to_t<T>(x));
  }
  return v;
}

// The wire image by the host: fp8_quantize_block per 128 elements, zero padding, float scales.
template <class T>
std::vector<unsigned char> host_wire(const std::vector<T>& x, std::size_t at, std::size_t n,
                                     fp8_format f) {
  std::vector<unsigned char> w(fp8_wire_bytes(n), 0);
  constexpr std::size_t B = fp8_block_elements;
  for (std::size_t first = 0; first < n; first += B) {
    const int m = static_cast<int>(std::min<std::size_t>(B, n - first));
    float block[B];
    for (int e = 0; e < m; ++e)
      block[e] = from_t(x[at + first + static_cast<std::size_t>(e)]);
    const float scale = fp8_quantize_block(f, block, m, w.data() + first);
    std::memcpy(w.data() + fp8_scales_at(n) + 4 * (first / B), &scale, 4);
  }
  return w;
}

template <class T>
void check_arrivals(fp8_format f, const std::vector<unsigned char>& want, std::size_t n,
                    const unsigned char* got, const T* acc);

// x[misalign ..] through the kernels: n elements. `exact`: they must also arrive as they left
// (blocks of one constant).
template <class T, gpu::fp8_conversion C>
void check_format(fp8_format f, const std::vector<T>& x, std::size_t misalign, bool exact = false) {
  const std::size_t n = x.size() - misalign;
  INFO("format " << (f == fp8_format::e4m3 ? "e4m3" : "e4m3_fnuz") << ", " << sizeof(T)
                 << "-byte elements, " << (C == gpu::fp8_conversion::fast ? "fast" : "software")
                 << " conversions, count " << n << ", misaligned by " << misalign << " elements");
  const std::size_t pad = 64;  // poisoned bytes before and after every output
  device_buffer src((n + misalign) * sizeof(T) + 16);
  RELAY_GPU_REQUIRE(gpu::rt::memcpy(src.data(), x.data(), x.size() * sizeof(T)));
  const T* in = reinterpret_cast<const T*>(src.data()) + misalign;

  // Quantize: the image, byte for byte, framed by untouched poison.
  const std::size_t wire_bytes = fp8_wire_bytes(n);
  device_buffer wire(wire_bytes + 2 * pad + misalign);
  std::vector<unsigned char> poisoned(wire.bytes(), poison);
  wire.upload(poisoned);
  unsigned char* w = wire.data() + pad + misalign;  // misaligned with the source's misalignment
  RELAY_GPU_REQUIRE((gpu::launch_fp8_quantize<T, C>(in, w, n, f, nullptr)));
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
    RELAY_GPU_REQUIRE(
        (gpu::launch_fp8_dequantize<T, C>(w, n, f, o, accumulate ? in : nullptr, nullptr)));
    RELAY_GPU_REQUIRE(gpu::rt::device_synchronize());
    const std::vector<unsigned char> back = out.download();
    for (std::size_t i = 0; i < back.size(); ++i) {
      const std::size_t lo = pad + misalign * sizeof(T), hi = lo + n * sizeof(T);
      if ((i < lo || i >= hi) && back[i] != poison) FAIL("byte " << i << " outside the output");
    }
    check_arrivals<T>(f, want, n, back.data() + pad + misalign * sizeof(T),
                      accumulate ? x.data() + misalign : nullptr);
    if (exact && !accumulate)
      for (std::size_t i = 0; i < n; ++i)
        if (std::memcmp(back.data() + pad + (misalign + i) * sizeof(T), &x[misalign + i],
                        sizeof(T)) != 0)
          FAIL("element " << i << " of a constant block: " << from_t(x[misalign + i])
                          << " did not arrive as it left");
  }
}

// The n elements arrived at `got` (bytes, as the device left them) against the host's
// arithmetic on the image `want` (acc: dequantize-accumulate onto it).
template <class T>
void check_arrivals(fp8_format f, const std::vector<unsigned char>& want, std::size_t n,
                    const unsigned char* got, const T* acc) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t code = want[i];
    float scale;
    std::memcpy(&scale, want.data() + fp8_scales_at(n) + 4 * (i / fp8_block_elements), 4);
    const float v = fp8_dequantize(f, code, scale);
    const T expected =
        acc != nullptr ? to_t<T>(from_t(acc[i]) + v) : fp8_store<T>(v, !fp8_is_nan(f, code));
    T actual;
    std::memcpy(&actual, got + i * sizeof(T), sizeof(T));
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

// The list kernels (what the GPU executor launches): several ends of different counts and
// alignments in one launch each, every image and every arrival against the host's, and the bytes
// between them untouched.
template <class T>
void check_lists(fp8_format f, std::mt19937_64& rng) {
  struct end {
    std::size_t count, src_at, wire_at;  // offsets in elements and bytes
  };
  // Counts across tiles (4096 floats, 8192 16-bit elements a tile) and none, of whole blocks and
  // not, padded and not; an element and a byte out of 16-byte alignment for some.
  const std::vector<end> ends = {{1000, 0, 0},           {0, 2000, 2000},
                                 {8193, 2000, 2000},     {33, 10500, 10801},
                                 {100000, 10600, 10900}, {4097, 110601, 114100}};
  const std::size_t elements = 110601 + 4097 + 8, wire_bytes = 114100 + fp8_wire_bytes(4097) + 16;
  INFO("format " << (f == fp8_format::e4m3 ? "e4m3" : "e4m3_fnuz") << ", " << sizeof(T)
                 << "-byte elements, list of " << ends.size());
  const std::vector<T> x = mixed_data<T>(elements, rng);
  device_buffer src(elements * sizeof(T)), wire(wire_bytes), out(elements * sizeof(T));
  RELAY_GPU_REQUIRE(gpu::rt::memcpy(src.data(), x.data(), elements * sizeof(T)));
  wire.upload(std::vector<unsigned char>(wire_bytes, poison));
  out.upload(std::vector<unsigned char>(elements * sizeof(T), poison));
  std::vector<gpu::lowered_fp8> quantizes, dequantizes;
  for (const end& e : ends) {
    const bool wide = std::is_same_v<T, float>;
    quantizes.push_back({reinterpret_cast<const T*>(src.data()) + e.src_at, wire.data() + e.wire_at,
                         e.count, wide});
    dequantizes.push_back(
        {wire.data() + e.wire_at, reinterpret_cast<T*>(out.data()) + e.src_at, e.count, wide});
  }
  for (bool quantize : {true, false}) {
    const std::vector<gpu::fp8_batch> lists =
        gpu::batch_fp8(quantize ? quantizes : dequantizes, sizeof(T));
    REQUIRE(lists.size() == 1);
    const gpu::fp8_batch& b = lists[0];
    std::vector<unsigned char> bytes(b.descs.size() * sizeof(gpu::fp8_desc));
    std::memcpy(bytes.data(), b.descs.data(), bytes.size());
    device_buffer descs(bytes.size());
    descs.upload(bytes);
    const auto* d = reinterpret_cast<const gpu::fp8_desc*>(descs.data());
    const auto n = static_cast<std::uint32_t>(b.descs.size());
    RELAY_GPU_REQUIRE(gpu::launch_fp8_list<T>(quantize, d, n, b.tiles, f, nullptr));
    RELAY_GPU_REQUIRE(gpu::rt::device_synchronize());
  }
  const std::vector<unsigned char> image = wire.download(), back = out.download();
  std::vector<bool> image_byte(wire_bytes, false), out_byte(elements * sizeof(T), false);
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const end& e = ends[i];
    INFO("end " << i << ": " << e.count << " elements");
    const std::vector<unsigned char> want = host_wire(x, e.src_at, e.count, f);
    for (std::size_t j = 0; j < want.size(); ++j) {
      image_byte[e.wire_at + j] = true;
      if (image[e.wire_at + j] != want[j])
        FAIL("wire byte " << j << ": " << int(image[e.wire_at + j]) << ", want " << int(want[j]));
    }
    check_arrivals<T>(f, want, e.count, back.data() + e.src_at * sizeof(T), nullptr);
    for (std::size_t j = 0; j < e.count * sizeof(T); ++j)
      out_byte[e.src_at * sizeof(T) + j] = true;
  }
  for (std::size_t j = 0; j < wire_bytes; ++j)
    if (!image_byte[j] && image[j] != poison) FAIL("wire byte " << j << " outside every image");
  for (std::size_t j = 0; j < out_byte.size(); ++j)
    if (!out_byte[j] && back[j] != poison) FAIL("output byte " << j << " outside every end");
}

template <class T, gpu::fp8_conversion C>
void check_all(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  INFO("seed " << seed);
  for (fp8_format f : {fp8_format::e4m3, fp8_format::e4m3_fnuz}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{31},
                          std::size_t{127}, std::size_t{128}, std::size_t{129}, std::size_t{1000},
                          std::size_t{4097}, std::size_t{(1u << 20) + 7}})
      for (std::size_t misalign : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
        check_format<T, C>(f, mixed_data<T>(n + misalign, rng), misalign);
        if (n >= 1000) check_format<T, C>(f, finite_data<T>(n + misalign, rng), misalign);
        if (n >= 127)
          check_format<T, C>(f, constant_data<T>(n + misalign, rng, misalign), misalign, true);
      }
    // The hand-made blocks, aligned and not, and shifted by a lane's elements (so that each
    // probe meets every lane of its group).
    const std::vector<T> edge = edge_data<T>(f);
    for (std::size_t shift :
         {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{16}, std::size_t{100}}) {
      std::vector<T> x(edge.size()), y(edge.size() + 1, to_t<T>(1.0f));
      for (std::size_t i = 0; i < edge.size(); ++i)
        x[i] = y[i + 1] = edge[(i + shift) % edge.size()];
      check_format<T, C>(f, x, 0);
      check_format<T, C>(f, y, 1);
    }
    if constexpr (C == gpu::fp8_conversion::fast) check_lists<T>(f, rng);
  }
}

template <class T>
void check_both(std::uint64_t seed) {
  check_all<T, gpu::fp8_conversion::fast>(seed);
  check_all<T, gpu::fp8_conversion::software>(seed);
}

}  // namespace

TEST_CASE("fp8 quantize and dequantize kernels give the host's bytes: float", "[gpu][fp8]") {
  check_both<float>(relay::test::env_or("RELAY_TEST_SEED", 20261204));
}

TEST_CASE("fp8 quantize and dequantize kernels give the host's bytes: bfloat16", "[gpu][fp8]") {
  check_both<bfloat16>(relay::test::env_or("RELAY_TEST_SEED", 20261205));
}

TEST_CASE("fp8 quantize and dequantize kernels give the host's bytes: float16", "[gpu][fp8]") {
  check_both<float16>(relay::test::env_or("RELAY_TEST_SEED", 20261206));
}
