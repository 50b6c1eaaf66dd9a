#pragma once
// nlohmann::json with std::optional mapped to null, so that unknown readings serialise as null
// and read back as nullopt.
#include <nlohmann/json.hpp>
#include <optional>

namespace nlohmann {
template <class T> struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) {
    if (v)
      j = *v;
    else
      j = nullptr;
  }
  static void from_json(const json& j, std::optional<T>& v) {
    if (j.is_null())
      v = std::nullopt;
    else
      v = j.get<T>();
  }
};
} // namespace nlohmann

namespace dlrig {
using Json = nlohmann::json;
} // namespace dlrig

// Serialises every listed member; reading tolerates missing members (they keep their default,
// which for readings is nullopt = unknown).
#define DLRIG_JSON(Type, ...) NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Type, __VA_ARGS__)
