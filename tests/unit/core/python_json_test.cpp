#include "dlrig/core/python_json.hpp"

#include <gtest/gtest.h>

namespace dlrig {
namespace {

// Python's json.dumps writes non-finite floats as bare words; they become null, strings stay.
TEST(PythonJson, NonFiniteWordsBecomeNullOutsideStrings) {
  EXPECT_EQ(python_json_to_json(R"({"time_step_limit": [0.0, Infinity]})"),
            R"({"time_step_limit": [0.0, null]})");
  EXPECT_EQ(python_json_to_json(R"([-Infinity, NaN, 1])"), R"([null, null, 1])");
  EXPECT_EQ(python_json_to_json(R"({"name": "NaN Infinity \"NaN\" -Infinity"})"),
            R"({"name": "NaN Infinity \"NaN\" -Infinity"})");
  EXPECT_EQ(python_json_to_json(R"({"a\\": NaN})"), R"({"a\\": null})");
  EXPECT_EQ(python_json_to_json(""), "");
  EXPECT_EQ(python_json_to_json("\"unterminated NaN"), "\"unterminated NaN");
}

} // namespace
} // namespace dlrig
