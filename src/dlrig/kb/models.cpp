// Placeholder until the model catalog lands (kb/models work): no models known yet.
#include "dlrig/kb/model.hpp"

namespace dlrig::kb {

std::int64_t derive_params(const ModelArch&) { return 0; }

Result<ModelArch> model_from_config(const Json&, const std::string& name) {
  return make_error(name + ": model configs are not read by this build yet");
}

std::vector<ModelArch> load_model_catalog() { return {}; }

} // namespace dlrig::kb
