#include "dlrig/bench/decode.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace dlrig::bench {
namespace {

namespace fs = std::filesystem;

TEST(Decode, GeneratedContentIsNotConstant) {
  const auto rgb = generate_rgb(64, 48, 5);
  ASSERT_EQ(rgb.size(), 64u * 48 * 3);
  double mean = 0, var = 0;
  for (auto v : rgb)
    mean += v;
  mean /= static_cast<double>(rgb.size());
  for (auto v : rgb)
    var += (v - mean) * (v - mean);
  var /= static_cast<double>(rgb.size());
  EXPECT_GT(var, 50.0);
  EXPECT_NE(generate_rgb(64, 48, 5), generate_rgb(64, 48, 6));
}

TEST(Decode, RoundTripKeepsSizeAndQuality) {
  const auto src = generate_rgb(500, 375, 1);
  auto j = encode_jpeg(src, 500, 375, 90);
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_LT(j->size(), src.size() / 4); // it really compressed
  int w = 0, h = 0;
  auto rgb = decode_jpeg(*j, w, h);
  ASSERT_TRUE(rgb.ok()) << rgb.error().message;
  EXPECT_EQ(w, 500);
  EXPECT_EQ(h, 375);
  EXPECT_GE(psnr(src, *rgb), 30.0);
  EXPECT_LT(psnr(src, *rgb), 99.0); // lossy: not byte-identical
}

TEST(Decode, GarbageIsBadInputNotACrash) {
  std::vector<unsigned char> junk = {0xff, 0xd8, 0xff, 0x00, 1, 2, 3};
  int w = 0, h = 0;
  auto r = decode_jpeg(junk, w, h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(r.error().message.rfind("not a readable JPEG: ", 0), 0u) << r.error().message;
}

TEST(Decode, MeasureDecodesEveryImageAndVerifies) {
  auto set = generated_images(1);
  ASSERT_TRUE(set.ok()) << set.error().message;
  ASSERT_EQ(set->size(), 3u);
  auto r = measure_decode(*set, 2, 0.0);
  EXPECT_TRUE(r.verified) << r.failure;
  EXPECT_EQ(r.threads, 2u);
  EXPECT_GE(r.images, 6u); // each thread goes round the set once at least
  EXPECT_GT(r.images_per_s, 0);
}

TEST(Decode, AWrongDimensionFailsVerification) {
  auto set = generated_images(1);
  ASSERT_TRUE(set.ok());
  auto r = measure_decode(*set, 1, 0.0, /*test_corrupt=*/true);
  EXPECT_FALSE(r.verified);
  EXPECT_NE(r.failure.find("decoded as 501x375"), std::string::npos) << r.failure;
}

TEST(Decode, UserImagesFromADirectory) {
  const fs::path dir = fs::temp_directory_path() / ("dlrig-decode-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto j = encode_jpeg(generate_rgb(40, 30, 2), 40, 30, 85);
  ASSERT_TRUE(j.ok());
  {
    std::ofstream(dir / "a.JPG", std::ios::binary)
        .write(reinterpret_cast<const char *>(j->data()), static_cast<std::streamsize>(j->size()));
    std::ofstream(dir / "notes.txt") << "not an image";
  }
  auto imgs = images_from(dir, 100);
  ASSERT_TRUE(imgs.ok()) << imgs.error().message;
  ASSERT_EQ(imgs->size(), 1u);
  EXPECT_EQ((*imgs)[0].width, 40);
  EXPECT_EQ((*imgs)[0].height, 30);
  EXPECT_TRUE(measure_decode(*imgs, 1, 0.0).verified);
  fs::remove(dir / "a.JPG");
  auto none = images_from(dir, 100);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, ErrorKind::bad_input);
  fs::remove_all(dir);
  auto missing = images_from(dir, 100);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::not_found);
}

TEST(Decode, VerdictInPlainWords) {
  EXPECT_EQ(decode_verdict(312.4, 1, std::nullopt), "1 core decodes ~310 images/s");
  DecodeConsumer gpu{"ResNet-50 training on X", 1304.0};
  EXPECT_EQ(decode_verdict(912.0, 4, gpu),
            "4 cores decode ~910 images/s; ResNet-50 training on X consumes ~1300/s: data "
            "loading will limit training (the GPU waits for images) — use more DataLoader "
            "workers on more cores, GPU decoding (DALI, torchvision.io.decode_jpeg on the GPU) or "
            "pre-decoded data");
  EXPECT_EQ(decode_verdict(2800.0, 16, gpu),
            "16 cores decode ~2800 images/s; ResNet-50 training on X consumes ~1300/s: decoding "
            "keeps up (2.1x what training consumes)");
}

} // namespace
} // namespace dlrig::bench
