#pragma once
// The safetensors header reader: tensor names, dtypes and shapes of a checkpoint, read from the
// header only (never the weights). Format (huggingface/safetensors README, src/tensor.rs): an
// 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets}} with
// an optional "__metadata__" object, then the data buffer the offsets index into.
//
// Hostile input is rejected with a message naming the file and the place: a header length beyond
// the limit or the file, truncated or malformed JSON, unknown dtypes, shapes whose element count
// overflows, offsets that do not match dtype x shape, that leave the buffer, overlap or leave
// holes.
#include "dlrig/core/result.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::fit {

// The safetensors reference implementation refuses headers over 100 MB (memory.md §2.1).
inline constexpr std::uint64_t kSafetensorsMaxHeader = 100'000'000;

struct SafeTensor {
  std::string name;
  std::string dtype;                // as stored: F16, BF16, F32, I64, ...
  std::vector<std::uint64_t> shape; // empty = scalar
  std::uint64_t begin = 0;          // byte offsets into the data buffer
  std::uint64_t end = 0;
  std::uint64_t elements() const; // product of shape (validated not to overflow)
};

struct SafetensorsHeader {
  std::vector<SafeTensor> tensors; // in header order
  std::map<std::string, std::string> metadata;
  std::uint64_t data_bytes = 0; // size of the data buffer the offsets cover
};

// Bytes per element of a safetensors dtype; 0 for an unknown dtype.
std::uint64_t safetensors_dtype_size(std::string_view dtype);

// Parses and validates the JSON header. data_bytes is the size of the data buffer after the
// header (file size - 8 - N); the offsets must tile it exactly. `where` names the file in errors.
Result<SafetensorsHeader> parse_safetensors_header(std::string_view json, std::uint64_t data_bytes,
                                                   const std::string &where);

// Parses the first 8 bytes (the header length) against the file size; errors when the length is
// absurd (over the limit or past the end of the file).
Result<std::uint64_t> parse_safetensors_length(std::string_view first8, std::uint64_t file_size,
                                               const std::string &where);

// Reads one .safetensors file's header (opens the file, reads 8 + N bytes, never the weights).
Result<SafetensorsHeader> read_safetensors(const std::string &path);

// A checkpoint: one file or a sharded folder (model.safetensors.index.json + its shards).
struct Checkpoint {
  std::vector<std::string> files;  // files read
  std::vector<SafeTensor> tensors; // all tensors of all shards
  std::uint64_t params = 0;        // elements of the parameters (buffers such as inv_freq excluded)
  std::uint64_t weight_bytes = 0;  // bytes of the parameters as stored
  std::map<std::string, std::uint64_t> params_by_dtype;
};

// Sums the tensors of the headers into a Checkpoint (pure).
Checkpoint summarise_checkpoint(std::vector<SafeTensor> tensors, std::vector<std::string> files);

// Parses a model.safetensors.index.json: the shard file of each tensor (weight_map). Errors name
// the file and what is wrong.
Result<std::map<std::string, std::string>> parse_safetensors_index(std::string_view json,
                                                                   const std::string &where);

// Reads a .safetensors file, a model.safetensors.index.json, or a folder holding either (sharded
// index first, then model.safetensors). Every shard named by the index must exist and hold the
// tensors the index maps to it.
Result<Checkpoint> read_checkpoint(const std::string &path);

} // namespace dlrig::fit
