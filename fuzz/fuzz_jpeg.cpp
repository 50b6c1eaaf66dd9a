// libFuzzer target for the JPEG files `dlrig bench data.decode --data` reads from the user's
// dataset: dlrig's decoder around libjpeg-turbo (its error, warning and progress handlers, the
// pixel and scan limits, the output buffer), then the verification measure_decode does on what
// decoded. A header that claims more pixels than it holds, a truncated file or a scan bomb must end
// in an error or an image in bounded time and memory (scripts/fuzz.sh: 10 s, 2 GB).
#include "dlrig/bench/decode.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  dlrig::bench::JpegImage img;
  img.jpeg.assign(data, data + size);
  img.name = "fuzz.jpg";
  auto rgb = dlrig::bench::decode_jpeg(img.jpeg, img.width, img.height);
  if (!rgb)
    return 0;
  // Small images go through the timed loop's decode and checks too (one thread, one pass).
  if (static_cast<std::uint64_t>(img.width) * img.height <= 1u << 20)
    (void)dlrig::bench::measure_decode({img}, 1, 0.0);
  return 0;
}
