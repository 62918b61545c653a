// The three forms of relay-bench's results: an nccl-tests-style table for people, CSV and JSON
// for machines. All three carry the same fields; NaN and "not measured" print as empty (CSV),
// null (JSON) or "n/a" (table).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "options.hpp"
#include "results.hpp"

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
