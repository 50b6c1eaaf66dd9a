#include "dlrig/kb/search.hpp"

#include "dlrig/kb/row.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <numeric>

namespace dlrig::kb {

using detail::lower;
using detail::trim;

namespace {

std::vector<std::string> filter_words(std::string_view filter) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : filter) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty())
        out.push_back(lower(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty())
    out.push_back(lower(cur));
  return out;
}

// Words of a field for matching: split at spaces and punctuation that separates names, keeping
// the dots of versions ("8.9") and the dashes and underscores inside names.
std::vector<std::string> field_words(const std::string &field) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : lower(field)) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == '(' || c == ')' ||
        c == '/' || c == ';') {
      if (!cur.empty())
        out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty())
    out.push_back(cur);
  return out;
}

// Every filter word begins a word of one of the fields: "h100" finds "H100 PCIe" but not the
// "GH100" die of an H200, "sxm" finds "SXM5", "llama" finds "tiny-llama".
bool matches(const std::vector<std::string> &words, const std::vector<std::string> &fields) {
  std::vector<std::string> all;
  for (const auto &f : fields)
    for (auto &w : field_words(f)) {
      // "llama-3.1-8b" is also "llama", "3.1" and "8b".
      std::size_t start = 0;
      for (std::size_t i = 0; i <= w.size(); ++i)
        if (i == w.size() || w[i] == '-' || w[i] == '_') {
          if (start > 0 && i > start)
            all.push_back(w.substr(start, i - start));
          start = i + 1;
        }
      all.push_back(std::move(w));
    }
  return std::all_of(words.begin(), words.end(), [&](const std::string &w) {
    return std::any_of(all.begin(), all.end(),
                       [&](const std::string &f) { return f.rfind(w, 0) == 0; });
  });
}

// The filter's words without a leading word that names the topic's product ("torch 2.4",
// "pytorch 2.4", "CUDA 12.1"); "torch==2.4.1" as pip writes it is "2.4.1".
std::vector<std::string> without_product(std::vector<std::string> words,
                                         const std::vector<std::string> &product) {
  if (words.empty())
    return words;
  for (const auto &p : product) {
    if (words.front() == p) {
      words.erase(words.begin());
      break;
    }
    if (words.front().rfind(p + "==", 0) == 0) {
      words.front().erase(0, p.size() + 2);
      break;
    }
  }
  return words;
}

// A version with wildcard groups is the version before them: "12.x", "12.X" and "12.*" are 12,
// "2.5.x" is 2.5 (release notes and issues write a series so).
std::vector<std::string> without_wildcards(std::vector<std::string> words) {
  for (auto &w : words)
    while (w.size() > 2 && (w.ends_with(".x") || w.ends_with(".*")) &&
           std::isdigit(static_cast<unsigned char>(w[0])))
      w.resize(w.size() - 2);
  return words;
}

KbView start(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v;
  v.query = q;
  v.kb = &kb;
  return v;
}

void finish(KbView &v, std::size_t matches, const std::vector<std::string> &all_names) {
  v.matches = matches;
  if (v.matches == 0 && !trim(v.query.filter).empty())
    v.suggestions = nearest_names(all_names, v.query.filter);
}

// ---- gpus -------------------------------------------------------------------------------------

struct GpuColumn {
  const char *key;
  std::function<OptF64(const GpuSpec &)> value;
};

