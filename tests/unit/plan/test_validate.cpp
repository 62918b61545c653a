// validate_plan: every way a hand-made plan can be wrong is refused with a status that names it,
// and an executor given such a plan writes nothing.
#include "relay/plan/validate.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "relay/exec/host_executor.hpp"
#include "support/plan_builder.hpp"

using namespace relay;

namespace {

// Two ranks swap 1000 floats through scratch, then each sums its input and the scratch.
test::plan_builder good_plan() {
  test::plan_builder b(2, dtype::float32);
  b.sizes(0, 4000, 4000, 4000);
  b.sizes(1, 4000, 4000, 4000);
  b.copy({0, buffer::input, 0}, {1, buffer::scratch, 0}, 1000);
  b.copy({1, buffer::input, 0}, {0, buffer::scratch, 0}, 1000);
  b.reduce({{0, buffer::input, 0}, {0, buffer::scratch, 0}}, {0, buffer::output, 0}, 1000, true);
  b.reduce({{1, buffer::input, 0}, {1, buffer::scratch, 0}}, {1, buffer::output, 0}, 1000, true);
  return b;
}

void refused(const plan& p, errc code, const std::string& words) {
  const status s = validate_plan(p);
  INFO(s.to_string());
  CHECK(s.code() == code);
  CHECK(s.message().find(words) != std::string::npos);
}

}  // namespace

TEST_CASE("validate_plan accepts a well-formed plan", "[plan][validate]") {
  CHECK(validate_plan(good_plan().get()).ok());
}

TEST_CASE("validate_plan refuses malformed plans, naming the problem", "[plan][validate]") {
  const test::plan_builder b = good_plan();
  {
    plan p = b.get();
    p.spec.ranks = 0;
    refused(p, errc::invalid_schedule, "the plan has 0 ranks");
  }
  {
    plan p = b.get();
    p.scratch_bytes.pop_back();
    refused(p, errc::invalid_schedule, "one entry per rank");
  }
  {
    plan p = b.get();
    p.divisor = 0;
    refused(p, errc::invalid_schedule, "divisor");
  }
  {
    plan p = b.get();
    p.type = static_cast<dtype>(200);
    refused(p, errc::unsupported, "dtype");
  }
  {
    plan p = b.get();
    p.groups = {{0, 1}};
    refused(p, errc::invalid_schedule, "1 groups but 0 counts");
    p.counts = {1000};
    p.groups = {{0, 2}};
    refused(p, errc::invalid_schedule, "group 0 names rank 2");
  }
  {
    plan p = b.get();
    p.phases[1].size = 3;  // ops 2..4 of 4
    refused(p, errc::invalid_schedule, "plan phase 1 names missing ops");
  }
  {
    plan p = b.get();
    p.phases[0].size = 3;  // a reduction inside the transfer phase
    refused(p, errc::invalid_schedule, "plan phase 0 holds an op of another step or phase");
  }
  {
    plan p = b.get();
    p.ops[1].dst.offset = 3000;  // 3000 + 4000 bytes > 4000
    refused(p, errc::invalid_schedule, "plan op 1: bytes from 3000");
    refused(p, errc::invalid_schedule, "outside the scratch of rank 0 (4000 bytes)");
  }
  {
    plan p = b.get();
    p.ops[0].dst.offset = 2;  // inside an element
    refused(p, errc::invalid_schedule, "offset 2 in the scratch of rank 1 is not on a 4-byte");
  }
  {
    plan p = b.get();
    p.ops[0].dst.rank = 7;
    refused(p, errc::invalid_schedule, "plan op 0: rank 7 out of range");
  }
  {
    plan p = b.get();
    p.ops[0].source_count = 2;  // a copy has one source
    refused(p, errc::invalid_schedule, "plan op 0 has a bad source list");
    p = b.get();
    p.ops[3].first_source = 5;  // sources 5, 6 of 6
    refused(p, errc::invalid_schedule, "plan op 3 has a bad source list");
  }
  {
    plan p = b.get();
    p.sources[p.ops[2].first_source + 1].rank = 1;  // rank 0 reduces rank 1's scratch
    refused(p, errc::invalid_schedule, "plan op 2: a reduction reads another rank's memory");
  }
  {
    // float64 with 4-byte partials: harmless while no op uses partials (a hand-built plan keeps
    // the default partial_size), refused once one does.
    test::plan_builder w(2, dtype::float64);
    w.sizes(0, 8000, 8000, 8000);
    w.sizes(1, 8000, 8000, 8000);
    w.copy({0, buffer::input, 0}, {1, buffer::scratch, 0}, 1000);
    plan p = w.get();
    REQUIRE(p.partial_size == 4);
    CHECK(validate_plan(p).ok());
    p.ops[0].partial_mask = partial_dst_bit;
    refused(p, errc::invalid_schedule, "plan op 0: its partial sums are narrower");
  }
}

TEST_CASE("validate_plan with buffers adds the buffer checks", "[plan][validate]") {
  const test::plan_builder b = good_plan();
  std::vector<float> a(1000, 1.5f), c(1000, 2.5f), x(1000, -1.0f), y(1000, -1.0f);
  std::vector<buffer_view> in = {{a.data(), 4000}, {c.data(), 4000}};
  std::vector<buffer_view> out = {{x.data(), 4000}, {y.data(), 4000}};
  CHECK(validate_plan(b.get(), in, out).ok());
  out[1] = {nullptr, 4000};
  const status s = validate_plan(b.get(), in, out);
  CHECK(s.code() == errc::invalid_buffer);
  CHECK(s.message().find("the output of rank 1 is null") != std::string::npos);
}

TEST_CASE("the host executor refuses a malformed plan and writes nothing", "[plan][validate]") {
  plan p = good_plan().get();
  p.ops[1].dst.offset = 3000;
  std::vector<float> a(1000, 1.5f), c(1000, 2.5f), x(1000, -7.0f), y(1000, -7.0f);
  std::vector<buffer_view> in = {{a.data(), 4000}, {c.data(), 4000}};
  std::vector<buffer_view> out = {{x.data(), 4000}, {y.data(), 4000}};
  host_executor cpu;
  const status s = cpu.run(p, in, out);
  CHECK(s.code() == errc::invalid_schedule);
  CHECK(x == std::vector<float>(1000, -7.0f));
  CHECK(y == std::vector<float>(1000, -7.0f));
  CHECK(a == std::vector<float>(1000, 1.5f));
  // The same plan, well formed, runs: 1.5 + 2.5 on both ranks (divisor 1).
  REQUIRE(cpu.run(good_plan().get(), in, out).ok());
  CHECK(x == std::vector<float>(1000, 4.0f));
  CHECK(y == std::vector<float>(1000, 4.0f));
}
