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
// What a JPEG dlrig did not make may ask of the decoder, as the libraries a training job reads
// its images with limit it. Pixels: Pillow's DecompressionBombError threshold, twice its
// MAX_IMAGE_PIXELS of 89,478,485 (https://pillow.readthedocs.io/en/stable/reference/Image.html,
// "PIL.Image.MAX_IMAGE_PIXELS"); a header of a few bytes can claim 65500 x 65500 (12 GB of RGB).
// Scans: TurboJPEG's limit for a progressive file with TJFLAG_LIMITSCANS, each scan a pass over
// the whole image (turbojpeg.h; the 500 in turbojpeg.c's progress monitor,
// https://github.com/libjpeg-turbo/libjpeg-turbo/blob/2.1.5/turbojpeg.c).
inline constexpr std::uint64_t max_jpeg_pixels = 178'956'970;
inline constexpr int max_jpeg_scans = 500;
// A --data file larger than twice the RGB bytes of the largest image Pillow opens is not read
// (not a photo; read whole, it could take the machine's memory).
inline constexpr std::uint64_t max_jpeg_file_bytes = 2 * 3 * max_jpeg_pixels;

// Decodes a JPEG to RGB (a CMYK or YCCK file to CMYK, as Pillow opens it: libjpeg-turbo has no
// conversion to RGB from those); width and height are set from the header. bad_input when
// libjpeg-turbo cannot read it, when it claims more than max_jpeg_pixels or has more than
// max_jpeg_scans scans, or when it ends before its image does (Pillow's "image file is truncated";
// libjpeg-turbo would fill the rest with grey).
Result<std::vector<unsigned char>> decode_jpeg(const std::vector<unsigned char> &jpeg, int &width,
                                               int &height);
// PSNR in dB of b against a (same size); infinity when identical.
double psnr(const std::vector<unsigned char> &a, const std::vector<unsigned char> &b);

// The generated set: ImageNet-like 500×375, 224×224 and 1920×1080, `per_size` of each.
Result<std::vector<JpegImage>> generated_images(int per_size);
// The JPEG files a --data path names: a regular file, or the *.jpg/*.jpeg regular files in a
// directory and its folders (ImageFolder's root/CLASS/FILE.jpg), the first `limit` in name order,
// named by their path below it. A file of a directory that cannot be read (permission denied,
// too large) or that decode_jpeg refuses is left out and listed in `refused` ("name: why"); the
// others are the images.
struct UserImages {
  std::vector<JpegImage> images;
  std::vector<std::string> refused;
};
// not_found when the path does not exist; bad_input when it is neither a regular file nor a
// directory (never opened), the file it names is larger than max_jpeg_file_bytes, or no file
// there is a readable JPEG (the message names the first refused one and why); io when the
// directory or the file it names cannot be read.
Result<UserImages> images_from(const std::filesystem::path &data, std::size_t limit);
// "2 of 256 files left out: a.jpg: not a readable JPEG: ...; b.jpg: ..." (at most three named),
// or "" when none was.
std::string refused_note(const UserImages &set);

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
