#pragma once
// nlohmann::json with std::optional mapped to null, so that unknown readings serialise as null
// and read back as nullopt.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace dlrig {

// Checks that a JSON number fits the integer type it is read into, so that -1 never wraps into
// 2^64-1 and 1e26 never converts (undefined behaviour) into an int. Unsigned readings (byte
// counts, error counts) accept 0..2^63-1: no real reading is larger, and the analyses add and
// multiply them as signed 64-bit values. Throws nlohmann's out_of_range with the value's JSON
// pointer (JSON_DIAGNOSTICS), which the readers turn into "field /x/y: ...". Non-numbers are left
// to the type check of get<T>().
template <class T, class J> void check_json_number(const J &j) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!j.is_number())
      return;
    using L = std::numeric_limits<T>;
    constexpr std::int64_t lo = std::is_signed_v<T> ? static_cast<std::int64_t>(L::min()) : 0;
    constexpr std::uint64_t hi =
        static_cast<std::uint64_t>(L::max()) > static_cast<std::uint64_t>(INT64_MAX)
            ? static_cast<std::uint64_t>(INT64_MAX)
            : static_cast<std::uint64_t>(L::max());
    bool ok = false;
    if (j.is_number_unsigned()) {
      ok = j.template get<std::uint64_t>() <= hi;
    } else if (j.is_number_integer()) {
      auto v = j.template get<std::int64_t>();
      ok = v >= lo && (v < 0 || static_cast<std::uint64_t>(v) <= hi);
    } else {
      double d = j.template get<double>();
      ok = std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(lo) &&
           d <= static_cast<double>(hi);
    }
    if (!ok)
      throw nlohmann::detail::out_of_range::create(
          406,
          "the number " + j.dump() + " is out of range: expected a whole number from " +
              std::to_string(lo) + " to " + std::to_string(hi),
          &j);
  }
}

} // namespace dlrig

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
    else {
      dlrig::check_json_number<T>(j);
      v = j.get<T>();
    }
  }
};
} // namespace nlohmann

namespace dlrig {
using Json = nlohmann::json;

// The member `key` of `j` when `j` is an object that has it, else null. For documents from outside
// (a results database's records, edited by hand): unlike the const operator[], never undefined
// behaviour on a missing member; unlike value(), never a throw on a member of another type.
inline const Json &member(const Json &j, std::string_view key) {
  static const Json none;
  if (!j.is_object())
    return none;
  auto it = j.find(key);
  return it == j.end() ? none : *it;
}
// The member as a string / a number when it is one, else nullopt.
inline std::optional<std::string> member_text(const Json &j, std::string_view key) {
  const Json &m = member(j, key);
  return m.is_string() ? std::optional<std::string>(m.get<std::string>()) : std::nullopt;
}
inline std::optional<double> member_number(const Json &j, std::string_view key) {
  const Json &m = member(j, key);
  return m.is_number() ? std::optional<double>(m.get<double>()) : std::nullopt;
}

// JSON text for output. A string that is not valid UTF-8 (the machine's bytes: a Latin-1 PATH, a
// hostname, an NVML name) becomes U+FFFD where it is invalid instead of throwing type_error 316;
// the printer layer (output/print.hpp) fixes documents first and says where, this is the floor.
inline std::string dump_json(const Json &j, int indent = 2) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// Json::parse that also reports the first key repeated within one object (JSON allows it and the
// library silently keeps the last one; a file whose keys repeat says two different things).
// `duplicate` is set to that key, or left nullopt. Throws what Json::parse throws.
inline Json parse_json_noting_duplicates(std::string_view text,
                                         std::optional<std::string> &duplicate) {
  std::vector<std::set<std::string>> open_objects;
  auto note = [&](int, Json::parse_event_t event, Json &parsed) {
    if (event == Json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      if (!open_objects.empty())
        open_objects.pop_back();
    } else if (event == Json::parse_event_t::key && !open_objects.empty() && parsed.is_string()) {
      if (!open_objects.back().insert(parsed.get<std::string>()).second && !duplicate)
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  return Json::parse(text.begin(), text.end(), note);
}

} // namespace dlrig

// Serialises every listed member; reading tolerates missing members (they keep their default,
// which for readings is nullopt = unknown).
#define DLRIG_JSON(Type, ...) NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Type, __VA_ARGS__)
