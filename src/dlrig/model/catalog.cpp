// The model catalog: data/models.json, one config.json per model plus its catalog fields, loaded
// through model_from_config so that the catalog and user configs take the same path.
#include "dlrig/core/embedded.hpp"
#include "dlrig/core/exit_code.hpp"
#include "dlrig/model/model.hpp"

#include <fmt/format.h>

#include <array>
#include <set>
#include <utility>

namespace dlrig::model {
namespace {

constexpr std::array<std::pair<ModelFamily, std::string_view>, 6> family_names{{
    {ModelFamily::decoder, "decoder"},
    {ModelFamily::moe_decoder, "moe_decoder"},
    {ModelFamily::encoder, "encoder"},
    {ModelFamily::encoder_decoder, "encoder_decoder"},
    {ModelFamily::cnn, "cnn"},
    {ModelFamily::unet, "unet"},
}};

// Catalog fields that are not part of the model's config.json.
constexpr std::array<const char *, 6> catalog_keys{
    "name", "display_name", "family", "published_params", "published_rounded", "source"};

bool valid_name(std::string_view name) {
  if (name.empty())
    return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
      return false;
  return true;
}

// "175B", "7B", "1.5B", "110M": a rounded figure as model cards print it.
bool valid_rounded(std::string_view text) {
  if (text.size() < 2 || (text.back() != 'B' && text.back() != 'M'))
    return false;
  bool digit = false;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c >= '0' && c <= '9')
      digit = true;
    else if (c != '.')
      return false;
  }
  return digit;
}

ModelArch parse_row(const Json &row, std::size_t index, std::string_view origin,
                    std::set<std::string> &seen) {
  auto fail = [&](const std::string &who, const std::string &what) -> void {
    throw Failure(ExitCode::internal, fmt::format("{}: model {}: {}", origin, who, what));
  };
  std::string who = fmt::format("#{}", index + 1);
  if (!row.is_object())
    fail(who, "a row must be a JSON object");
  auto text = [&](const char *key) {
    if (!row.contains(key) || !row.at(key).is_string() || row.at(key).get<std::string>().empty())
      fail(who, fmt::format("field '{}' must be a non-empty string", key));
    return row.at(key).get<std::string>();
  };
  std::string name = text("name");
  who = fmt::format("'{}'", name);
  if (!valid_name(name))
    fail(who, "field 'name' must be lower case letters, digits, '-', '.' or '_'");
  if (!seen.insert(name).second)
    fail(who, "field 'name' repeats an earlier row");

  Json config = row;
  for (const char *key : catalog_keys)
    config.erase(key);
  auto parsed = model_from_config(config, name);
  if (!parsed)
    throw Failure(ExitCode::internal, fmt::format("{}: model {}", origin, parsed.error().message));
  ModelArch m = std::move(parsed).value();

  m.display_name = text("display_name");
  m.source = text("source");
  auto family = parse_model_family(text("family"));
  if (!family)
    fail(who, family.error().message);
  if (*family != m.family)
    fail(who, fmt::format("field 'family' = \"{}\" but model_type '{}' is a {} model",
                          to_string(*family), m.hf_model_type, to_string(m.family)));
  if (!row.contains("published_params"))
    fail(who, "field 'published_params' is missing (an integer, or null with published_rounded "
              "and the reason in source)");
  const Json &pub = row.at("published_params");
  if (pub.is_null()) {
    m.published_rounded = text("published_rounded");
    if (!valid_rounded(m.published_rounded))
      fail(who, fmt::format("field 'published_rounded' = \"{}\" must look like 175B or 110M",
                            m.published_rounded));
  } else if (pub.is_number_integer() && pub.get<std::int64_t>() > 0) {
    m.published_params = pub.get<std::int64_t>();
    if (row.contains("published_rounded"))
      m.published_rounded = text("published_rounded");
  } else {
    fail(who, fmt::format("field 'published_params' must be a positive integer or null, got {}",
                          pub.dump()));
  }
  return m;
}

} // namespace

