// What SDPA's fused kernels save on a current stack (docs/fit.md "Activations", SDPA's saved
// tensors): from torch 2.5 the output projection reads the kernel's saved output itself (no tensor
// of its own when q, k and v have their own projections) and transformers' sdpa_attention_forward
// hands grouped K/V to the kernel unexpanded (enable_gqa=True). Measured on an H200 with torch
// 2.11 and transformers 5.17 (tests/data/measured/h200/saved-tensors/llama.txt: the saved key is
// [b, 8, s, 64] beside a [b, 32, s, 64] query).
#include "dlrig/fit/memory.hpp"
#include "dlrig/model/model.hpp"
#include "unit/fit/models.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace dlrig::fit {
namespace {

Run training(const char *torch) {
  Run run;
  run.precision = Precision::bf16_amp;
  run.seq = 4096;
  run.batch = 8;
  run.torch_version = torch;
  return run;
}

double activations(const test::Model &m, const Run &run, const GpuTarget &gpu = test::gpu_80gb()) {
  auto e = estimate_memory(m, run, gpu);
  EXPECT_EQ(e.peak_phase, "forward/backward") << m.arch.name;
  return static_cast<double>(e.activations);
}

std::string sdpa_note(const test::Model &m, const Run &run,
                      const GpuTarget &gpu = test::gpu_80gb()) {
  for (const auto &n : estimate_memory(m, run, gpu).notes)
    if (n.starts_with("SDPA with grouped K/V"))
      return n;
  return "";
}

test::Model llama_type(test::Model m, const char *type = "llama") {
  m.arch.hf_model_type = type;
  return m;
}

// Llama-3-8B (32 query heads, 8 K/V heads of 128): torch 2.4 keeps repeat_kv's K and V at every
// query head and o_proj's own input; torch 2.11 keeps K and V at 8 heads and no o_proj input.
TEST(SdpaSaved, GroupedKvAndSharedOutputFromTorch25) {
  const auto m = llama_type(test::llama3_8b());
  const double s = 4096, b = 8, ab = 2, layers = 32, q_dim = 4096, kv_dim = 1024;
  const double repeated_kv = 2 * (q_dim - kv_dim) * s * b * ab;
  const double o_input = q_dim * s * b * ab;
  const double old = activations(m, training("2.4.1"));
  const double now = activations(m, training("2.11.0"));
  EXPECT_NEAR(old - now, layers * (repeated_kv + o_input), 2);
  EXPECT_EQ(activations(m, training("2.5.0")), now);
  EXPECT_EQ(activations(m, training("")), now) << "an unknown torch is a current one";
  const auto note = sdpa_note(m, training("2.11.0"));
  EXPECT_NE(note.find("at their 8 heads"), std::string::npos) << note;
  EXPECT_NE(note.find("transformers >= 4.54.0"), std::string::npos) << note;
  EXPECT_NE(note.find("+12.00 GiB"), std::string::npos) << note; // 32 x 2 x 3072 x s b x 2 B
  EXPECT_EQ(sdpa_note(m, training("2.4.1")), "");
}

// Without grouped heads only o_proj's input goes; a model type whose attention repeats K/V
// itself (not in data/model_types.json "sdpa_grouped_kv") keeps them repeated.
TEST(SdpaSaved, MultiHeadAndUnlistedTypesLoseOnlyTheOProjInput) {
  const double s = 4096, b = 8, ab = 2;
  const auto mha = llama_type(test::llama(32, 4096, 32, 32, 11008));
  EXPECT_NEAR(activations(mha, training("2.4.1")) - activations(mha, training("2.11.0")),
              32 * 4096 * s * b * ab, 2);
  EXPECT_EQ(sdpa_note(mha, training("2.11.0")), "");
  const auto other = llama_type(test::llama3_8b(), "some_new_type");
  EXPECT_NEAR(activations(other, training("2.4.1")) - activations(other, training("2.11.0")),
              32 * 4096 * s * b * ab, 2);
}

// Falcon's new decoder architecture: K/V broadcast to every head by FalconAttention itself, and
// one fused query_key_value, which keeps o_proj's own input (no listing shows otherwise): nothing
// changes.
TEST(SdpaSaved, FalconKeepsItsCount) {
  auto arch = model::model_from_config(Json{{"model_type", "falcon"},
                                            {"hidden_size", 1024},
                                            {"num_hidden_layers", 8},
                                            {"num_attention_heads", 16},
                                            {"num_kv_heads", 4},
                                            {"new_decoder_architecture", true},
                                            {"vocab_size", 32000},
                                            {"ffn_hidden_size", 4096}},
                                       "falcon-test");
  ASSERT_TRUE(arch.ok()) << arch.error().message;
  ASSERT_EQ(arch->kv_heads, 4);
  const test::Model m = test::make(*arch, model::derive_params(*arch));
  EXPECT_EQ(activations(m, training("2.4.1")), activations(m, training("2.11.0")));
}

// Where transformers builds a mask (a sequence as long as the sliding window), where head_dim
// passes 256, and on GPUs before compute capability 8.0 (SDPA's math kernel), K and V stay
// repeated, and the note says why.
TEST(SdpaSaved, RepeatedWhereTheGroupedPathDoesNotRun) {
  auto mistral = llama_type(test::llama(32, 4096, 32, 8, 14336), "mistral");
  mistral.arch.sliding_window = 4096;
  const double s = 4096, b = 8, ab = 2;
  EXPECT_NEAR(activations(mistral, training("2.4.1")) - activations(mistral, training("2.11.0")),
              32 * 4096 * s * b * ab, 2)
      << "o_proj's input only";
  EXPECT_NE(sdpa_note(mistral, training("2.11.0")).find("sliding window (4096)"),
            std::string::npos);
  fit::Run shorter = training("2.11.0");
  shorter.seq = 2048;
  EXPECT_NE(sdpa_note(mistral, shorter).find("at their 8 heads"), std::string::npos);

  auto wide = llama_type(test::llama(8, 4096, 8, 2, 11008));
  ASSERT_EQ(wide.arch.head_dim, 512);
  EXPECT_NE(sdpa_note(wide, training("2.11.0")).find("head_dim 512 > 256"), std::string::npos);

  const auto m = llama_type(test::llama3_8b());
  auto v100 = test::gpu_80gb();
  v100.compute_capability = "7.0";
  EXPECT_NEAR(activations(m, training("2.4.1"), v100) - activations(m, training("2.11.0"), v100),
              32 * 4096 * s * b * ab, 2);
  EXPECT_NE(sdpa_note(m, training("2.11.0"), v100).find("math kernel"), std::string::npos);
}

Run with_transformers(Run run, const char *version) {
  run.transformers_version = version;
  return run;
}

// The grouped path needs the type's transformers release (data/model_types.json): a known older
// one counts K and V repeated, with a note naming it and nothing assumed; a known newer one and an
// unknown one count them grouped, and only the unknown one says what was assumed.
TEST(SdpaSaved, TransformersVersionGatesGroupedKv) {
  const auto m = llama_type(test::llama3_8b());
  const double s = 4096, b = 8, ab = 2, layers = 32, q_dim = 4096, kv_dim = 1024;
  const double repeated_kv = 2 * (q_dim - kv_dim) * s * b * ab;
  const fit::Run now = training("2.11.0");
  const double unknown = activations(m, now);
  const double older = activations(m, with_transformers(now, "4.46.3"));
  EXPECT_NEAR(older - unknown, layers * repeated_kv, 2);
  EXPECT_EQ(activations(m, with_transformers(now, "4.54.0")), unknown);
  EXPECT_EQ(activations(m, with_transformers(now, "5.17.0")), unknown);
  EXPECT_EQ(activations(m, with_transformers(now, "4.53.3")), older);

  const auto old_note = sdpa_note(m, with_transformers(now, "4.46.3"));
  EXPECT_NE(old_note.find("counted repeated to the 32 query heads: transformers 4.46.3"),
            std::string::npos)
      << old_note;
  EXPECT_EQ(old_note.find("not known"), std::string::npos) << old_note;
  const auto new_note = sdpa_note(m, with_transformers(now, "5.17.0"));
  EXPECT_NE(new_note.find("at their 8 heads"), std::string::npos) << new_note;
  EXPECT_NE(new_note.find("transformers 5.17.0; padded batches"), std::string::npos) << new_note;
  EXPECT_EQ(new_note.find("not known"), std::string::npos) << new_note;
  const auto unknown_note = sdpa_note(m, now);
  EXPECT_NE(unknown_note.find("transformers' version is not known (--transformers VERSION), "
                              "taken as >= 4.54.0"),
            std::string::npos)
      << unknown_note;

  // StableLM's attention takes the path from 5.0.0: 4.57.1 still repeats.
  const auto stablelm = llama_type(test::llama3_8b(), "stablelm");
  EXPECT_NEAR(activations(stablelm, with_transformers(now, "4.57.1")) -
                  activations(stablelm, with_transformers(now, "5.0.0")),
              layers * repeated_kv, 2);
  // Before torch 2.5 transformers' release changes nothing.
  EXPECT_EQ(activations(m, with_transformers(training("2.4.1"), "5.17.0")),
            activations(m, training("2.4.1")));
}

// Eager attention and flash-attention are not SDPA: unchanged by the torch release.
TEST(SdpaSaved, OtherAttentionPathsUnchanged) {
  const auto m = llama_type(test::llama3_8b());
  for (Attention a : {Attention::eager, Attention::flash}) {
    fit::Run old = training("2.4.1"), now = training("2.11.0");
    old.attention = now.attention = a;
    old.seq = now.seq = 1024;
    EXPECT_EQ(activations(m, old), activations(m, now));
  }
}

} // namespace
} // namespace dlrig::fit
