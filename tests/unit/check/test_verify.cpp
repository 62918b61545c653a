// Every schedule satisfies every property; broken ones fail with the reason.
#include "relay/check/verify.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "relay/schedule/generate.hpp"

using namespace relay;

namespace {

std::string describe(const schedule_spec& s, const check_failure& f) {
  return std::string(name(s.coll)) + " A=" + std::to_string(s.active) +
         " N=" + std::to_string(s.ranks) + " " + std::string(name(s.mode)) + " " +
         std::string(name(s.route)) + ": " + (f.ok() ? "ok" : f.what) + " (group " +
         std::to_string(f.group) + ", rank " + std::to_string(f.rank) + ", step " +
         std::to_string(f.step) + ", count " + std::to_string(f.count) + ", in place " +
         std::to_string(f.in_place) + ")";
}

schedule broken(const schedule_spec& s, auto&& edit) {
  schedule out = *build_schedule(s);
  edit(out);
  detail::sort_ops(out.ops);
  return out;
}

}  // namespace

TEST_CASE("every schedule passes every check", "[check]") {
  int checked = 0;
  for (collective c : all_collectives)
    for (int A : {2, 4, 8})
      for (int N : {4, 6, 8, 12, 16})
        for (mode m : {mode::fused, mode::single})
          for (route r : {route::relay, route::direct, route::legacy}) {
            const schedule_spec s{c, A, N, m, r};
            if (spec_error(s) != nullptr) continue;
            const check_failure f = verify(*build_schedule(s));
            INFO(describe(s, f));
            CHECK(f.ok());
            ++checked;
          }
  // 50 valid (A, N, mode, route) per collective with A < N, and the direct route at A = N = 4
  // and 8, fused and single: 54.
  CHECK(checked == 216);
  for (collective c : all_collectives)
    for (int N : {3, 4, 8, 16})
      for (int tiles : {2, 3, 5, 16}) {
        const schedule_spec s{c, 2, N, mode::single, route::pipelined, 0, tiles};
        const check_failure f = verify(*build_schedule(s));
        INFO(describe(s, f) << " tiles " << tiles);
        CHECK(f.ok());
      }
  // Pipelined groups of A >= 4: every N from one helper up, A=8 beside 1 and 8 helpers.
  int piped = 0;
  for (collective c : all_collectives)
    for (auto [A, N] : {std::pair{4, 5}, {4, 6}, {4, 7}, {4, 8}, {4, 12}, {4, 16}, {8, 9}, {8, 16}})
      for (int tiles : {2, 3, 5, 16}) {
        if (A == 8 && tiles == 16) continue;  // the largest: covered at 5
        const schedule_spec s{c, A, N, mode::single, route::pipelined, 0, tiles};
        const check_failure f = verify(*build_schedule(s));
        INFO(describe(s, f) << " tiles " << tiles);
        CHECK(f.ok());
        ++piped;
      }
  CHECK(piped == 4 * (6 * 4 + 2 * 3));
  for (int permille : {250, 500, 780, 900}) {
    const schedule_spec s{collective::allreduce, 4, 8, mode::fused, route::relay, permille};
    const check_failure f = verify(*build_schedule(s));
    INFO(describe(s, f));
    CHECK(f.ok());
  }
}

TEST_CASE("the dataflow check fails a schedule that misplaces one element", "[check]") {
  const schedule_spec s{collective::allreduce, 2, 8};
  const schedule bad = broken(s, [](schedule& x) {
    for (operation& op : x.ops)
      if (op.step == 2 && op.phase == phase::transfer && op.dst.buf == buffer::output) {
        op.dst.offset = op.dst.offset + affine::constant(1);  // one element to the right
        break;
      }
  });
  const check_failure f = check_dataflow(bad);
  REQUIRE_FALSE(f.ok());
  CHECK(std::string(f.what) == "an output element is never written");  // the first one
}

