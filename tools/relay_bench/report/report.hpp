// The three forms of relay-bench's results: an nccl-tests-style table for people, CSV and JSON
// for machines. All three carry the same fields; NaN and "not measured" print as empty (CSV),
// null (JSON) or "n/a" (table).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "report/results.hpp"
#include "sweep/options.hpp"

namespace relay::bench {

// What a record of a run needs besides its rows.
struct run_info {
  std::string command;
  std::string date;  // UTC, ISO 8601
  std::string host;
  std::string executor;  // the backend's description
  std::string baseline;  // what base_source::nccl stands for here, or why it is absent
};

run_info describe_run(const options& o, std::string executor, std::string baseline);

std::string_view name(base_source b);

// relay-bench's exit status: 1 on any wrong element, 2 for a usage error, 3 when a run failed.
inline constexpr int exit_wrong = 1, exit_usage = 2, exit_failed = 3;

// A rank of a multi-process job (-x shm, -x nccl): a form that gave wrong elements, on standard
// error (`who`: "" for relay, "NCCL " for the baseline), and the table's closing line with the
// wrong elements summed over the ranks.
void print_wrong_form(std::string_view who, const row& r, bool in_place, const form_result& f);
void print_wrong_total(std::FILE* f, bool checked, std::int64_t wrong);

// The lines above every table: version, command, date, host, and `last` (the baseline or the
// executor).
void print_run_header(std::FILE* f, const run_info& info, std::string_view last);

// Table: a header per configuration, a line per size, a summary at the end.
void print_table_header(std::FILE* f, const options& o, const call_shape& s,
                        std::string_view baseline, const run_info& info);
void print_table_row(std::FILE* f, const options& o, const row& r);

// CSV: one header line, then a line per size and form.
void print_csv_header(std::FILE* f);
void print_csv_rows(std::FILE* f, const options& o, const row& r);

// JSON: the run, its settings and every row.
void print_json(std::FILE* f, const options& o, const run_info& info, const std::vector<row>& rows);

}  // namespace relay::bench
