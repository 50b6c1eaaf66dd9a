#include "dlrig/bench/decode.hpp"
#include "support/cli.hpp"
#include "support/jpeg.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include <sys/stat.h>
#include <unistd.h>

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
  ASSERT_EQ(imgs->images.size(), 1u);
  EXPECT_TRUE(imgs->refused.empty());
  EXPECT_EQ(refused_note(*imgs), "");
  EXPECT_EQ(imgs->images[0].width, 40);
  EXPECT_EQ(imgs->images[0].height, 30);
  EXPECT_TRUE(measure_decode(imgs->images, 1, 0.0).verified);
  fs::remove(dir / "a.JPG");
  auto none = images_from(dir, 100);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, ErrorKind::bad_input);
  fs::remove_all(dir);
  auto missing = images_from(dir, 100);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::not_found);
}

TEST(Decode, TheHandMadeFilesAreRealJpegs) {
  int w = 0, h = 0;
  auto baseline = decode_jpeg(test::hand_made_jpeg(64, 48, false, 1, 64), w, h);
  ASSERT_TRUE(baseline.ok()) << baseline.error().message;
  EXPECT_EQ(w, 64);
  EXPECT_EQ(h, 48);
  auto progressive = decode_jpeg(test::hand_made_jpeg(64, 48, true, 10, 0), w, h);
  ASSERT_TRUE(progressive.ok()) << progressive.error().message;
  EXPECT_EQ(progressive->size(), 64u * 48 * 3);
}

// fuzz_jpeg's seeds, one per encoding a photo dataset holds (fuzz/jpeg_corpus.cpp): each decodes,
// the CMYK one to four channels (libjpeg-turbo refused it as RGB: "Unsupported color conversion
// request", where Pillow opens it; ImageNet's training set has 22, listed in TensorFlow's
// https://github.com/tensorflow/models/blob/master/research/slim/datasets/build_imagenet_data.py).
TEST(Decode, EveryEncodingOfTheFuzzSeedsDecodes) {
  const fs::path dir = fs::path(DLRIG_TEST_DATA) / ".." / ".." / "fuzz" / "corpus" / "jpeg";
  int files = 0;
  for (const auto &e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    int w = 0, h = 0;
    auto r = decode_jpeg(bytes, w, h);
    ASSERT_TRUE(r.ok()) << e.path() << ": " << r.error().message;
    EXPECT_GT(w, 0);
    const std::size_t channels = e.path().filename() == "cmyk.jpg" ? 4 : 3;
    EXPECT_EQ(r->size(), static_cast<std::size_t>(w) * h * channels) << e.path();
    ++files;
  }
  EXPECT_EQ(files, 7);
}

