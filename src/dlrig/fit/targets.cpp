#include "dlrig/fit/targets.hpp"

#include "dlrig/kb/search.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace dlrig::fit {

std::string TargetError::message() const {
  switch (kind) {
  case Kind::no_such_gpu:
  case Kind::ambiguous: {
    const bool none = kind == Kind::no_such_gpu;
    return fmt::format("--gpu \"{}\": {} in the catalog{}: {} (see `dlrig kb gpus`)", query,
                       none ? "no such GPU" : "several GPUs match", none ? "; nearest" : "",
                       fmt::join(candidates, ", "));
  }
  case Kind::empty_catalog:
    return "--all-gpus: the knowledge base of this build has no GPUs";
  case Kind::no_local_gpu:
    return "this machine has no GPU to size against: give --gpu NAME (a catalog GPU) or "
           "--all-gpus";
  }
  return "no GPU to size against";
}

Targets catalog_gpu(const kb::KnowledgeBase &kb, std::string_view name) {
  Targets t;
  auto found = kb.match_gpus(name);
  if (found.size() == 1) {
    t.gpus.push_back(gpu_target(*found.front()));
    return t;
  }
  TargetError e;
  e.query = std::string(name);
  if (found.empty()) {
    e.kind = TargetError::Kind::no_such_gpu;
    std::vector<std::string> names;
    for (const auto &g : kb.gpus)
      names.push_back(g.name);
    e.candidates = kb::nearest_names(names, name);
  } else {
    e.kind = TargetError::Kind::ambiguous;
    for (const auto *g : found)
      e.candidates.push_back(g->name);
  }
  t.error = std::move(e);
  return t;
}

Targets all_catalog_gpus(const kb::KnowledgeBase &kb) {
  Targets t;
  for (const auto &g : kb.gpus)
    t.gpus.push_back(gpu_target(g));
  if (t.gpus.empty())
    t.error = TargetError{TargetError::Kind::empty_catalog, "", {}};
  return t;
}

Targets machine_gpus(const Snapshot &snap, const kb::KnowledgeBase &kb) {
  Targets t;
  for (auto &g : gpu_targets(snap, kb))
    if (std::none_of(t.gpus.begin(), t.gpus.end(), [&](const GpuTarget &k) {
          return k.name == g.name && k.memory_bytes == g.memory_bytes;
        }))
      t.gpus.push_back(std::move(g));
  if (t.gpus.empty())
    t.error = TargetError{TargetError::Kind::no_local_gpu, "", {}};
  return t;
}

} // namespace dlrig::fit
