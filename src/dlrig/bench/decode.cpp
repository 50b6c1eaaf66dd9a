#include "dlrig/bench/decode.hpp"

#include "dlrig/platform/fs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <limits>
#include <random>
#include <thread>

#include <jpeglib.h>
// After jpeglib.h, which it needs: the message codes (JWRN_JPEG_EOF).
#include <jerror.h>

namespace dlrig::bench {
namespace {

// libjpeg reports errors through error_exit, which must not return: jump back to the caller.
// No C++ object with a destructor lives between setjmp and the libjpeg calls that may jump.
// A decompressor's progress monitor and warnings jump the same way (jpeg_scan_limit,
// jpeg_truncated), with their own message.
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

extern "C" void jpeg_error_jump(j_common_ptr cinfo) {
  auto *err = reinterpret_cast<JpegError *>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings are not printed. "Premature end of JPEG file" (libjpeg-turbo then makes up the rest of
// the image) is an error: Pillow refuses such a file ("image file is truncated").
extern "C" void jpeg_truncated(j_common_ptr cinfo, int level) {
  if (level >= 0 || cinfo->err->msg_code != JWRN_JPEG_EOF)
    return;
  auto *err = reinterpret_cast<JpegError *>(cinfo->err);
  std::snprintf(err->message, sizeof err->message,
                "the file ends before the image does (truncated; Pillow refuses it too: \"image "
                "file is truncated\")");
  std::longjmp(err->jump, 1);
}

// Called by the decompressor as it reads a progressive file's scans.
extern "C" void jpeg_scan_limit(j_common_ptr cinfo) {
  const int scans = reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number;
  if (scans <= max_jpeg_scans)
    return;
  auto *err = reinterpret_cast<JpegError *>(cinfo->err);
  std::snprintf(err->message, sizeof err->message,
                "more than %d progressive scans (libjpeg-turbo's own limit for untrusted files: "
                "each scan makes the decoder go over the whole image again)",
                max_jpeg_scans);
  std::longjmp(err->jump, 1);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

std::vector<unsigned char> generate_rgb(int width, int height, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // Per channel: a gradient and three low-frequency waves of random direction and phase.
  struct Wave {
    double fx, fy, phase, amp;
  };
  Wave waves[3][3];
  double base[3], gx[3], gy[3];
  for (int c = 0; c < 3; ++c) {
    base[c] = 60 + 120 * u(rng);
    gx[c] = 60 * (u(rng) - 0.5);
    gy[c] = 60 * (u(rng) - 0.5);
    for (auto &w : waves[c])
      w = {(0.5 + 6 * u(rng)) * 2 * M_PI, (0.5 + 6 * u(rng)) * 2 * M_PI, 2 * M_PI * u(rng),
           10 + 25 * u(rng)};
  }
  std::normal_distribution<double> noise(0.0, 3.0);
  std::vector<unsigned char> rgb(static_cast<std::size_t>(width) * height * 3);
  std::size_t i = 0;
  for (int y = 0; y < height; ++y) {
    const double ty = static_cast<double>(y) / height;
    for (int x = 0; x < width; ++x) {
      const double tx = static_cast<double>(x) / width;
      for (int c = 0; c < 3; ++c) {
        double v = base[c] + gx[c] * tx + gy[c] * ty + noise(rng);
        for (const auto &w : waves[c])
          v += w.amp * std::sin(w.fx * tx + w.fy * ty + w.phase);
        rgb[i++] = static_cast<unsigned char>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  return rgb;
}

Result<std::vector<unsigned char>> encode_jpeg(const std::vector<unsigned char> &rgb, int width,
                                               int height, int quality) {
  if (width <= 0 || height <= 0 || rgb.size() != static_cast<std::size_t>(width) * height * 3)
    return make_error(ErrorKind::usage, "encode_jpeg: the pixel buffer does not match the size");
  jpeg_compress_struct cinfo{};
  JpegError err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_jump;
  unsigned char *out = nullptr;
  unsigned long out_size = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(out);
    return make_error(ErrorKind::vendor, fmt::format("libjpeg: {}", err.message));
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &out, &out_size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo); // 4:2:0 by default
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(rgb.data() +
                                        static_cast<std::size_t>(cinfo.next_scanline) * width * 3);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<unsigned char> jpeg(out, out + out_size);
  std::free(out);
  return jpeg;
}

Result<std::vector<unsigned char>> decode_jpeg(const std::vector<unsigned char> &jpeg, int &width,
                                               int &height) {
  jpeg_decompress_struct cinfo{};
  JpegError err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_jump;
  err.mgr.emit_message = jpeg_truncated;
  jpeg_progress_mgr progress{};
  progress.progress_monitor = jpeg_scan_limit;
  // The output buffer is allocated before setjmp so no destructor is skipped by a jump.
  std::vector<unsigned char> rgb;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return make_error(ErrorKind::bad_input, fmt::format("not a readable JPEG: {}", err.message));
  }
  jpeg_create_decompress(&cinfo);
  cinfo.progress = &progress;
  jpeg_mem_src(&cinfo, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&cinfo, TRUE);
  // Refused before any pixel is allocated: a header of a few bytes can claim 65500 x 65500.
  const auto pixels = static_cast<std::uint64_t>(cinfo.image_width) * cinfo.image_height;
  if (pixels > max_jpeg_pixels) {
    jpeg_destroy_decompress(&cinfo);
    return make_error(
        ErrorKind::bad_input,
        fmt::format("not a readable JPEG: {}x{} is {} pixels, more than the {} Pillow "
                    "refuses to open (DecompressionBombError): a DataLoader reading "
                    "it with PIL fails too",
                    cinfo.image_width, cinfo.image_height, pixels, max_jpeg_pixels));
  }
  // libjpeg-turbo converts nothing to RGB from CMYK (or YCCK): such a file, which Pillow opens as
  // CMYK, is decoded to CMYK.
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  const std::size_t channels = cmyk ? 4 : 3;
  jpeg_start_decompress(&cinfo);
  width = static_cast<int>(cinfo.output_width);
  height = static_cast<int>(cinfo.output_height);
  rgb.resize(static_cast<std::size_t>(width) * height * channels);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = rgb.data() + static_cast<std::size_t>(cinfo.output_scanline) * width * channels;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return rgb;
}

double psnr(const std::vector<unsigned char> &a, const std::vector<unsigned char> &b) {
  if (a.size() != b.size() || a.empty())
    return 0;
  double se = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    se += d * d;
  }
  if (se == 0)
    return std::numeric_limits<double>::infinity();
  return 10 * std::log10(255.0 * 255.0 / (se / static_cast<double>(a.size())));
}

Result<std::vector<JpegImage>> generated_images(int per_size) {
  struct Size {
    int w, h;
  };
  // ImageNet's average photo is about 500×375 (its training set's typical size), a 224² crop as
  // stored by pre-resized datasets, and a 1080p video frame.
  const Size sizes[] = {{500, 375}, {224, 224}, {1920, 1080}};
  std::vector<JpegImage> out;
  std::uint64_t seed = 1;
  for (const auto &s : sizes)
    for (int k = 0; k < per_size; ++k) {
      JpegImage img;
      img.width = s.w;
      img.height = s.h;
      img.source = generate_rgb(s.w, s.h, seed++);
      auto j = encode_jpeg(img.source, s.w, s.h, 90);
      if (!j)
        return j.error();
      img.jpeg = std::move(j.value());
      img.name = fmt::format("{}x{}", s.w, s.h);
      out.push_back(std::move(img));
    }
  return out;
}

namespace {

// The first `limit` *.jpg/*.jpeg regular files under `dir` in name order, each folder's files and
// subfolders taken together in that order (torchvision's ImageFolder keeps a dataset as
// root/CLASS/FILE.jpg). Folders that are symbolic links are not entered (no loop), nor below
// kMaxDepth. An error only when `dir` itself cannot be listed.
constexpr int kMaxDepth = 8;

std::optional<Error> jpeg_files_under(const std::filesystem::path &dir, std::size_t limit,
                                      int depth, std::vector<std::filesystem::path> &files) {
  std::error_code ec;
  std::vector<std::filesystem::directory_entry> entries;
  std::filesystem::directory_iterator it(dir, ec), end;
  if (ec)
    return make_error(ErrorKind::io, fmt::format("--data {}: {}", dir.string(), ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec)
      break;
    entries.push_back(*it);
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto &a, const auto &b) { return a.path() < b.path(); });
  for (const auto &e : entries) {
    if (files.size() >= limit)
      break;
    if (e.is_directory(ec) && !e.is_symlink(ec)) {
      if (depth < kMaxDepth)
        (void)jpeg_files_under(e.path(), limit, depth + 1, files); // an unreadable one is skipped
      continue;
    }
    auto ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if ((ext == ".jpg" || ext == ".jpeg") && e.is_regular_file(ec))
      files.push_back(e.path());
  }
  return std::nullopt;
}

} // namespace

Result<UserImages> images_from(const std::filesystem::path &data, std::size_t limit) {
  std::error_code ec;
  const auto st = std::filesystem::status(data, ec);
  if (!std::filesystem::exists(st))
    return make_error(ErrorKind::not_found,
                      fmt::format("--data {}: no such file or directory", data.string()));
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(st)) {
    if (auto e = jpeg_files_under(data, limit, 0, files))
      return *e;
  } else {
    files.push_back(data); // a FIFO or a device is refused below, never opened for a blocking read
  }
  UserImages out;
  std::string first_why;
  for (const auto &f : files) {
    auto bytes = read_regular_file(f.string(), max_jpeg_file_bytes, "JPEG file");
    const auto name = f == data ? f.filename().string() : f.lexically_relative(data).string();
    if (!bytes && f == data)
      return prefixed("--data ", bytes.error());
    if (!bytes) { // one unreadable file of a folder is left out, as one that does not decode
      auto why = bytes.error().message;
      if (why.starts_with(f.string() + ": "))
        why.erase(0, f.string().size() + 2);
      if (first_why.empty())
        first_why = why;
      out.refused.push_back(name + ": " + why);
      continue;
    }
    JpegImage img;
    img.jpeg.assign(bytes->begin(), bytes->end());
    img.name = name;
    auto rgb = decode_jpeg(img.jpeg, img.width, img.height);
    if (!rgb) {
      if (first_why.empty())
        first_why = rgb.error().message;
      out.refused.push_back(img.name + ": " + rgb.error().message);
      continue;
    }
    out.images.push_back(std::move(img));
  }
  if (files.empty())
    return make_error(
        ErrorKind::bad_input,
        fmt::format("--data {}: no .jpg or .jpeg files there (nor in its folders)", data.string()));
  if (out.images.empty() && files.size() == 1)
    return make_error(ErrorKind::bad_input,
                      fmt::format("--data {}: {}", files.front().string(), first_why));
  if (out.images.empty())
    return make_error(ErrorKind::bad_input,
                      fmt::format("--data {}: none of its {} JPEG files can be decoded, e.g. {}",
                                  data.string(), files.size(), out.refused.front()));
  return out;
}

std::string refused_note(const UserImages &set) {
  if (set.refused.empty())
    return "";
  const auto total = set.images.size() + set.refused.size();
  std::string s = fmt::format("{} of {} files left out: ", set.refused.size(), total);
  const std::size_t named = std::min<std::size_t>(set.refused.size(), 3);
  for (std::size_t i = 0; i < named; ++i)
    s += (i ? "; " : "") + set.refused[i];
  if (set.refused.size() > named)
    s += fmt::format("; and {} more", set.refused.size() - named);
  return s;
}

DecodeResult measure_decode(const std::vector<JpegImage> &images, unsigned threads, double seconds,
                            bool test_corrupt) {
  DecodeResult res;
  res.threads = std::max(1u, threads);
  if (images.empty()) {
    res.verified = false;
    res.failure = "no images";
    return res;
  }
  std::atomic<std::uint64_t> decoded{0}, pixels{0};
  std::atomic<bool> failed{false};
  std::string failure;
  std::atomic_flag failure_set = ATOMIC_FLAG_INIT;
  const double t0 = now_s();
  const double deadline = t0 + seconds;
  auto worker = [&](unsigned id) {
    // Each thread starts at its own image and goes round the set until the deadline, at least
    // once round.
    std::size_t done = 0;
    for (std::size_t k = id;; ++k) {
      if (done >= images.size() && now_s() >= deadline)
        return;
      const auto &img = images[k % images.size()];
      int w = 0, h = 0;
      auto rgb = decode_jpeg(img.jpeg, w, h);
      std::string why;
      if (!rgb)
        why = img.name + ": " + rgb.error().message;
      else if ((test_corrupt ? w + 1 : w) != img.width || h != img.height)
        why = fmt::format("{}: decoded as {}x{}", img.name, test_corrupt ? w + 1 : w, h);
      else if (!img.source.empty() && done < images.size()) {
        // PSNR on the first round only: it costs about as much as the decode itself.
        const double p = psnr(img.source, rgb.value());
        if (p < 30)
          why = fmt::format("{}: PSNR {:.1f} dB against the source (< 30)", img.name, p);
      }
      if (!why.empty()) {
        failed = true;
        if (!failure_set.test_and_set())
          failure = why;
      }
      ++done;
      decoded.fetch_add(1);
      pixels.fetch_add(static_cast<std::uint64_t>(img.width) * img.height);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < res.threads; ++i)
    pool.emplace_back(worker, i);
  for (auto &t : pool)
    t.join();
  res.seconds = now_s() - t0;
  res.images = decoded.load();
  res.images_per_s = static_cast<double>(res.images) / res.seconds;
  res.megapixels_per_s = static_cast<double>(pixels.load()) / 1e6 / res.seconds;
  res.verified = !failed.load();
  res.failure = failure;
  return res;
}

std::string decode_verdict(double images_per_s, unsigned threads,
                           const std::optional<DecodeConsumer> &consumer) {
  auto round = [](double v) {
    const double mag = v >= 10000 ? 1000 : v >= 1000 ? 100 : v >= 100 ? 10 : 1;
    return fmt::format("{:.0f}", std::round(v / mag) * mag);
  };
  std::string s =
      fmt::format("{} decode{} ~{} images/s",
                  threads == 1 ? std::string("1 core") : fmt::format("{} cores", threads),
                  threads == 1 ? "s" : "", round(images_per_s));
  if (!consumer || !(consumer->images_per_s > 0))
    return s;
  s += fmt::format("; {} consumes ~{}/s", consumer->what, round(consumer->images_per_s));
  const double ratio = images_per_s / consumer->images_per_s;
  if (ratio < 1)
    return s + ": data loading will limit training (the GPU waits for images) — use more "
               "DataLoader workers on more cores, GPU decoding (DALI, torchvision.io.decode_jpeg "
               "on the GPU) or pre-decoded data";
  return s + fmt::format(": decoding keeps up ({:.1f}x what training consumes)", ratio);
}

} // namespace dlrig::bench
