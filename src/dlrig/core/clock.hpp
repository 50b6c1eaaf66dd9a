#pragma once
// The wall clock, read in one place (snapshot capture time, report time).
#include <string>

namespace dlrig {

// Now, UTC, ISO 8601 to the second: "2026-11-23T21:20:29Z".
std::string utc_now();

} // namespace dlrig
