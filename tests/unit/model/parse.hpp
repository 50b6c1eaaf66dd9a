#pragma once
// config.json text to a ModelArch for the model tests: the parsed model, or the error's message;
// its linear layers by role.
#include "dlrig/model/model.hpp"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

namespace dlrig::model::test {

inline ModelArch parse(const std::string &text, const std::string &origin = "config.json") {
  auto m = model_from_config_text(text, origin);
  if (!m)
    throw std::runtime_error(m.error().message);
  return *m;
}

inline std::string error_of(const std::string &text) {
  auto m = model_from_config_text(text, "config.json");
  return m ? std::string("(no error)") : m.error().message;
}

// The config is refused with a message that contains `words` (EXPECT_TRUE(refused(...))).
inline ::testing::AssertionResult refused(const std::string &text, const std::string &words) {
  const std::string e = error_of(text);
  if (e.find(words) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "error \"" << e << "\" lacks \"" << words << "\"";
}

// The model's linear layers by role (the last of a role when several share it).
inline std::map<std::string, LinearShape> linears_by_role(const ModelArch &m) {
  std::map<std::string, LinearShape> out;
  for (const auto &l : linear_layers(m))
    out[l.role] = l;
  return out;
}

} // namespace dlrig::model::test