TEST(Decode, AHeaderClaimingMorePixelsThanPillowOpensIsRefusedBeforeAnyPixel) {
  // 236 bytes that libjpeg-turbo would decode into 10.8 GB of RGB (about 8 s a pass here).
  int w = 0, h = 0;
  auto r = decode_jpeg(test::hand_made_jpeg(60000, 60000, false, 1, 100), w, h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(r.error().message,
            "not a readable JPEG: 60000x60000 is 3600000000 pixels, more than the 178956970 "
            "Pillow refuses to open (DecompressionBombError): a DataLoader reading it with PIL "
            "fails too");
}

TEST(Decode, ATruncatedFileIsRefusedAsPillowDoes) {
  auto j = encode_jpeg(generate_rgb(500, 375, 3), 500, 375, 90);
  ASSERT_TRUE(j.ok());
  std::vector<unsigned char> half(j->begin(), j->begin() + static_cast<long>(j->size() / 2));
  int w = 0, h = 0;
  auto r = decode_jpeg(half, w, h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(r.error().message, "not a readable JPEG: the file ends before the image does "
                               "(truncated; Pillow refuses it too: \"image file is truncated\")");
}

TEST(Decode, MoreProgressiveScansThanLibjpegTurbosLimitAreRefused) {
  int w = 0, h = 0;
  EXPECT_TRUE(decode_jpeg(test::hand_made_jpeg(64, 48, true, max_jpeg_scans, 0), w, h).ok());
  auto r = decode_jpeg(test::hand_made_jpeg(64, 48, true, max_jpeg_scans + 1, 0), w, h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_NE(r.error().message.find("more than 500 progressive scans"), std::string::npos)
      << r.error().message;
}

TEST(Decode, UnreadableFilesAreLeftOutAndNamedTheOthersMeasured) {
  const fs::path dir = fs::temp_directory_path() / ("dlrig-refused-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto good = encode_jpeg(generate_rgb(40, 30, 2), 40, 30, 85);
  ASSERT_TRUE(good.ok());
  test::write_bytes(dir / "a.jpg", *good);
  test::write_bytes(dir / "b.jpg", std::vector<unsigned char>(good->begin(), good->begin() + 200));
  test::write_bytes(dir / "c.jpg", test::hand_made_jpeg(60000, 60000, false, 1, 100));
  test::write_bytes(dir / "d.jpg", {'n', 'o', 't'});
  test::write_bytes(dir / "e.jpg", test::hand_made_jpeg(64, 48, true, 600, 0));
  ASSERT_EQ(::mkfifo((dir / "f.jpg").c_str(), 0600), 0); // not a regular file: never opened
  auto set = images_from(dir, 100);
  ASSERT_TRUE(set.ok()) << set.error().message;
  ASSERT_EQ(set->images.size(), 1u);
  EXPECT_EQ(set->images[0].name, "a.jpg");
  ASSERT_EQ(set->refused.size(), 4u);
  EXPECT_EQ(set->refused[0].rfind("b.jpg: not a readable JPEG: the file ends before", 0), 0u);
  EXPECT_EQ(set->refused[1].rfind("c.jpg: not a readable JPEG: 60000x60000 is", 0), 0u);
  EXPECT_EQ(set->refused[2].rfind("d.jpg: not a readable JPEG: ", 0), 0u);
  EXPECT_EQ(set->refused[3].rfind("e.jpg: not a readable JPEG: more than 500", 0), 0u);
  const auto note = refused_note(*set);
  EXPECT_EQ(note.rfind("4 of 5 files left out: b.jpg: not a readable JPEG: the file ends", 0), 0u)
      << note;
  EXPECT_NE(note.find("; and 1 more"), std::string::npos) << note;
  EXPECT_EQ(note.find("e.jpg"), std::string::npos) << note; // three named

  // Only unreadable ones: the error names the folder, the count and the first.
  fs::remove(dir / "a.jpg");
  auto none = images_from(dir, 100);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(none.error().message.rfind("--data " + dir.string() +
                                           ": none of its 4 JPEG files can be decoded, e.g. "
                                           "b.jpg: not a readable JPEG: ",
                                       0),
            0u)
      << none.error().message;
  // One file named: its own reason.
  auto one = images_from(dir / "c.jpg", 100);
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.error().message.rfind(
                "--data " + (dir / "c.jpg").string() + ": not a readable JPEG: 60000x60000", 0),
            0u)
      << one.error().message;
  // A FIFO named as the file is refused at once, not opened (which would wait for a writer).
  auto fifo = images_from(dir / "f.jpg", 100);
  ASSERT_FALSE(fifo.ok());
  EXPECT_EQ(fifo.error().kind, ErrorKind::bad_input);
  EXPECT_NE(fifo.error().message.find("a FIFO (named pipe), not a regular file"), std::string::npos)
      << fifo.error().message;
  fs::remove_all(dir);
}

// ImageFolder's layout (root/CLASS/FILE.jpg): the dataset's root was "no .jpg or .jpeg files
// there". Files come in name order across the folders, named by their path below the root; a
// folder that is a symbolic link is not entered (a link to the root would loop).
TEST(Decode, ADatasetRootFindsTheImagesInItsClassFolders) {
  const fs::path root = fs::temp_directory_path() / ("dlrig-classes-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "n01" / "deeper");
  fs::create_directories(root / "n02");
  auto good = encode_jpeg(generate_rgb(32, 24, 4), 32, 24, 85);
  ASSERT_TRUE(good.ok());
  for (const char *f : {"n01/b.jpg", "n01/a.JPEG", "n01/deeper/c.jpg", "n02/d.jpg", "top.jpg"})
    test::write_bytes(root / f, *good);
  test::write_bytes(root / "n02" / "labels.txt", {'x'});
  fs::create_directory_symlink(root, root / "n03-loop");
  auto all = images_from(root, 100);
  ASSERT_TRUE(all.ok()) << all.error().message;
  std::vector<std::string> names;
  for (const auto &img : all->images)
    names.push_back(img.name);
  EXPECT_EQ(names, (std::vector<std::string>{"n01/a.JPEG", "n01/b.jpg", "n01/deeper/c.jpg",
                                             "n02/d.jpg", "top.jpg"}));
  auto first = images_from(root, 2);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->images.size(), 2u);
  EXPECT_EQ(first->images[1].name, "n01/b.jpg");
  auto empty_root = fs::temp_directory_path() / ("dlrig-noimages-" + std::to_string(::getpid()));
  fs::create_directories(empty_root / "n01");
  auto none = images_from(empty_root, 100);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no .jpg or .jpeg files there (nor in its folders)"),
            std::string::npos)
      << none.error().message;
  fs::remove_all(empty_root);
  fs::remove_all(root);
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
