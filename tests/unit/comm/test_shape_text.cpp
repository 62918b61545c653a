// What a communicator shows its peers when a call's verdict is a mismatch: its placement and the
// call's shape as text, which the mismatch message quotes; the text's hash is the fingerprint the
// transport compares on every call. The texts below are written out by hand from the calls'
// arguments.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "relay/bootstrap/callback_bootstrap.hpp"
#include "relay/comm/collectives.hpp"

using namespace relay;

namespace {

// Records each call's fingerprint and judges every call a mismatch (on the host), so that the
// communicator shows its text.
class fingerprint_transport final : public transport {
 public:
  explicit fingerprint_transport(std::vector<std::uint64_t>& out) : out_(out) {}
  std::string_view name() const override { return "fingerprints"; }
  bool broken() const override { return false; }
  void abort(const status&) override {}
  status run(const call_context& c) override {
    out_.push_back(c.fingerprint);
    return {errc::mismatch, "fingerprints differ"};
  }

 private:
  std::vector<std::uint64_t>& out_;
};

// FNV-1a, written out here: the fingerprint of a shape is its text's.
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

// Rank 1 of 4; every other rank shows what this one does.
struct text_fixture {
  std::vector<std::string> shown;
  std::vector<std::uint64_t> fingerprints;
  communicator comm;
  text_fixture()
      : comm(std::make_shared<callback_bootstrap>(
                 1, 4,
                 [this](std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                        std::chrono::milliseconds) {
                   shown.emplace_back(reinterpret_cast<const char*>(mine.data()), mine.size());
                   all.assign(4, std::vector<std::byte>(mine.begin(), mine.end()));
                   return status{};
                 }),
             std::make_unique<fingerprint_transport>(fingerprints),
             comm_config{0, std::chrono::milliseconds(100), 8}) {}
};

}  // namespace

TEST_CASE("a call shows its shape as text, the fingerprint is the text's", "[comm]") {
  text_fixture f;
  alignas(16) std::byte memory[4096];
  const buffer_view in{memory, 1024}, out{memory + 2048, 1024};

  // Every rank shows the same text here, so the verdict's own message stands.
  CHECK(relay::allreduce(f.comm, {{0, 1}, {2, 3}}, in, out, std::vector<std::int64_t>{8, 8},
                         dtype::int32, reduce_op::sum)
            .message() == "fingerprints differ");
  // The route as taken, the options' numbers as numbers (precision 0: fp32 partials; wire
  // 0:-1, native with the model's threshold).
  const std::string first =
      "allreduce fused relay permille=0 tiles=0 N=4 int32 sum alignment=128 precision=0 "
      "wire=0:-1 groups=0,1|2,3 counts=8,8";
  REQUIRE(f.shown.size() == 1);
  CHECK(f.shown[0] == first);
  REQUIRE(f.fingerprints.size() == 1);
  CHECK(f.fingerprints[0] == fnv1a(first));

  // route::automatic shows the route it took (direct at 100 elements on mi300x); a reduce-scatter
  // of one group is single; rank 1 helps there.
  options opt;
  opt.route = route::automatic;
  opt.precision = precision::native_partials;
  opt.wire = wire_format::fp8;
  opt.wire_threshold = 0;
  opt.alignment = 64;
  CHECK(relay::reduce_scatter(f.comm, {{3, 0}}, {}, {}, std::vector<std::int64_t>{100},
                              dtype::bfloat16, reduce_op::avg, opt)
            .code() == errc::mismatch);
  REQUIRE(f.shown.size() == 2);
  CHECK(f.shown[1] ==
        "reduce-scatter single direct permille=0 tiles=0 N=4 bfloat16 avg alignment=64 "
        "precision=1 wire=1:0 groups=3,0 counts=100");
  // Where a wire was asked, the fingerprint also says the wire taken (the machine's encoding:
  // e4m3_fnuz on mi300x), which the text does not.
  REQUIRE(f.fingerprints.size() == 2);
  CHECK(f.fingerprints[1] == fnv1a(f.shown[1] + " taken=fp8_e4m3_fnuz"));

  // A collective that does not reduce shows sum, whatever operator was passed.
  CHECK(relay::run_collective(f.comm, collective::all_gather, {{1, 2}, {3, 0}}, in, out,
                              std::vector<std::int64_t>{4, 4}, dtype::float32, reduce_op::avg)
            .code() == errc::mismatch);
  REQUIRE(f.shown.size() == 3);
  CHECK(f.shown[2] ==
        "all-gather fused relay permille=0 tiles=0 N=4 float32 sum alignment=128 precision=0 "
        "wire=0:-1 groups=1,2|3,0 counts=4,4");

  // A repeated call (its shape cached) passes the same fingerprint and shows the same text.
  CHECK(relay::allreduce(f.comm, {{0, 1}, {2, 3}}, in, out, std::vector<std::int64_t>{8, 8},
                         dtype::int32, reduce_op::sum)
            .code() == errc::mismatch);
  REQUIRE(f.shown.size() == 4);
  CHECK(f.shown[3] == first);
  REQUIRE(f.fingerprints.size() == 4);
  CHECK(f.fingerprints[3] == fnv1a(first));
  CHECK(f.comm.cached_shapes() == 3);
}
