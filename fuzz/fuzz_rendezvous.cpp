// Fuzzes what a rank of a multi-node `dlrig bench nccl.*` job reads from outside (bench/ranks.hpp):
// the rendezvous's lines, which anyone who reaches rank 0's port can send (a hello) or a machine
// posing as rank 0 can answer (an id line), and the launcher's variables and flags the job is
// made from. Any bytes give a value or an error, never a crash or a hang.
// The input is lines: the first is a hello, the second an id line, the third --rendezvous, and
// the rest NAME=VALUE pairs of the environment (RANK, WORLD_SIZE, MASTER_ADDR, SLURM_PROCID...).
#include "dlrig/bench/ranks.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace dlrig::bench;
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    auto nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  auto line = [&](std::size_t i) { return i < lines.size() ? lines[i] : std::string_view(); };

  if (auto hello = parse_hello(line(0)))
    // What rank 0 does with a hello it accepts: the line is made again from what it read.
    (void)parse_hello(hello_line(hello->rank, hello->nranks, hello->gpu, hello->plan));
  if (auto id = parse_id_line(line(1), "fuzz"))
    (void)parse_id_line(id_line(*id), "fuzz");

  std::map<std::string, std::string, std::less<>> env;
  for (std::size_t i = 3; i < lines.size(); ++i)
    if (auto eq = lines[i].find('='); eq != std::string_view::npos)
      env[std::string(lines[i].substr(0, eq))] = std::string(lines[i].substr(eq + 1));
  EnvLookup lookup = [&env](const char *name) -> std::optional<std::string> {
    auto it = env.find(std::string_view(name));
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  RankFlags none;
  (void)rank_spec(none, lookup); // torchrun's or the launcher's variables alone
  RankFlags alone;
  alone.rendezvous = std::string(line(2));
  (void)rank_spec(alone, lookup); // --rendezvous under mpirun, srun or mpiexec
  RankFlags all = alone;
  all.rank = static_cast<int>(size % 5);
  all.nranks = static_cast<int>(size % 7);
  (void)rank_spec(all, lookup);
  return 0;
}