std::string_view to_string(ModelFamily family) {
  for (const auto &[f, name] : family_names)
    if (f == family)
      return name;
  return "unknown";
}

Result<ModelFamily> parse_model_family(std::string_view text) {
  for (const auto &[f, name] : family_names)
    if (name == text)
      return f;
  return make_error(fmt::format("family \"{}\" is not one of decoder, moe_decoder, encoder, "
                                "encoder_decoder, cnn, unet",
                                text));
}

std::vector<ModelArch> parse_model_catalog(std::string_view text, std::string_view origin) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error &e) {
    throw Failure(ExitCode::internal,
                  fmt::format("{}: not valid JSON at byte {}: {}", origin, e.byte, e.what()));
  }
  if (!doc.is_object() || !doc.contains("models") || !doc.at("models").is_array())
    throw Failure(ExitCode::internal,
                  fmt::format("{}: expected an object with a \"models\" list", origin));
  std::vector<ModelArch> out;
  std::set<std::string> seen;
  const Json &rows = doc.at("models");
  for (std::size_t i = 0; i < rows.size(); ++i)
    out.push_back(parse_row(rows[i], i, origin, seen));
  return out;
}

Json to_json(const ModelArch &m) {
  Json j;
  j["name"] = m.name;
  j["display_name"] = m.display_name;
  j["family"] = to_string(m.family);
  j["model_type"] = m.hf_model_type;
  j["params"] = derive_params(m);
  if (m.family == ModelFamily::moe_decoder)
    j["active_params"] = active_params(m);
  j["published_params"] = m.published_params;
  if (!m.published_rounded.empty())
    j["published_rounded"] = m.published_rounded;
  Json h;
  switch (m.family) {
  case ModelFamily::cnn:
    h = {{"block", m.cnn.block},
         {"stage_blocks", m.cnn.stage_blocks},
         {"stage_widths", m.cnn.stage_widths},
         {"stem_width", m.cnn.stem_width},
         {"num_classes", m.cnn.num_classes},
         {"image_size", m.image_size}};
    break;
  case ModelFamily::unet:
    h = {{"block_out_channels", m.unet.block_out_channels},
         {"down_block_types", m.unet.down_block_types},
         {"up_block_types", m.unet.up_block_types},
         {"layers_per_block", m.unet.layers_per_block},
         {"attention_heads", m.unet.attention_heads},
         {"transformer_layers", m.unet.transformer_layers},
         {"cross_attention_dim", m.unet.cross_attention_dim},
         {"sample_size", m.unet.sample_size},
         {"vae_scale_factor", m.unet.vae_scale_factor}};
    break;
  default:
    h = {{"hidden", m.hidden},       {"layers", m.layers},     {"heads", m.heads},
         {"kv_heads", m.kv_heads},   {"head_dim", m.head_dim}, {"intermediate", m.intermediate},
         {"gated_mlp", m.gated_mlp}, {"norm", m.norm}};
    if (m.vocab > 0) {
      h["vocab"] = m.vocab;
      h["tied_embeddings"] = m.tied_embeddings;
    }
    if (m.max_positions > 0)
      h["max_positions"] = m.max_positions;
    if (m.decoder_layers > 0)
      h["decoder_layers"] = m.decoder_layers;
    if (m.experts > 0) {
      h["experts"] = m.experts;
      h["experts_per_token"] = m.experts_per_token;
    }
    if (m.sliding_window > 0) {
      h["sliding_window"] = m.sliding_window;
      h["sliding_layers"] = m.sliding_layers;
    }
    if (m.image_size > 0) {
      h["image_size"] = m.image_size;
      h["patch_size"] = m.patch_size;
    }
  }
  j["hyperparameters"] = std::move(h);
  j["source"] = m.source;
  j["config"] = m.extra;
  return j;
}

std::vector<ModelArch> load_model_catalog() {
  auto bytes = embedded_file("models.json");
  if (!bytes)
    throw Failure(ExitCode::internal, "data/models.json was not embedded into this build");
  return parse_model_catalog(*bytes, "data/models.json");
}

} // namespace dlrig::model
