#pragma once
// data.decode: JPEG decoding rate with libjpeg-turbo (libjpeg API), on images generated in memory
// at typical sizes or on the user's JPEG files: images/s on one core and on all cores.
//
// Generated images have natural-looking content (smooth gradients, a few low-frequency waves and
// a little noise — never constant, which would decode unrealistically fast), encoded at quality
// 90 with 4:2:0 chroma subsampling, as most photo datasets are. Each decoded image is checked:
// its dimensions, and for generated images the PSNR against the source (≥ 30 dB).
#include "dlrig/core/result.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::bench {

struct JpegImage {
  std::vector<unsigned char> jpeg; // the encoded file
  int width = 0, height = 0;
  std::vector<unsigned char> source; // RGB pixels encoded (generated images), else empty
  std::string name;                  // "500x375" or the file's name
};

// An RGB image width × height of natural-looking content from `seed`.
std::vector<unsigned char> generate_rgb(int width, int height, std::uint64_t seed);
// Encodes RGB pixels as a baseline JPEG (4:2:0).
Result<std::vector<unsigned char>> encode_jpeg(const std::vector<unsigned char> &rgb, int width,
                                               int height, int quality);
// Decodes a JPEG to RGB; width and height are set from the header.
Result<std::vector<unsigned char>> decode_jpeg(const std::vector<unsigned char> &jpeg, int &width,
                                               int &height);
// PSNR in dB of b against a (same size); infinity when identical.
double psnr(const std::vector<unsigned char> &a, const std::vector<unsigned char> &b);

// The generated set: ImageNet-like 500×375, 224×224 and 1920×1080, `per_size` of each.
Result<std::vector<JpegImage>> generated_images(int per_size);
// The JPEG files a --data path names (a file, or the *.jpg/*.jpeg files in a directory, at most
// `limit`). not_found when the path does not exist, bad_input when it holds no JPEG.
Result<std::vector<JpegImage>> images_from(const std::filesystem::path &data, std::size_t limit);

struct DecodeResult {
  unsigned threads = 0;
  std::uint64_t images = 0;    // images decoded in the timed run
  double seconds = 0;          // wall time of the timed run
  double images_per_s = 0;     // all threads together
  double megapixels_per_s = 0; // all threads together
  bool verified = true;        // every image had its dimensions (and PSNR ≥ 30 dB when known)
  std::string failure;         // the first verification failure
};

// Decodes the set over and over on `threads` threads for about `seconds` (at least one pass).
// test_corrupt: the verification sees a wrong width (test hook: it must fail).
DecodeResult measure_decode(const std::vector<JpegImage> &images, unsigned threads, double seconds,
                            bool test_corrupt = false);

// What feeds on the decoded images: a model's training on a GPU, as fit's time model sees it.
struct DecodeConsumer {
  std::string what;    // "ResNet-50 training on GeForce RTX 4090 (fit: bf16-amp, batch 256)"
  double images_per_s; // what it consumes
};
// The decoding rate in plain words, against the consumer when there is one:
// "2 cores decode ~600 images/s; ResNet-50 training on ... consumes ~1300/s: data loading will
// limit training — ...". Rates are rounded to two significant figures.
std::string decode_verdict(double images_per_s, unsigned threads,
                           const std::optional<DecodeConsumer> &consumer);

} // namespace dlrig::bench