const std::vector<GpuColumn> &gpu_columns() {
  static const std::vector<GpuColumn> cols = {
      {"memory", [](const GpuSpec &g) { return g.memory_gb; }},
      {"bandwidth", [](const GpuSpec &g) { return g.memory_bandwidth_bytes_per_s; }},
      {"fp64", [](const GpuSpec &g) { return g.fp64_flops; }},
      {"fp32", [](const GpuSpec &g) { return g.fp32_flops; }},
      {"tf32", [](const GpuSpec &g) { return g.tf32_flops; }},
      {"fp16", [](const GpuSpec &g) { return g.fp16_flops; }},
      {"bf16", [](const GpuSpec &g) { return g.bf16_flops; }},
      {"fp8", [](const GpuSpec &g) { return g.fp8_flops; }},
      {"int8", [](const GpuSpec &g) { return g.int8_ops; }},
      {"tdp", [](const GpuSpec &g) { return g.tdp_w; }},
      {"year",
       [](const GpuSpec &g) -> OptF64 {
         if (g.launch_year)
           return *g.launch_year;
         return std::nullopt;
       }},
      {"price", [](const GpuSpec &g) { return g.launch_price_usd; }},
  };
  return cols;
}

Result<KbView> search_gpus(const KnowledgeBase &kb, const KbQuery &q) {
  const GpuColumn *sort = nullptr;
  if (!q.sort.empty() && q.sort != "name") {
    for (const auto &c : gpu_columns())
      if (q.sort == c.key)
        sort = &c;
    if (!sort)
      return make_error("--sort " + q.sort + ": not a GPU column; use one of " +
                        join(kb_gpu_sort_keys(), ", "));
  }
  KbView v = start(kb, q);
  std::vector<std::string> names;
  for (const auto &g : kb.gpus)
    names.push_back(g.name);
  auto words = filter_words(q.filter);
  // A filter that names exactly one GPU shows that GPU with the source of each figure.
  if (!words.empty() && !q.min_memory_gb && q.sort.empty()) {
    if (const auto *one = kb.find_gpu(q.filter)) {
      v.gpus = {one};
      v.gpu_detail = true;
      finish(v, 1, names);
      return v;
    }
  }
  for (const auto &g : kb.gpus) {
    if (!matches(words, {g.name, g.vendor, g.architecture, g.compute_capability, g.form_factor,
                         g.memory_type}))
      continue;
    if (q.min_memory_gb && (!g.memory_gb || *g.memory_gb < *q.min_memory_gb))
      continue;
    v.gpus.push_back(&g);
  }
  if (q.sort == "name")
    std::stable_sort(v.gpus.begin(), v.gpus.end(), [](const GpuSpec *a, const GpuSpec *b) {
      return lower(a->name) < lower(b->name);
    });
  else if (sort)
    std::stable_sort(v.gpus.begin(), v.gpus.end(), [&](const GpuSpec *a, const GpuSpec *b) {
      auto x = sort->value(*a), y = sort->value(*b);
      if (x && y)
        return *x > *y;
      return x.has_value() && !y.has_value(); // unknown last
    });
  finish(v, v.gpus.size(), names);
  return v;
}

// ---- archs ------------------------------------------------------------------------------------

Result<KbView> search_archs(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(kb, q);
  auto words = filter_words(q.filter);
  // A CUDA target (sm_90, sm90, compute_90, sm_90a) is the capability it names.
  for (auto &w : words)
    if (auto cc = cc_of_target(w); !cc.empty())
      w = cc;
  std::vector<std::string> names;
  for (const auto &a : kb.archs) {
    names.push_back(a.compute_capability);
    names.push_back(a.name);
    if (matches(words, {a.compute_capability, a.name, a.vendor, a.example_gpus}))
      v.archs.push_back(&a);
  }
  finish(v, v.archs.size(), names);
  return v;
}

// ---- cuda -------------------------------------------------------------------------------------

bool looks_like_driver(const std::string &w) {
  // Driver versions are a three-digit branch and up to two more groups of digits (550, 531.14,
  // 550.54.14); CUDA versions never start with three digits. "535.." is neither ("535.x" reaches
  // here as 535: without_wildcards).
  std::vector<std::size_t> sizes{0};
  for (char c : w) {
    if (c == '.')
      sizes.push_back(0);
    else if (std::isdigit(static_cast<unsigned char>(c)))
      ++sizes.back();
    else
      return false;
  }
  return sizes.size() <= 3 && sizes[0] == 3 &&
         std::find(sizes.begin(), sizes.end(), 0u) == sizes.end();
}

