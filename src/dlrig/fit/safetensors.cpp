#include "dlrig/fit/safetensors.hpp"

#include "dlrig/core/json.hpp"
#include "dlrig/platform/fs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

namespace dlrig::fit {
namespace {

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

struct DtypeSize {
  std::string_view name;
  std::uint64_t bytes;
};
// The dtypes of the safetensors format (memory.md §2.1, huggingface/safetensors src/tensor.rs).
constexpr DtypeSize kDtypes[] = {{"BOOL", 1},    {"U8", 1},      {"I8", 1},  {"F8_E4M3", 1},
                                 {"F8_E5M2", 1}, {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2},
                                 {"F16", 2},     {"BF16", 2},    {"I32", 4}, {"U32", 4},
                                 {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};

bool mul_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}

// Tensors stored in checkpoints that are buffers, not parameters (memory.md §2.1: old Llama
// checkpoints store rotary_emb.inv_freq).
bool is_buffer(std::string_view name) {
  return name.ends_with(".inv_freq") || name.ends_with("position_ids") ||
         name.ends_with(".num_batches_tracked") || name.ends_with(".running_mean") ||
         name.ends_with(".running_var");
}

} // namespace

std::uint64_t SafeTensor::elements() const {
  std::uint64_t n = 1;
  for (auto d : shape)
    if (mul_overflows(n, d, n))
      return kU64Max;
  return n;
}

std::uint64_t safetensors_dtype_size(std::string_view dtype) {
  for (const auto &d : kDtypes)
    if (d.name == dtype)
      return d.bytes;
  return 0;
}

Result<std::uint64_t> parse_safetensors_length(std::string_view first8, std::uint64_t file_size,
                                               const std::string &where) {
  if (first8.size() < 8 || file_size < 8)
    return make_error(where +
                      ": truncated: a safetensors file starts with an 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(first8[static_cast<std::size_t>(i)]);
  if (n > kSafetensorsMaxHeader)
    return make_error(fmt::format("{}: header length {} bytes is over the format's limit of {} "
                                  "bytes: not a safetensors file, or a corrupt one",
                                  where, n, kSafetensorsMaxHeader));
  if (n > file_size - 8)
    return make_error(fmt::format("{}: header length {} bytes runs past the end of the file "
                                  "({} bytes): the file is truncated or not safetensors",
                                  where, n, file_size));
  if (n < 2)
    return make_error(fmt::format("{}: header length {} is too short for a JSON object", where, n));
  return n;
}

Result<SafetensorsHeader> parse_safetensors_header(std::string_view text, std::uint64_t data_bytes,
                                                   const std::string &where) {
  Json j;
  std::optional<std::string> duplicate;
  try {
    j = parse_json_noting_duplicates(text, duplicate);
  } catch (const Json::parse_error &e) {
    return make_error(fmt::format("{}: header JSON is malformed at byte {} of the header: {}",
                                  where, e.byte + 8, e.what()));
  } catch (const Json::exception &e) { // e.g. a number too large for any JSON number type
    return make_error(fmt::format("{}: header JSON is malformed: {}", where, e.what()));
  }
  if (!j.is_object())
    return make_error(where + ": header is not a JSON object of tensors");
  if (duplicate)
    return make_error(fmt::format("{}: \"{}\" appears twice in the header (each tensor and key "
                                  "must be named once): the file is corrupt",
                                  where, *duplicate));
  SafetensorsHeader h;
  h.data_bytes = data_bytes;
  for (const auto &[name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object())
        return make_error(where + ": \"__metadata__\" must be an object of strings");
      for (const auto &[k, mv] : v.items()) {
        if (!mv.is_string())
          return make_error(fmt::format("{}: __metadata__.{} must be a string", where, k));
        h.metadata[k] = mv.get<std::string>();
      }
      continue;
    }
    const std::string &tensor = name; // a structured binding; clang before 16 cannot capture it
    auto bad = [&](const std::string &what) {
      return make_error(fmt::format("{}: tensor \"{}\": {}", where, tensor, what));
    };
    if (!v.is_object())
      return bad("entry must be an object with dtype, shape and data_offsets");
    SafeTensor t;
    t.name = name;
    auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string())
      return bad("missing \"dtype\" string");
    t.dtype = dt->get<std::string>();
    std::uint64_t esize = safetensors_dtype_size(t.dtype);
    if (esize == 0)
      return bad("unknown dtype \"" + t.dtype +
                 "\" (known: BOOL U8 I8 F8_E4M3 F8_E5M2 F8_E8M0 I16 U16 F16 BF16 I32 U32 F32 "
                 "F64 I64 U64)");
    auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array())
      return bad("missing \"shape\" array");
    std::uint64_t elements = 1;
    for (const auto &d : *sh) {
      if (!d.is_number_unsigned())
        return bad("shape entries must be non-negative integers");
      t.shape.push_back(d.get<std::uint64_t>());
      if (mul_overflows(elements, t.shape.back(), elements))
        return bad("shape's element count overflows 64 bits");
    }
    std::uint64_t nbytes = 0;
    if (mul_overflows(elements, esize, nbytes))
      return bad("shape's byte size overflows 64 bits");
    auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      return bad("\"data_offsets\" must be [begin, end] (non-negative integers)");
    t.begin = (*off)[0].get<std::uint64_t>();
    t.end = (*off)[1].get<std::uint64_t>();
    if (t.end < t.begin)
      return bad(fmt::format("data_offsets [{}, {}] end before they begin", t.begin, t.end));
    if (t.end > data_bytes)
      return bad(fmt::format("data_offsets [{}, {}] run past the data buffer ({} bytes)", t.begin,
                             t.end, data_bytes));
    if (t.end - t.begin != nbytes)
      return bad(fmt::format("data_offsets cover {} bytes but {} x {} needs {}", t.end - t.begin,
                             t.dtype, elements, nbytes));
    h.tensors.push_back(std::move(t));
  }
  // The offsets must tile the buffer: no overlap, no hole, nothing after the last tensor
  // (as the reference implementation checks).
  std::vector<const SafeTensor *> sorted;
  for (const auto &t : h.tensors)
    sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](const SafeTensor *a, const SafeTensor *b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t at = 0;
  const SafeTensor *prev = nullptr;
  for (const auto *t : sorted) {
    if (t->begin < at)
      return make_error(fmt::format("{}: tensors \"{}\" and \"{}\" overlap (bytes {}..{})", where,
                                    prev->name, t->name, t->begin, at));
    if (t->begin > at)
      return make_error(fmt::format("{}: bytes {}..{} of the data buffer belong to no tensor "
                                    "(before \"{}\")",
                                    where, at, t->begin, t->name));
    at = t->end;
    prev = t;
  }
  if (at != data_bytes)
    return make_error(fmt::format("{}: the tensors cover {} bytes but the data buffer holds {}: "
                                  "the file is truncated or has trailing bytes",
                                  where, at, data_bytes));
  return h;
}

