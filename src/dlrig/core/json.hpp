#pragma once
// nlohmann::json with std::optional mapped to null, so that unknown readings serialise as null
// and read back as nullopt.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace nlohmann {
template <class T> struct adl_serializer<std::optional<T>> {
  static void to_json(json &j, const std::optional<T> &v) {
    if (v)
      j = *v;
    else
      j = nullptr;
  }
  static void from_json(const json &j, std::optional<T> &v) {
    if (j.is_null())
      v = std::nullopt;
    else
      v = j.get<T>();
  }
};
} // namespace nlohmann

namespace dlrig {
using Json = nlohmann::json;

// JSON text for output. A string that is not valid UTF-8 (the machine's bytes: a Latin-1 PATH, a
// hostname, an NVML name) becomes U+FFFD where it is invalid instead of throwing type_error 316;
// the printer layer (output/print.hpp) fixes documents first and says where, this is the floor.
inline std::string dump_json(const Json &j, int indent = 2) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}
} // namespace dlrig

// Serialises every listed member; reading tolerates missing members (they keep their default,
// which for readings is nullopt = unknown).
#define DLRIG_JSON(Type, ...) NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Type, __VA_ARGS__)