Result<KbView> search_cuda(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(kb, q);
  auto words = without_wildcards(without_product(filter_words(q.filter), {"cuda"}));
  // A wheel's tag (cu121) is the CUDA version it was built with.
  for (auto &w : words)
    if (auto cuda = cuda_of_tag(w); !cuda.empty())
      w = cuda;
  std::vector<std::string> names;
  // `dlrig kb cuda 550.54.14`: what that driver runs.
  if (words.size() == 1 && looks_like_driver(words[0])) {
    DriverAnswer d{words[0], kb.max_cuda_for_driver(words[0]), ""};
    if (!d.max_cuda.empty()) {
      auto major = d.max_cuda.substr(0, d.max_cuda.find('.'));
      for (const auto &c : kb.cuda)
        if (c.cuda.rfind(major + ".", 0) == 0 &&
            kb.driver_supports_cuda(words[0], c.cuda) == CudaSupport::minor_compat &&
            (d.minor_compat_max_cuda.empty() ||
             compare_versions(c.cuda, d.minor_compat_max_cuda) > 0))
          d.minor_compat_max_cuda = c.cuda;
    }
    v.driver = std::move(d);
    finish(v, 1, names);
    return v;
  }
  for (const auto &c : kb.cuda) {
    names.push_back(c.version);
    bool hit = words.empty() || std::all_of(words.begin(), words.end(), [&](const std::string &w) {
                 return c.cuda == w || c.version == w || c.version.rfind(w + ".", 0) == 0 ||
                        lower(c.release) == w;
               });
    if (hit)
      v.cuda.push_back(&c);
  }
  v.cuda_overview = words.empty();
  finish(v, v.cuda.size(), names);
  return v;
}

// ---- torch ------------------------------------------------------------------------------------

bool torch_word_matches(const TorchRelease &r, const TorchVariant &v, const std::string &w) {
  auto plus = w.find('+');
  if (plus != std::string::npos)
    return torch_word_matches(r, v, w.substr(0, plus)) &&
           torch_word_matches(r, v, w.substr(plus + 1));
  if (v.tag == w)
    return true;
  // "2.5" matches every patch release of 2.5; "2.5.0" that patch release only; "2" every 2.x.
  auto mm = [](const std::string &s) {
    auto a = s.find('.');
    return a == std::string::npos ? s : s.substr(0, s.find('.', a + 1));
  };
  if (!std::isdigit(static_cast<unsigned char>(w[0])))
    return false;
  // "2" is every 2.x release.
  if (w.find('.') == std::string::npos)
    return std::all_of(w.begin(), w.end(), [](char c) { return std::isdigit(c); }) &&
           r.version.rfind(w + ".", 0) == 0;
  if (w.find('.') != w.rfind('.'))
    return compare_versions(w, r.version) == 0;
  return mm(w) == mm(r.version);
}

Result<KbView> search_torch(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(kb, q);
  auto words = without_wildcards(without_product(filter_words(q.filter), {"torch", "pytorch"}));
  std::vector<std::string> names;
  std::size_t releases = 0;
  for (const auto &r : kb.torch) {
    names.push_back(r.version);
    for (const auto &var : r.variants) {
      names.push_back(r.version + "+" + var.tag);
      bool hit = std::all_of(words.begin(), words.end(),
                             [&](const std::string &w) { return torch_word_matches(r, var, w); });
      if (!hit)
        continue;
      if (v.torch.empty() || v.torch.back().release != &r)
        ++releases;
      v.torch.push_back({&r, &var});
    }
  }
  // The install commands are long: shown when the filter picked one release or a few wheels.
  v.torch_install = !words.empty() && !v.torch.empty() && (releases == 1 || v.torch.size() <= 8);
  finish(v, v.torch.size(), names);
  return v;
}

// ---- links ------------------------------------------------------------------------------------