Result<SafetensorsHeader> read_safetensors(const std::string &path) {
  // Only the header is read, never the tensors (a checkpoint can be hundreds of GB).
  DLRIG_TRY(auto first, read_regular_file_head(path, 8));
  DLRIG_TRY(auto n, parse_safetensors_length(first.bytes, first.size, path));
  DLRIG_TRY(auto head, read_regular_file_head(path, static_cast<std::size_t>(8 + n)));
  if (head.bytes.size() != 8 + n)
    return make_error(path + ": truncated inside the header");
  return parse_safetensors_header(std::string_view(head.bytes).substr(8), head.size - 8 - n, path);
}

Checkpoint summarise_checkpoint(std::vector<SafeTensor> tensors, std::vector<std::string> files) {
  Checkpoint c;
  c.files = std::move(files);
  for (const auto &t : tensors) {
    if (is_buffer(t.name))
      continue;
    c.params += t.elements();
    c.weight_bytes += t.end - t.begin;
    c.params_by_dtype[t.dtype] += t.elements();
  }
  c.tensors = std::move(tensors);
  return c;
}

Result<std::map<std::string, std::string>> parse_safetensors_index(std::string_view text,
                                                                   const std::string &where) {
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error &e) {
    return make_error(fmt::format("{}: malformed JSON at byte {}: {}", where, e.byte, e.what()));
  } catch (const Json::exception &e) {
    return make_error(fmt::format("{}: malformed JSON: {}", where, e.what()));
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    return make_error(where +
                      ": no \"weight_map\" object (expected a model.safetensors.index.json)");
  std::map<std::string, std::string> map;
  for (const auto &[tensor, file] : j["weight_map"].items()) {
    if (!file.is_string())
      return make_error(fmt::format("{}: weight_map.{} must be a file name", where, tensor));
    auto f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
      return make_error(fmt::format("{}: weight_map.{}: \"{}\" is not a file name in the same "
                                    "folder",
                                    where, tensor, f));
    map[tensor] = f;
  }
  if (map.empty())
    return make_error(where + ": \"weight_map\" is empty");
  return map;
}

Result<Checkpoint> read_checkpoint(const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "model.safetensors.index.json", ec))
      p /= "model.safetensors.index.json";
    else if (fs::exists(p / "model.safetensors", ec))
      p /= "model.safetensors";
    else
      return make_error(path + ": no model.safetensors.index.json or model.safetensors in this "
                               "folder");
  }
  if (p.filename().string().ends_with(".index.json")) {
    DLRIG_TRY(auto text, read_regular_file(p.string(), 64'000'000, "safetensors index"));
    DLRIG_TRY(auto map, parse_safetensors_index(text, p.string()));
    std::set<std::string> shards;
    for (const auto &[t, f] : map)
      shards.insert(f);
    std::vector<SafeTensor> all;
    std::vector<std::string> files;
    std::set<std::string> seen;
    for (const auto &f : shards) {
      auto shard = (p.parent_path() / f).string();
      DLRIG_TRY(auto h, read_safetensors(shard));
      for (auto &t : h.tensors) {
        auto it = map.find(t.name);
        if (it != map.end() && it->second != f)
          return make_error(fmt::format("{}: tensor \"{}\" is in {} but the index maps it to {}",
                                        p.string(), t.name, f, it->second));
        if (!seen.insert(t.name).second)
          return make_error(fmt::format("{}: tensor \"{}\" is stored in more than one shard",
                                        p.string(), t.name));
        all.push_back(std::move(t));
      }
      files.push_back(shard);
    }
    for (const auto &[t, f] : map)
      if (!seen.count(t))
        return make_error(fmt::format("{}: the index maps \"{}\" to {} but that shard does not "
                                      "hold it",
                                      p.string(), t, f));
    return summarise_checkpoint(std::move(all), std::move(files));
  }
  DLRIG_TRY(auto h, read_safetensors(p.string()));
  return summarise_checkpoint(std::move(h.tensors), {p.string()});
}

} // namespace dlrig::fit
