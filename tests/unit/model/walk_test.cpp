#include "dlrig/model/walk.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace dlrig::model {
namespace {

const ModelArch &model(const std::string &name) {
  static const auto catalog = load_model_catalog();
  for (const auto &m : catalog)
    if (m.name == name)
      return m;
  throw std::runtime_error("no catalog model " + name);
}

const Module &find(const std::vector<Module> &modules, const std::string &name) {
  for (const auto &r : modules)
    if (r.name == name)
      return r;
  throw std::runtime_error("no module " + name);
}

double macs(const std::vector<Module> &modules) {
  double total = 0;
  for (const auto &r : modules)
    total += r.macs;
  return total;
}

// torchvision's published num_params: the records' parameters sum to the exact count.
TEST(Walk, ResNetRecordsSumToThePublishedCount) {
  auto r50 = walk(model("resnet-50"), 224);
  ASSERT_TRUE(r50.ok()) << r50.error().message;
  EXPECT_EQ(total_params(*r50), 25'557'032);
  EXPECT_EQ(derive_params(model("resnet-50")), 25'557'032);
  auto r18 = walk(model("resnet-18"), 224);
  ASSERT_TRUE(r18.ok());
  EXPECT_EQ(total_params(*r18), 11'689'512);
}

// torchvision documents ResNet-50 at 4.09 GFLOPS and ResNet-18 at 1.81: multiply-accumulates.
TEST(Walk, ResNetMacsMatchTorchvision) {
  auto r50 = walk(model("resnet-50"), 224);
  ASSERT_TRUE(r50.ok());
  EXPECT_NEAR(macs(*r50), 4.09e9, 0.01e9);
  const auto &c = find(*r50, "layer1.0.conv2"); // 64 → 64, 3×3 at 56×56
  EXPECT_DOUBLE_EQ(c.macs, 64.0 * 64 * 9 * 56 * 56);
  EXPECT_EQ(c.input.elements(), 64 * 56 * 56);
  EXPECT_EQ(find(*r50, "fc").macs, 2048 * 1000);
  auto r18 = walk(model("resnet-18"), 224);
  ASSERT_TRUE(r18.ok());
  EXPECT_NEAR(macs(*r18), 1.81e9, 0.01e9);
}

TEST(Walk, ResNetShapesAndSavedTensorsFollowTorchvision) {
  auto r50 = walk(model("resnet-50"), 224);
  ASSERT_TRUE(r50.ok()) << r50.error().message;
  EXPECT_EQ(find(*r50, "conv1").output.elements(), 64 * 112 * 112);
  EXPECT_EQ(find(*r50, "maxpool").output.height, 56);
  EXPECT_EQ(find(*r50, "maxpool").saved_int64, 64 * 56 * 56); // its indices
  EXPECT_EQ(find(*r50, "layer1.0.conv3").output.channels, 256);
  EXPECT_EQ(find(*r50, "layer2.0.conv2").output.height, 28); // stride on the 3×3 (v1.5)
  EXPECT_EQ(find(*r50, "layer2.0.conv1").output.height, 56);
  EXPECT_EQ(find(*r50, "layer4.2.relu").output.elements(), 2048 * 7 * 7);
  // A BatchNorm keeps its input, a ReLU its output, a convolution nothing of its own.
  EXPECT_EQ(find(*r50, "layer1.0.bn1").saved, 64 * 56 * 56);
  EXPECT_EQ(find(*r50, "layer1.0.relu").saved, 256 * 56 * 56);
  EXPECT_EQ(find(*r50, "layer1.0.conv1").saved, 0);
  EXPECT_EQ(find(*r50, "conv1").block, -1);
  EXPECT_EQ(find(*r50, "layer1.0.downsample.1").block, 0);
  EXPECT_EQ(find(*r50, "layer4.2.relu").block, 15);
  EXPECT_EQ(r50->back().name, "fc");
  EXPECT_EQ(r50->back().output.channels, 1000);
  auto r18 = walk(model("resnet-18"), 256);
  ASSERT_TRUE(r18.ok());
  EXPECT_EQ(find(*r18, "layer4.1.relu").output.elements(), 512 * 8 * 8);
  EXPECT_EQ(find(*r18, "layer2.0.downsample.0").output.height, 32);
  EXPECT_FALSE(walk(model("resnet-18"), 16).ok());
}

// diffusers' num_parameters for SD 1.5's UNet, 2.1's and SDXL's: the records sum to the counts.
TEST(Walk, UnetRecordsSumToThePublishedCounts) {
  for (const char *name : {"sd-1.5-unet", "sd-2.1-unet", "sdxl-unet"}) {
    const auto &m = model(name);
    auto modules = walk(m, default_image_size(m));
    ASSERT_TRUE(modules.ok()) << modules.error().message;
    ASSERT_TRUE(m.published_params.has_value()) << name;
    EXPECT_EQ(total_params(*modules), *m.published_params) << name;
  }
  auto sd = walk(model("sd-1.5-unet"), 512);
  ASSERT_TRUE(sd.ok());
  EXPECT_EQ(total_params(*sd), 859'520'964);
  EXPECT_EQ(default_image_size(model("sd-1.5-unet")), 512);
}

TEST(Walk, UnetRunsOnTheLatent) {
  auto sd = walk(model("sd-1.5-unet"), 512);
  ASSERT_TRUE(sd.ok()) << sd.error().message;
  EXPECT_EQ(find(*sd, "conv_in").output.elements(), 320 * 64 * 64);
  const auto &attn = find(*sd, "down_blocks.0.attentions.1");
  EXPECT_EQ(attn.heads, 8);
  EXPECT_EQ(attn.output.height, 64);
  EXPECT_DOUBLE_EQ(attn.scores, 8.0 * 4096 * 4096); // one layer: heads × (h·w)²
  EXPECT_TRUE(attn.checkpointed);
  EXPECT_EQ(find(*sd, "mid_block.attentions.0").output.height, 8);
  const auto &up = find(*sd, "up_blocks.3.resnets.2");
  EXPECT_EQ(up.output.elements(), 320 * 64 * 64);
  EXPECT_EQ(up.input.channels, 320 + 320); // concatenated with the skip
  EXPECT_EQ(sd->back().name, "conv_out");
  EXPECT_EQ(sd->back().output.elements(), 4 * 64 * 64);
  EXPECT_GT(macs(*sd), 3e11); // SD 1.5's UNet: about 0.4 TMACs per 512 px image
  EXPECT_LT(macs(*sd), 4.5e11);
  auto sd2 = walk(model("sd-2.1-unet"), 768);
  ASSERT_TRUE(sd2.ok());
  EXPECT_EQ(find(*sd2, "conv_in").output.height, 96);
  EXPECT_EQ(find(*sd2, "down_blocks.2.attentions.0").heads, 20);
  auto xl = walk(model("sdxl-unet"), 1024);
  ASSERT_TRUE(xl.ok());
  EXPECT_EQ(find(*xl, "mid_block.attentions.0").transformer_layers, 10);
  EXPECT_EQ(find(*xl, "mid_block.attentions.0").output.height, 32);
  EXPECT_EQ(find(*xl, "down_blocks.1.attentions.0").heads, 10);
  EXPECT_GT(find(*xl, "add_embedding").params, 0);
  std::string e = walk(model("sd-1.5-unet"), 500).error().message;
  EXPECT_NE(e.find("multiple of 64"), std::string::npos) << e;
  EXPECT_FALSE(walk(model("gpt2"), 224).ok());
}

// diffusers: num_attention_heads = num_attention_heads or attention_head_dim, so attention_head_dim
// is the head count whatever its size; cross_attention_dim defaults to 1280.
TEST(Walk, UnetHeadsAndCrossAttentionWidthFollowDiffusers) {
  Json cfg{{"_class_name", "UNet2DConditionModel"},
           {"block_out_channels", {320, 640}},
           {"down_block_types", {"CrossAttnDownBlock2D", "DownBlock2D"}},
           {"up_block_types", {"UpBlock2D", "CrossAttnUpBlock2D"}},
           {"attention_head_dim", 64}};
  auto m = model_from_config(cfg, "small-unet");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->unet.cross_attention_dim, 1280);
  auto modules = walk(*m, 512);
  ASSERT_TRUE(modules.ok()) << modules.error().message;
  EXPECT_EQ(find(*modules, "down_blocks.0.attentions.0").heads, 64);
  cfg["cross_attention_dim"] = 1280;
  auto explicit_width = model_from_config(cfg, "small-unet");
  ASSERT_TRUE(explicit_width.ok());
  EXPECT_EQ(derive_params(*m), derive_params(*explicit_width));
  cfg["cross_attention_dim"] = 768;
  auto narrow = model_from_config(cfg, "small-unet");
  ASSERT_TRUE(narrow.ok());
  // Each attention layer's k and v read the text width: 2 × (1280 − 768) × c per layer, over two
  // down attentions at 320, the mid block's at 640 and three up attentions at 320.
  EXPECT_EQ(derive_params(*m) - derive_params(*narrow),
            2 * (1280 - 768) * (2 * 320 + 640 + 3 * 320));
}

} // namespace
} // namespace dlrig::model
