#include "dlrig/fit/load.hpp"

#include "dlrig/core/python_json.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/platform/fs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <utility>

namespace dlrig::fit {
namespace {

namespace fs = std::filesystem;

// A config.json is small; anything this large is not one.
constexpr std::uintmax_t kMaxConfigBytes = 16'000'000;

Result<std::string> read_text(const fs::path &p) {
  return read_regular_file(p.string(), kMaxConfigBytes, "config.json");
}

// A tensor that packs several weights per element (GPTQ's and AWQ's int32 qweight,
// compressed-tensors' weight_packed, bitsandbytes 4-bit's uint8 weight beside its absmax and
// quant_map), whose header counts words, not parameters; "" when there is none.
std::string packed_tensor(const Checkpoint &c) {
  for (const auto &t : c.tensors)
    for (const char *suffix : {".qweight", ".weight_packed", ".absmax", ".quant_map"})
      if (t.name.ends_with(suffix))
        return t.name;
  return "";
}

Result<ModelInput> from_config_file(const fs::path &cfg, std::optional<Checkpoint> ckpt) {
  DLRIG_TRY(auto text, read_text(cfg));
  DLRIG_TRY(auto arch, parse_model_config(text, cfg.string()));
  ModelInput in;
  in.arch = std::move(arch);
  in.origin = "config.json " + cfg.string();
  // Packed tensors under a config.json without quantization_config: AutoGPTQ's own
  // quantize_config.json beside it says how, else only the header's bytes are known.
  if (const auto packed = ckpt ? packed_tensor(*ckpt) : "";
      !packed.empty() && !in.arch.stored_quant) {
    const auto qcfg = cfg.parent_path() / "quantize_config.json";
    std::error_code ec;
    if (fs::exists(qcfg, ec)) {
      DLRIG_TRY(auto qtext,
                read_regular_file(qcfg.string(), kMaxConfigBytes, "quantize_config.json"));
      Json q = Json::parse(qtext, nullptr, false);
      if (q.is_discarded())
        return make_error(qcfg.string() + ": not valid JSON (AutoGPTQ's quantize_config.json is "
                                          "an object of bits, group_size...)");
      if (q.is_object() && !q.contains("quant_method"))
        q["quant_method"] = "gptq";
      DLRIG_TRY(auto sq, model::stored_quant_from_config(q, qcfg.string()));
      in.arch.stored_quant = sq;
    } else {
      in.arch.stored_quant = model::StoredQuant{
          "packed tensors (" + packed.substr(packed.rfind('.') + 1) + ")", 0, 0, false};
    }
  }
  // A quantised checkpoint's header counts packed int32 words and scales, not parameters: the
  // count comes from the config, the header gives the stored bytes.
  if (ckpt && ckpt->params > 0 && !in.arch.stored_quant) {
    in.params = static_cast<std::int64_t>(ckpt->params);
    in.origin += " + safetensors header";
    in.checkpoint = std::move(ckpt);
  } else {
    in.params = model::derive_params(in.arch);
    if (ckpt && ckpt->weight_bytes > 0) {
      in.origin += " + safetensors header (bytes)";
      in.checkpoint = std::move(ckpt);
    }
  }
  if (in.params <= 0)
    return make_error(cfg.string() + ": the parameter count cannot be derived from this config "
                                     "in this build; give the .safetensors checkpoint beside it "
                                     "or --params N");
  // Gated DeltaNet layers (Qwen3-Next, Qwen3.5) and Mamba-2 mixers (Granite 4.0): the parameters
  // are exact; their activations and the recurrent state they keep instead of a KV cache are not
  // modelled, so fit reports what the weights alone take rather than an estimate that would size
  // them as attention layers.
  if (in.arch.linear_attention_layers > 0) {
    // The layers' kind, and what they keep between tokens instead of a KV cache.
    const auto [kind, state] =
        in.arch.mamba_heads > 0
            ? std::pair{"Mamba-2 (state-space)", "Mamba-2 layers' convolution and recurrent state"}
        : in.arch.short_conv
            ? std::pair{"gated short-convolution", "convolution layers' convolution state"}
            : std::pair{"gated DeltaNet (linear-attention)",
                        "DeltaNet layers' convolution and recurrent state"};
    in.weights_only = true;
    in.not_modelled = {
        fmt::format("activations of the {} {} layers of {}: not modelled yet",
                    in.arch.linear_attention_layers, kind, in.arch.layers),
        fmt::format("serving cache: the attention layers' KV cache and the {}, not modelled yet",
                    state),
        "training memory (gradients, optimizer states, activations): not estimated for these "
        "layers yet"};
  }
  return in;
}

// What a binary model file that is no config.json is, from its first bytes: llama.cpp's GGUF
// (magic "GGUF", https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), a PyTorch checkpoint
// (torch.save writes a zip archive, older versions a pickle starting with the PROTO opcode 0x80);
// "" for anything else.
std::string binary_checkpoint_kind(std::string_view head) {
  if (head.starts_with("GGUF"))
    return "a GGUF file (llama.cpp)";
  if (head.starts_with("PK\x03\x04") || head.starts_with("\x80"))
    return "a PyTorch checkpoint (torch.save's zip or pickle, which dlrig does not open: loading "
           "one runs code)";
  return "";
}

// A checkpoint without a config.json: shapes from its tensor names; when they are not names dlrig
// recognises, the header's exact count and bytes alone (weights_only).
Result<ModelInput> from_checkpoint_only(Checkpoint c, std::optional<model::ModelFamily> family,
                                        const std::string &spec, const char *beside) {
  if (auto packed = packed_tensor(c); !packed.empty())
    return make_error(fmt::format(
        "{}: tensor \"{}\" is stored quantised, several weights to an element, so the header "
        "does not count the parameters: put the model's config.json (with its "
        "quantization_config) beside the checkpoint",
        spec, packed));
  ModelInput in;
  in.params = static_cast<std::int64_t>(c.params);
  in.origin = "safetensors " + spec;
  auto arch = arch_from_checkpoint(c, family.value_or(model::ModelFamily::decoder), spec);
  if (arch) {
    in.arch = std::move(arch).value();
    in.assumptions.push_back(fmt::format("no config.json{}: shapes read from tensor names; "
                                         "attention heads assumed of size 128",
                                         beside));
  } else {
    in.arch.name = spec;
    in.arch.display_name = spec;
    in.weights_only = true;
  }
  in.checkpoint = std::move(c);
  return in;
}

// A Hugging Face Hub repository id ("meta-llama/Llama-3.1-8B"): one '/' between two names of
// letters, digits, '-', '_' and '.', neither starting with '.'; nullopt for anything else.
std::optional<std::pair<std::string, std::string>> hub_id(const std::string &spec) {
  const auto slash = spec.find('/');
  if (slash == std::string::npos || spec.find('/', slash + 1) != std::string::npos)
    return std::nullopt;
  std::string org = spec.substr(0, slash), name = spec.substr(slash + 1);
  auto ok = [](const std::string &part) {
    return !part.empty() && part.front() != '.' &&
           std::all_of(part.begin(), part.end(), [](unsigned char c) {
             return std::isalnum(c) || c == '-' || c == '_' || c == '.';
           });
  };
  if (!ok(org) || !ok(name) || name.ends_with(".json") || name.ends_with(".safetensors"))
    return std::nullopt;
  return std::make_pair(org, name);
}

// The Hugging Face cache's hub folder as huggingface_hub finds it: HF_HUB_CACHE, else
// HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub
// (https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables).
std::optional<fs::path> hub_cache() {
  auto env = [](const char *n) -> std::optional<std::string> {
    const char *v = std::getenv(n);
    return v && *v ? std::optional<std::string>(v) : std::nullopt;
  };
  if (auto v = env("HF_HUB_CACHE"))
    return fs::path(*v);
  if (auto v = env("HF_HOME"))
    return fs::path(*v) / "hub";
  if (auto v = env("XDG_CACHE_HOME"))
    return fs::path(*v) / "huggingface" / "hub";
  if (auto v = env("HOME"))
    return fs::path(*v) / ".cache" / "huggingface" / "hub";
  return std::nullopt;
}

// The cached snapshots of a repository that could be the one to read (each holds its
// config.json): the revision refs/main names, else every snapshot there is (the caller takes one
// alone and refuses to guess between several).
std::vector<fs::path> cached_snapshots(const fs::path &hub, const std::string &org,
                                       const std::string &name) {
  std::error_code ec;
  const fs::path repo = hub / ("models--" + org + "--" + name);
  if (!fs::is_directory(repo / "snapshots", ec))
    return {};
  // refs/main holds one commit hash; read without blocking (a FIFO there is refused).
  const auto ref = read_regular_file((repo / "refs" / "main").string(), 4096, "refs/main");
  std::string revision = ref ? ref->substr(0, ref->find_first_of("\r\n")) : std::string();
  if (!revision.empty() && revision.find('/') == std::string::npos) {
    const fs::path snap = repo / "snapshots" / revision;
    if (fs::exists(snap / "config.json", ec))
      return {snap};
  }
  std::vector<fs::path> found;
  for (const auto &entry : list_directory((repo / "snapshots").string()))
    if (fs::exists(repo / "snapshots" / entry / "config.json", ec))
      found.push_back(repo / "snapshots" / entry);
  return found;
}

Result<ModelInput> load_folder(const fs::path &p, const std::string &spec,
                               std::optional<model::ModelFamily> family) {
  std::error_code ec;
  std::optional<Checkpoint> ckpt;
  if (fs::exists(p / "model.safetensors.index.json", ec) ||
      fs::exists(p / "model.safetensors", ec)) {
    DLRIG_TRY(auto c, read_checkpoint(p.string()));
    ckpt = std::move(c);
  }
  if (fs::exists(p / "config.json", ec))
    return from_config_file(p / "config.json", std::move(ckpt));
  if (!ckpt)
    return make_error(spec + ": this folder holds no config.json, model.safetensors or "
                             "model.safetensors.index.json");
  return from_checkpoint_only(std::move(*ckpt), family, spec, "");
}

// A Hub repository id that is not a path here: its snapshot in the local Hugging Face cache (the
// files a download left there), else the catalog model read from that repository's config.json.
Result<ModelInput> load_hub_id(const std::string &spec, const std::string &org,
                               const std::string &name, std::optional<model::ModelFamily> family,
                               const kb::KnowledgeBase &kb) {
  const auto hub = hub_cache();
  const auto snaps = hub ? cached_snapshots(*hub, org, name) : std::vector<fs::path>{};
  if (snaps.size() > 1) {
    std::string list;
    for (const auto &p : snaps)
      list += (list.empty() ? "" : ", ") + p.filename().string();
    return make_error(ErrorKind::not_found,
                      fmt::format("{}: the Hugging Face cache holds {} snapshots of it ({}) and "
                                  "no refs/main names one; give the snapshot's folder instead "
                                  "({})",
                                  spec, snaps.size(), list, snaps.front().string()));
  }
  if (snaps.size() == 1) {
    const fs::path &snap = snaps.front();
    DLRIG_TRY(auto in, load_folder(snap, snap.string(), family));
    in.arch.name = spec; // not the snapshot folder's revision hash
    in.assumptions.push_back(
        fmt::format("{}: read from the Hugging Face cache, {}", spec, snap.string()));
    return in;
  }
  const std::string where =
      hub ? fmt::format("nor in the Hugging Face cache ({})", hub->string())
          : std::string("and no Hugging Face cache was found (HF_HUB_CACHE, HF_HOME and HOME are "
                        "unset)");
  if (const model::ModelArch *m = kb.model_of_repo(spec)) {
    DLRIG_TRY(auto in, model_from_catalog(m->name, kb));
    in.assumptions.push_back(fmt::format("{} is not a path here {}: the catalog's {}, from that "
                                         "repository's config.json",
                                         spec, where, m->name));
    return in;
  }
  return make_error(ErrorKind::not_found,
                    fmt::format("{}: no such file or folder, {}, and no catalog model comes from "
                                "that repository; download its config.json into that cache (`hf "
                                "download {} config.json`) and run this again, or give a catalog "
                                "name (`dlrig kb models`)",
                                spec, where, spec));
}

} // namespace

bool names_a_file(const std::string &spec) {
  std::error_code ec;
  if (fs::exists(spec, ec))
    return true;
  return spec.find('/') != std::string::npos || spec.ends_with(".json") ||
         spec.ends_with(".safetensors");
}

Result<model::ModelArch> parse_model_config(std::string_view text, const std::string &where) {
  Json j;
  try {
    j = Json::parse(python_json_to_json(text));
  } catch (const Json::exception &e) { // parse errors (with line and column) and number overflow
    return make_error(fmt::format("{}: malformed JSON: {}", where, e.what()));
  }
  if (!j.is_object())
    return make_error(where + ": a config.json must be a JSON object");
  // A config.json names the model after its folder (the working folder's for a bare
  // "config.json"); a config saved under a name of its own (bart-base.json) after that name.
  const fs::path file(where);
  auto stem = file.filename() == "config.json" ? file.parent_path().filename().string()
                                               : file.stem().string();
  if (std::error_code ec; stem.empty())
    if (auto abs = fs::absolute(where, ec); !ec)
      stem = abs.parent_path().filename().string();
  const std::string name = stem.empty() ? where : stem;
  auto arch = model::model_from_config(j, name);
  if (!arch) {
    // The model layer names the model; one named after the file (none other to take) is said
    // once.
    std::string why = arch.error().message;
    if (name == where && why.rfind(name + ": ", 0) == 0)
      why.erase(0, name.size() + 2);
    return make_error(where + ": " + why);
  }
  return arch;
}

Result<ModelInput> load_model(const std::string &spec, std::optional<model::ModelFamily> family,
                              const kb::KnowledgeBase &kb) {
  if (!names_a_file(spec)) { // a catalog name: not found there is a usage error
    auto m = model_from_catalog(spec, kb);
    if (!m)
      return make_error(ErrorKind::usage, m.error().message);
    return m;
  }
  std::error_code ec;
  fs::path p(spec);
  if (!fs::exists(p, ec)) {
    if (auto id = hub_id(spec))
      return load_hub_id(spec, id->first, id->second, family, kb);
    return make_error(ErrorKind::not_found, spec + ": no such file or folder");
  }
  if (fs::is_directory(p, ec))
    return load_folder(p, spec, family);
  auto fname = p.filename().string();
  if (fname.ends_with(".safetensors") || fname.ends_with(".index.json")) {
    DLRIG_TRY(auto c, read_checkpoint(p.string()));
    auto cfg = p.parent_path() / "config.json";
    if (fs::exists(cfg, ec))
      return from_config_file(cfg, std::move(c));
    return from_checkpoint_only(std::move(c), family, spec, " beside it");
  }
  DLRIG_TRY(const auto head, read_regular_file_head(p.string(), 4));
  if (const auto kind = binary_checkpoint_kind(head.bytes); !kind.empty())
    return make_error(fmt::format("{}: {}; dlrig reads a model's config.json and safetensors "
                                  "headers: give the config.json of the model it was made from",
                                  spec, kind));
  return from_config_file(p, std::nullopt);
}

} // namespace dlrig::fit