Result<KbView> search_links(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(kb, q);
  auto words = filter_words(q.filter);
  std::vector<std::string> names;
  for (const auto &l : kb.links) {
    names.push_back(l.name);
    if (matches(words, {l.name, l.kind, l.generation}))
      v.links.push_back(&l);
  }
  finish(v, v.links.size(), names);
  return v;
}

// ---- models -----------------------------------------------------------------------------------

Result<KbView> search_models(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(kb, q);
  std::vector<std::string> names;
  for (const auto &m : kb.models)
    names.push_back(m.name);
  // A Hugging Face id (ORG/NAME): the catalog model read from that repository, as `fit` finds it.
  if (const auto *m = kb.model_of_repo(q.filter)) {
    v.models = {m};
    finish(v, 1, names);
    return v;
  }
  auto words = filter_words(q.filter);
  for (const auto &m : kb.models) {
    if (matches(words, {m.name, m.display_name, m.hf_model_type, model_family_name(m.family)}))
      v.models.push_back(&m);
  }
  finish(v, v.models.size(), names);
  return v;
}

// ---- cloud ------------------------------------------------------------------------------------

Result<KbView> search_cloud(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(kb, q);
  auto words = filter_words(q.filter);
  std::vector<std::string> names;
  for (const auto &c : kb.cloud) {
    names.push_back(c.instance);
    if (matches(words, {c.provider, c.instance, c.gpu_model, c.gpu, c.interconnect}))
      v.cloud.push_back(&c);
  }
  finish(v, v.cloud.size(), names);
  return v;
}

} // namespace

const char *model_family_name(ModelFamily f) {
  switch (f) {
  case ModelFamily::decoder:
    return "decoder";
  case ModelFamily::moe_decoder:
    return "moe_decoder";
  case ModelFamily::encoder:
    return "encoder";
  case ModelFamily::encoder_decoder:
    return "encoder_decoder";
  case ModelFamily::cnn:
    return "cnn";
  case ModelFamily::unet:
    return "unet";
  }
  return "unknown";
}

const std::vector<std::string> &kb_topics() {
  static const std::vector<std::string> topics = {"gpus",  "archs",  "cuda", "torch",
                                                  "links", "models", "cloud"};
  return topics;
}

const std::vector<std::string> &kb_gpu_sort_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k = {"name"};
    for (const auto &c : gpu_columns())
      k.emplace_back(c.key);
    return k;
  }();
  return keys;
}

Result<KbView> kb_search(const KnowledgeBase &kb, const KbQuery &q) {
  if (q.topic != "gpus") {
    if (q.min_memory_gb)
      return make_error("--min-memory applies to `dlrig kb gpus` only");
    if (!q.sort.empty())
      return make_error("--sort applies to `dlrig kb gpus` only");
  }
  if (q.topic == "gpus")
    return search_gpus(kb, q);
  if (q.topic == "archs")
    return search_archs(kb, q);
  if (q.topic == "cuda")
    return search_cuda(kb, q);
  if (q.topic == "torch")
    return search_torch(kb, q);
  if (q.topic == "links")
    return search_links(kb, q);
  if (q.topic == "models")
    return search_models(kb, q);
  if (q.topic == "cloud")
    return search_cloud(kb, q);
  return make_error("unknown topic '" + q.topic + "'; use one of " + join(kb_topics(), ", "));
}

Result<double> parse_size_gb(std::string_view text) {
  auto t = lower(trim(text));
  auto strip = [&](std::string_view suffix) {
    if (t.size() > suffix.size() &&
        t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0) {
      t = trim(t.substr(0, t.size() - suffix.size()));
      return true;
    }
    return false;
  };
  if (!strip("gib") && !strip("gb"))
    strip("g");
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (t.empty() || used != t.size() || !std::isfinite(v) || v < 0)
    return make_error("'" + std::string(text) + "' is not a memory size; write it like 24GB");
  return v;
}

} // namespace dlrig::kb
