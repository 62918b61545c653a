// A row's measurement on the CPU executor: every mode and collective checks right, and a backend
// that damages one output element per run is caught in relay's rows and in the baseline's.
#include "sweep/measure.hpp"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "report/report.hpp"
#include "sweep/data.hpp"

using namespace relay;
using namespace relay::bench;

namespace {

options small_options() {
  options o;
  o.iterations = 2;
  o.warmup = 1;
  o.type = dtype::float32;
  o.topo = links_only(mi300x);  // the link model alone, as test_predict.cpp works it out
  return o;
}

row make_row(collective c, int A, run_mode m, std::int64_t n, route r, base_source base) {
  row x;
  x.shape = {c, A, 8, m, 0};
  x.n = n;
  x.chosen = r;
  x.base = base;
  return x;
}

// Runs every call on the CPU executor, then overwrites element 0 of the first active rank's
// output: what a broken executor would leave.
class damaging_backend : public backend {
 public:
  damaging_backend() : inner_(make_cpu_backend(8)) {}
  std::string description() const override { return "damaging " + inner_->description(); }
  std::int64_t cache_bytes() const override { return inner_->cache_bytes(); }
  void* allocate(int rank, std::size_t bytes) override { return inner_->allocate(rank, bytes); }
  void deallocate(int rank, void* p) override { inner_->deallocate(rank, p); }
  status write(int rank, void* dst, const void* src, std::size_t bytes) override {
    return inner_->write(rank, dst, src, bytes);
  }
  status read(int rank, void* dst, const void* src, std::size_t bytes) override {
    return inner_->read(rank, dst, src, bytes);
  }
  status run(std::span<const job> jobs) override {
    if (status s = inner_->run(jobs); !s) return s;
    const job& j = jobs.front();
    const int rank = j.p->groups.front().front();
    std::memset(j.outputs[static_cast<std::size_t>(rank)].data, poison_byte, 4);
    return {};
  }
  timer& clock() override { return inner_->clock(); }
  void release_scratch() override { inner_->release_scratch(); }

 private:
  std::unique_ptr<backend> inner_;
};

}  // namespace

TEST_CASE("rotation_sets: enough sets to span the cache twice, one per timed run at most",
          "[bench]") {
  CHECK(rotation_sets(64 << 10, 120 << 20, 20) == 20);
  CHECK(rotation_sets(64 << 10, 120 << 20, 100) == 32);  // max_rotation_sets
  CHECK(rotation_sets(1 << 20, 4 << 20, 20) == 4);
  CHECK(rotation_sets(3 << 20, 4 << 20, 20) == 2);
  CHECK(rotation_sets(std::int64_t{1} << 30, 120 << 20, 20) == 1);
  CHECK(rotation_sets(4096, 0, 20) == 1);
  CHECK(rotation_sets(0, 120 << 20, 20) == 1);
  // Warm-up visits every set before the timed runs.
  CHECK(warmup_runs(5, 20) == 20);
  CHECK(warmup_runs(5, 1) == 5);
  CHECK(warmup_runs(0, 3) == 3);
}

TEST_CASE("row_runner: every collective and mode checks right on the CPU", "[bench]") {
  const options o = small_options();
  std::unique_ptr<backend> cpu = make_cpu_backend(8);
  row_runner runner(*cpu, o, nullptr);
  for (collective c : all_collectives)
    for (int A : {2, 4})
      for (run_mode m : {run_mode::fused, run_mode::parallel, run_mode::single}) {
        INFO(name(c) << " A=" << A << " " << name(m));
        row r = make_row(c, A, m, 1000, route::relay, base_source::direct);
        REQUIRE(runner.measure(r).ok());
        CHECK(r.out_of_place.relay.ran);
        CHECK(r.out_of_place.relay.wrong == 0);
        CHECK(r.out_of_place.base.wrong == 0);
        CHECK(r.out_of_place.relay.seconds > 0);
        CHECK(r.out_of_place.base.seconds > 0);
        CHECK(r.in_place.relay.ran == has_in_place(c));
        if (has_in_place(c)) {
          CHECK(r.in_place.relay.wrong == 0);
          CHECK(r.in_place.base.wrong == 0);
        }
      }
}

TEST_CASE("row_runner: a damaged element is counted, with where it is", "[bench]") {
  const options o = small_options();
  damaging_backend broken;
  row_runner runner(broken, o, nullptr);
  row r =
      make_row(collective::allreduce, 2, run_mode::fused, 1000, route::relay, base_source::direct);
  REQUIRE(runner.measure(r).ok());
  CHECK(r.out_of_place.relay.wrong == 1);
  CHECK_THAT(r.out_of_place.relay.first_wrong, Catch::StartsWith("rank 0 element 0: got"));
  CHECK(r.out_of_place.base.wrong == 1);
  CHECK(r.in_place.relay.wrong == 1);
  CHECK(r.in_place.base.wrong == 1);
}

TEST_CASE("row_runner: no check, nothing counted", "[bench]") {
  options o = small_options();
  o.check = false;
  damaging_backend broken;
  row_runner runner(broken, o, nullptr);
  row r = make_row(collective::all_gather, 4, run_mode::single, 512, route::direct,
                   base_source::direct);
  REQUIRE(runner.measure(r).ok());
  CHECK(r.out_of_place.relay.wrong == -1);
  CHECK(r.out_of_place.relay.seconds > 0);
  // The route taken is the baseline: one measurement serves both.
  CHECK(r.out_of_place.base.seconds == r.out_of_place.relay.seconds);
}

