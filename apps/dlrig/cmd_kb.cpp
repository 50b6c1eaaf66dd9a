// `dlrig kb TOPIC [FILTER] [--json]`: parses options and prints what kb::kb_search returns.
// Exit codes: 0 found, 1 nothing matched the filter (like grep), 64 usage.
#include "commands.hpp"
#include "dlrig/core/text.hpp"

#include "dlrig/kb/report.hpp"

#include <iostream>
#include <memory>

namespace dlrig::cli {

namespace {

struct KbOptions {
  std::string topic;
  std::vector<std::string> filter;
  std::string min_memory;
  std::string sort;
  OutputOptions out;
};

} // namespace

Runner setup_kb(CLI::App &sub) {
  auto opt = std::make_shared<KbOptions>();
  sub.add_option("topic", opt->topic,
                 "What to list: gpus, archs, cuda, torch, links, models, cloud")
      ->required()
      ->check(CLI::IsMember(kb::kb_topics()));
  sub.add_option("filter", opt->filter,
                 "Words that must all match; `dlrig kb gpus NAME` naming one GPU shows it with "
                 "the source of each figure; `dlrig kb cuda DRIVER` shows what a driver runs")
      ->type_name("WORDS");
  sub.add_option("--min-memory", opt->min_memory, "gpus: at least this much memory, like 24GB")
      ->type_name("SIZE");
  sub.add_option("--sort", opt->sort, "gpus: sort by a column, highest first")
      ->check(CLI::IsMember(kb::kb_gpu_sort_keys()))
      ->type_name("KEY");
  add_output_options(sub, opt->out);
  return [opt](const Envelope &run) -> ExitCode {
    kb::KbQuery q;
    q.topic = opt->topic;
    for (const auto &w : opt->filter)
      q.filter += (q.filter.empty() ? "" : " ") + w;
    if (!opt->min_memory.empty()) {
      auto gb = kb::parse_size_gb(opt->min_memory);
      if (!gb)
        throw Failure(ExitCode::usage, "--min-memory " + gb.error().message);
      q.min_memory_gb = *gb;
    }
    q.sort = opt->sort;
    auto view = kb::kb_search(kb::builtin(), q);
    if (!view)
      throw Failure(ExitCode::usage, view.error().message);
    // Nothing matched: the JSON document still says so (empty items, suggestions); the other
    // formats print nothing and stderr explains.
    if (opt->out.format() == Format::json || view->matches > 0)
      print(kb::kb_report(*view), run, opt->out);
    if (view->matches > 0)
      return ExitCode::ok;
    std::string why = "dlrig kb " + q.topic + ": nothing matches";
    if (!q.filter.empty()) {
      why += " '" + q.filter + "'";
      if (!view->suggestions.empty())
        why += "; nearest: " + join(view->suggestions, ", ");
    } else if (q.min_memory_gb) {
      why += " --min-memory " + opt->min_memory;
    }
    to_stderr(why);
    return ExitCode::warnings; // 1: nothing matched, as grep does
  };
}

} // namespace dlrig::cli
