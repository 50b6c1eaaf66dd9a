#pragma once
// Files from data/ compiled into the binary (see cmake/embed.cmake).
#include <optional>
#include <span>
#include <string_view>

namespace dlrig {

struct EmbeddedFile {
  std::string_view name;  // path relative to data/, e.g. "gpus.csv"
  std::string_view bytes; // whole file; static storage
};

std::span<const EmbeddedFile> embedded_files();
// nullopt when no file of that name was embedded.
std::optional<std::string_view> embedded_file(std::string_view name);

} // namespace dlrig