TEST_CASE("the dataflow check fails a schedule that reduces the wrong elements", "[check]") {
  const schedule_spec s{collective::reduce_scatter, 2, 8, mode::single};
  const schedule bad = broken(s, [](schedule& x) {
    // Rank 1 sends the block one further along than rank 0's: wrong data, right sizes and places.
    for (operation& op : x.ops)
      if (op.step == 1 && op.phase == phase::transfer && x.sources[op.first_source].rank == 1) {
        x.sources[op.first_source].offset = x.sources[op.first_source].offset + affine::n();
        break;
      }
  });
  const check_failure f = check_dataflow(bad);
  REQUIRE_FALSE(f.ok());
  CHECK(std::string(f.what) == "a reduction sums different elements of its contributors' inputs");
}

TEST_CASE("the dataflow check fails an AVG that never divides", "[check]") {
  const schedule_spec s{collective::allreduce, 2, 8, mode::single};
  const schedule bad = broken(s, [](schedule& x) {
    for (operation& op : x.ops)
      op.finalize = false;
  });
  const check_failure f = check_dataflow(bad);
  REQUIRE_FALSE(f.ok());
  CHECK(std::string(f.what) == "an output element holds the wrong contributions");
}

TEST_CASE("the dataflow check fails a schedule that drops a transfer", "[check]") {
  const schedule_spec s{collective::all_to_all, 4, 8};
  const schedule bad = broken(s, [](schedule& x) {
    for (std::size_t i = 0; i < x.ops.size(); ++i)
      if (x.ops[i].step == 2 && x.view().sources_of(x.ops[i])[0].buf == buffer::scratch) {
        x.ops.erase(x.ops.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  });
  const check_failure f = check_dataflow(bad);
  REQUIRE_FALSE(f.ok());
  CHECK(std::string(f.what) == "an output element is never written");
}

TEST_CASE("the dataflow check fails a double AVG division", "[check]") {
  const schedule_spec s{collective::reduce_scatter, 4, 8};
  const schedule bad = broken(s, [](schedule& x) {
    for (operation& op : x.ops)
      if (op.phase == phase::reduce && !op.finalize) op.finalize = true;  // helper partials
  });
  const check_failure f = check_dataflow(bad);
  REQUIRE_FALSE(f.ok());
  CHECK_THAT(f.what, Catch::Contains("already finalized"));
}

TEST_CASE("the dataflow check fails a contribution counted twice", "[check]") {
  const schedule_spec s{collective::allreduce, 4, 8, mode::single};
  const schedule bad = broken(s, [](schedule& x) {
    for (operation& op : x.ops)
      if (op.phase == phase::reduce && op.source_count == 4) {
        x.sources[op.first_source + 1] = x.sources[op.first_source];
        break;
      }
  });
  const check_failure f = check_dataflow(bad);
  REQUIRE_FALSE(f.ok());
  CHECK_THAT(f.what, Catch::Contains("twice"));
}

TEST_CASE("the structure check finds hazards and scratch overruns", "[check]") {
  const schedule_spec s{collective::all_gather, 2, 8};
  const schedule twice = broken(s, [](schedule& x) { x.ops.push_back(x.ops.back()); });
  const check_failure f1 = check_structure(twice);
  REQUIRE_FALSE(f1.ok());
  CHECK(std::string(f1.what) == "two operations of one phase write overlapping memory");

  const schedule overrun = broken(s, [](schedule& x) {
    x.header.helper_scratch = x.header.helper_scratch - affine::q(0);  // one chunk short
  });
  const check_failure f2 = check_structure(overrun);
  REQUIRE_FALSE(f2.ok());
  CHECK(std::string(f2.what) == "an operand reaches past the declared scratch size");

  // Both steps of the relay all-gather in one phase: the helpers forward what the same phase is
  // still writing into their scratch.
  const schedule merged = broken(s, [](schedule& x) {
    for (operation& op : x.ops)
      op.step = 0;
  });
  const check_failure f4 = check_structure(merged);
  REQUIRE_FALSE(f4.ok());
  CHECK(std::string(f4.what) == "an operation reads memory another writes in the same phase");
  CHECK(f4.step == 0);

  const schedule remote = broken(schedule_spec{collective::allreduce, 2, 8}, [](schedule& x) {
    for (operation& op : x.ops)
      if (op.phase == phase::reduce) {
        x.sources[op.first_source].rank = static_cast<std::uint8_t>((op.dst.rank + 1) % 8);
        break;
      }
  });
  const check_failure f3 = check_structure(remote);
  REQUIRE_FALSE(f3.ok());
  CHECK(std::string(f3.what) == "a reduction reads another rank's memory");
}

TEST_CASE("the structure check finds a hazard that only the in-place layout makes", "[check]") {
  // Allreduce in place: each active's input and output are one buffer. An extra step-1 copy into
  // rank 0's output, where a step-1 transfer reads rank 0's input, meets nothing out of place
  // (the output is written again later) and is a read-write hazard in place. The in-place run
  // checks only input and output accesses (check_structure_of's user_only): it must see it.
  const schedule_spec s{collective::allreduce, 2, 8};
  const schedule bad = broken(s, [](schedule& x) {
    for (const operation& op : x.ops) {
      const operand src = x.view().sources_of(op)[0];
      if (op.step != 1 || op.phase != phase::transfer || src.rank != 0 || src.buf != buffer::input)
        continue;
      operation extra = op;
      extra.dst = {0, buffer::output, src.offset};
      extra.first_source = static_cast<std::uint32_t>(x.sources.size());
      x.sources.push_back({1, buffer::input, src.offset});
      x.ops.push_back(extra);
      return;
    }
  });
  REQUIRE(bad.ops.size() == build_schedule(s)->ops.size() + 1);
  const check_failure f = check_structure(bad);
  INFO(describe(s, f));
  REQUIRE_FALSE(f.ok());
  CHECK(std::string(f.what) == "an operation reads memory another writes in the same phase");
  CHECK(f.in_place);
  CHECK(f.step == 1);
  CHECK(f.rank == 0);
  // The same through verify, and on the unrolled program of every group at the first count where
  // the relay chunk is non-zero (8 * 128): out of place it passes, in place it does not.
  CHECK(verify(bad).in_place);
  const std::vector<std::int64_t> counts(4, 8 * 128);
  CHECK(verify_at(bad, counts, false).ok());
  CHECK(std::string(verify_at(bad, counts, true).what) ==
        "an operation reads memory another writes in the same phase");
}

TEST_CASE("the structure check keeps partial sums out of the element type", "[check]") {
  // Issue 12's defect: the reduce-scatter helpers' sums of A-1 slices stored as elements.
  const schedule_spec s{collective::reduce_scatter, 4, 8};
  const schedule narrow = broken(s, [](schedule& x) {
    for (operation& op : x.ops)
      if (op.phase == phase::reduce && !op.finalize) {
        op.dst = x.sources[op.first_source];  // back into its first slot, as before the fix
        break;
      }
  });
  const check_failure f1 = check_structure(narrow);
  REQUIRE_FALSE(f1.ok());
  CHECK_THAT(f1.what, Catch::Contains("not final must write a partial"));
  CHECK(f1.step == 1);

  const schedule final_partial = broken(s, [](schedule& x) {
    for (operation& op : x.ops)
      if (op.phase == phase::reduce && !op.finalize) op.finalize = true;
  });
  const check_failure f2 = check_structure(final_partial);
  REQUIRE_FALSE(f2.ok());
  CHECK_THAT(f2.what, Catch::Contains("final reduction writes a partial"));

  // The return hop delivering a partial into the owner's scratch (element-wide) instead.
  const schedule narrowing_copy = broken(s, [](schedule& x) {
    for (operation& op : x.ops)
      if (op.phase == phase::transfer && op.dst.buf == buffer::partial) {
        op.dst.buf = buffer::scratch;
        break;
      }
  });
  const check_failure f3 = check_structure(narrowing_copy);
  REQUIRE_FALSE(f3.ok());
  CHECK_THAT(f3.what, Catch::Contains("changes a value's width"));
  CHECK(f3.step == 2);

  const schedule short_partial = broken(s, [](schedule& x) {
    x.header.helper_partial = x.header.helper_partial - affine::q(0);  // one chunk short
  });
  const check_failure f4 = check_structure(short_partial);
  REQUIRE_FALSE(f4.ok());
  CHECK(std::string(f4.what) == "an operand reaches past the declared partial size");
}

TEST_CASE("only reduce-scatter's relay and pipelined routes with A >= 4 have partial sums",
          "[check]") {
  // Every other schedule reduces final values only: nothing else can round twice.
  for (collective c : all_collectives)
    for (int A : {2, 4, 8})
      for (int N : {4, 8, 16})
        for (mode m : {mode::fused, mode::single})
          for (route r : {route::relay, route::direct, route::legacy, route::pipelined}) {
            const schedule_spec s{c, A, N, m, r, 0, r == route::pipelined ? 4 : 0};
            if (spec_error(s) != nullptr) continue;
            const schedule x = *build_schedule(s);
            int partial_writes = 0;
            for (const operation& op : x.ops)
              partial_writes += op.dst.buf == buffer::partial ? 1 : 0;
            const bool expected = c == collective::reduce_scatter &&
                                  (r == route::relay || r == route::pipelined) && A >= 4;
            INFO(describe(s, {}));
            CHECK((partial_writes > 0) == expected);
            CHECK((x.header.helper_partial == affine{}) == !expected);
          }
}

// verify() checks one group's pattern (check/verify.hpp says why that covers every group). The
// whole program of every group at once, each at a different count, must agree.
TEST_CASE("a fused plan of every group at mixed counts passes what its pattern passed", "[check]") {
  int checked = 0;
  for (collective c : all_collectives)
    for (int A : {2, 4})
      for (int N : {4, 8, 12})
        for (route r : {route::relay, route::direct, route::legacy}) {
          const schedule_spec s{c, A, N, mode::fused, r};
          if (spec_error(s) != nullptr) continue;
          const schedule sched = *build_schedule(s);
          REQUIRE(verify(sched).ok());
          const auto counts = representative_counts(s, default_alignment);
          for (std::size_t shift = 0; shift < counts.size(); ++shift) {
            std::vector<std::int64_t> per_group;
            for (int g = 0; g < s.groups(); ++g)
              per_group.push_back(counts[(shift + static_cast<std::size_t>(g)) % counts.size()]);
            for (bool in_place : {false, true}) {
              if (in_place && !has_in_place(c)) continue;
              const check_failure f = verify_at(sched, per_group, in_place);
              INFO(describe(s, f) << " shift " << shift);
              CHECK(f.ok());
              ++checked;
            }
          }
        }
  // Per collective 14 fused schedules (A=2 at N=4, 8, 12: three routes each; A=4: direct at N=4,
  // relay and direct at N=8 and 12), 8 rotations, both forms but all-to-all's one: 784.
  CHECK(checked == 784);
}

TEST_CASE("group g plays the pattern's roles on its canonical ranks", "[check]") {
  // A = 2, N = 8, group 1: actives 2 and 3; helpers 0, 1, 4, 5, 6, 7 (roles 2 .. 7).
  const group_layout g1{1, 2, 8};
  const int want1[] = {2, 3, 0, 1, 4, 5, 6, 7};
  for (int role = 0; role < 8; ++role)
    CHECK(g1.rank_of(role) == want1[role]);
  // A = 4, N = 8, group 1: actives 4..7, helpers 0..3.
  const group_layout g4{1, 4, 8};
  const int want4[] = {4, 5, 6, 7, 0, 1, 2, 3};
  for (int role = 0; role < 8; ++role)
    CHECK(g4.rank_of(role) == want4[role]);

  // The expanded program: each group's copy of a pattern transfer, on that group's ranks. The
  // A=2 N=8 fused all-gather's pattern (a worked constant: 2 actives x 6 helpers relay copies
  // plus the direct ones) runs 4 times; at a count where nothing is empty every copy survives.
  const schedule s = *build_schedule({collective::all_gather, 2, 8, mode::fused, route::relay});
  const std::vector<std::int64_t> counts(4, 8 * 128 * 5);
  const concrete_schedule p = evaluate(s, counts);
  CHECK(p.ops.size() == 4 * s.ops.size());
  for (const concrete_op& op : p.ops) {
    const int first_active = 2 * op.group;
    const auto src = p.sources_of(op);
    // Every transfer touches an active of its own group at one end or the other.
    const bool own = (src[0].rank / 2 == op.group) || (op.dst.rank / 2 == op.group);
    INFO("group " << int(op.group) << " " << int(src[0].rank) << " -> " << int(op.dst.rank));
    CHECK(own);
    if (op.dst.buf == buffer::output) CHECK(op.dst.rank / 2 * 2 == first_active);
  }
}
