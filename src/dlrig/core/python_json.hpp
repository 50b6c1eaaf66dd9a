#pragma once
// config.json as transformers writes it: Python's json.dumps (allow_nan=True, the default that
// PretrainedConfig.to_json_string uses) writes the non-finite floats as the bare words NaN,
// Infinity and -Infinity, which strict JSON has not (Mamba-2 configs' time_step_limit holds
// [0.0, Infinity]).
#include <string>
#include <string_view>

namespace dlrig {

// The text with each NaN, Infinity and -Infinity outside a string turned into null (dlrig sizes
// no model from a non-finite number: a field it reads that holds one is then refused or taken as
// absent, as null is); everything else, strings included, unchanged.
std::string python_json_to_json(std::string_view text);

} // namespace dlrig