TEST_CASE("row_runner: an executor failure comes back as a status", "[bench]") {
  options o = small_options();
  std::unique_ptr<backend> cpu = make_cpu_backend(8);
  row_runner runner(*cpu, o, nullptr);
  row r = make_row(collective::allreduce, 3, run_mode::fused, 1000, route::relay,
                   base_source::none);  // A=3 has no schedule
  const status s = runner.measure(r);
  CHECK(s.code() == errc::invalid_schedule);
}

TEST_CASE("row_runner: --in-place 0 measures out of place only", "[bench]") {
  options o = small_options();
  o.in_place = false;
  std::unique_ptr<backend> cpu = make_cpu_backend(8);
  row_runner runner(*cpu, o, nullptr);
  row r =
      make_row(collective::allreduce, 2, run_mode::fused, 1000, route::relay, base_source::direct);
  REQUIRE(runner.measure(r).ok());
  CHECK(r.out_of_place.relay.ran);
  CHECK(r.out_of_place.base.ran);
  CHECK_FALSE(r.in_place.relay.ran);
  CHECK_FALSE(r.in_place.base.ran);
}

TEST_CASE("sized_row: the route's prediction and the direct route's", "[bench]") {
  // A=2 fused allreduce, bf16, 1920000 bytes: n = 960000. On MI300X (test_predict.cpp) relay
  // takes 30 us and direct 50 us: relay is the faster, so auto takes it; the model's speedup
  // over direct is 50 / 30.
  options o = small_options();
  o.type = dtype::bfloat16;
  const row r = sized_row({collective::allreduce, 2, 8, run_mode::fused}, o, 1920000);
  CHECK(r.n == 960000);
  CHECK(r.chosen == route::relay);
  CHECK(r.predicted == Approx(30e-6));
  CHECK(r.direct_predicted == Approx(50e-6));
}

TEST_CASE("a job's rows with relay's direct route as the baseline (--emulate-mesh -x ipc)",
          "[bench]") {
  options o = small_options();
  o.route = route_choice::relay;
  o.in_place = false;
  // One shape, A = 2 of 8, single; two sizes. Each form measured records (vendor, size).
  const std::vector<bench::call_shape> shapes{{collective::allreduce, 2, 8, run_mode::single, 0}};
  struct measured {
    bool baseline;
    std::int64_t bytes;
    route chosen;
  };
  std::vector<measured> calls;
  rank_job job;
  job.direct_baseline = true;
  job.measure = [&](const row& r, bool, bool v, form_result& f) {
    calls.push_back({v, r.bytes, r.chosen});
    f.ran = true;
    f.seconds = v ? 2e-3 : 1e-3;
    return status{};
  };
  REQUIRE(run_rank_rows(o, shapes, {1 << 20, 4 << 20}, run_info{}, job) == 0);
  // Per size: relay's route, then the baseline (the direct route, measured by the job).
  REQUIRE(calls.size() == 4);
  CHECK_FALSE(calls[0].baseline);
  CHECK(calls[1].baseline);
  CHECK(calls[0].chosen == route::relay);
  CHECK(calls[1].bytes == calls[0].bytes);
  CHECK_FALSE(calls[2].baseline);
  CHECK(calls[3].baseline);
  // Where the route taken is the direct one on the native wire, it is the baseline itself:
  // measured once.
  calls.clear();
  o.route = route_choice::direct;
  REQUIRE(run_rank_rows(o, shapes, {1 << 20}, run_info{}, job) == 0);
  REQUIRE(calls.size() == 1);
  CHECK_FALSE(calls[0].baseline);
  // The lead writes --csv: a header and a row per size, the baseline direct, the speedup the
  // baseline's time over the route's (2 ms / 1 ms).
  o.route = route_choice::relay;
  o.csv_path = "/tmp/relay_bench_test_rank_rows.csv";
  job.lead = true;
  REQUIRE(run_rank_rows(o, shapes, {1 << 20}, run_info{}, job) == 0);
  std::ifstream in(o.csv_path);
  std::vector<std::vector<std::string>> lines;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream text(line);
    for (std::string f; std::getline(text, f, ',');)
      fields.push_back(f);
    lines.push_back(fields);
  }
  std::remove(o.csv_path.c_str());
  REQUIRE(lines.size() == 2);
  auto field = [&](const std::string& name) {
    const auto at = std::find(lines[0].begin(), lines[0].end(), name);
    REQUIRE(at != lines[0].end());
    return lines[1].at(static_cast<std::size_t>(at - lines[0].begin()));
  };
  CHECK(field("baseline") == "direct");
  CHECK(field("route") == "relay");
  CHECK(std::stod(field("speedup")) == Approx(2.0));
  // Without it (and no vendor), relay's route alone.
  calls.clear();
  o.csv_path.clear();
  job.lead = false;
  job.direct_baseline = false;
  REQUIRE(run_rank_rows(o, shapes, {1 << 20}, run_info{}, job) == 0);
  REQUIRE(calls.size() == 1);
}
