#include "dlrig/core/exit_code.hpp"
#include "dlrig/core/result.hpp"

#include <gtest/gtest.h>

namespace dlrig {
namespace {

TEST(ErrorKind, MapsToDocumentedExitCodes) {
  EXPECT_EQ(exit_code_for(ErrorKind::usage), ExitCode::usage);
  EXPECT_EQ(exit_code_for(ErrorKind::unsupported), ExitCode::usage);
  EXPECT_EQ(exit_code_for(ErrorKind::bad_input), ExitCode::bad_input);
  EXPECT_EQ(exit_code_for(ErrorKind::not_found), ExitCode::bad_input);
  EXPECT_EQ(exit_code_for(ErrorKind::vendor), ExitCode::unavailable);
  EXPECT_EQ(exit_code_for(ErrorKind::io), ExitCode::io);
  EXPECT_EQ(static_cast<int>(ExitCode::unavailable), 69);
  EXPECT_EQ(static_cast<int>(ExitCode::io), 74);
}

TEST(ErrorKind, ValueOrThrowCarriesTheKind) {
  EXPECT_EQ(value_or_throw(Result<int>(7)), 7);
  try {
    value_or_throw(Result<int>(make_error(ErrorKind::not_found, "x.json: no such file")));
    FAIL() << "no throw";
  } catch (const Failure &f) {
    EXPECT_EQ(f.code(), ExitCode::bad_input);
    EXPECT_STREQ(f.what(), "x.json: no such file");
  }
  try {
    value_or_throw(Result<int>(make_error("--mode x: unknown")), ErrorKind::usage);
    FAIL() << "no throw";
  } catch (const Failure &f) {
    EXPECT_EQ(f.code(), ExitCode::usage);
  }
}

TEST(ErrorKind, VendorErrorKeepsCallAndCode) {
  Error e = vendor_error("nvmlInit_v2", 18, "NVML: driver/library version mismatch");
  EXPECT_EQ(e.kind, ErrorKind::vendor);
  EXPECT_EQ(e.call, "nvmlInit_v2");
  EXPECT_EQ(e.code, 18);
  Error p = prefixed("snap.json: ", e);
  EXPECT_EQ(p.kind, ErrorKind::vendor);
  EXPECT_EQ(p.message, "snap.json: NVML: driver/library version mismatch");
}

} // namespace
} // namespace dlrig
