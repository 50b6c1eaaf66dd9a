#pragma once
// Where the model comes from: a catalog name, a config.json (or a folder holding one), a
// .safetensors file or a sharded folder. Reading files is this module's only I/O; the estimator
// itself stays pure.
#include "dlrig/core/result.hpp"
#include "dlrig/fit/model_input.hpp"
#include "dlrig/kb/kb.hpp"

#include <optional>
#include <string>

namespace dlrig::fit {

// True when spec names a file or folder (it exists, or it looks like a path: a '/', or a .json /
// .safetensors name); a bad one is bad input (exit 65), an unknown catalog name a usage error.
bool names_a_file(const std::string &spec);

// Parses a config.json's text into a model (model::model_from_config); errors name the file and the
// line and column.
Result<model::ModelArch> parse_model_config(std::string_view text, const std::string &where);

// Reads the model a spec names. family is --family, used when a checkpoint has no config.json.
// A Hugging Face repository id that is not a path here ("meta-llama/Llama-3.1-8B") is read from
// its snapshot in the local Hugging Face cache, else from the catalog model whose config.json
// comes from that repository (an assumption says which). Error kinds: usage for a catalog name
// the catalog lacks, not_found for a missing path or an id found in neither, bad_input for a file
// that cannot be used.
Result<ModelInput> load_model(const std::string &spec, std::optional<model::ModelFamily> family,
                              const kb::KnowledgeBase &kb);

} // namespace dlrig::fit
