// Writes fuzz_jpeg's seeds (fuzz/corpus/jpeg) with libjpeg-turbo's encoder: small images in the
// encodings a photo dataset holds (baseline 4:2:0 and 4:4:4, progressive, greyscale, optimised
// Huffman tables, restart markers, arithmetic coding, CMYK). Built and run by hand:
//   c++ -O1 fuzz/jpeg_corpus.cpp -ljpeg -o /tmp/jpeg_corpus && /tmp/jpeg_corpus fuzz/corpus/jpeg
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <jpeglib.h>

namespace {

struct Seed {
  const char *name;
  int width, height, components;
  J_COLOR_SPACE space;
  bool progressive, optimize, arithmetic, subsample;
  int restart_rows;
};

void write(const std::string &dir, const Seed &s) {
  std::vector<unsigned char> pixels(static_cast<std::size_t>(s.width) * s.height * s.components);
  for (int y = 0; y < s.height; ++y)
    for (int x = 0; x < s.width; ++x)
      for (int c = 0; c < s.components; ++c)
        pixels[(static_cast<std::size_t>(y) * s.width + x) * s.components + c] =
            static_cast<unsigned char>(128 + 100 * std::sin(0.3 * x + 0.2 * y + c));
  const std::string path = dir + "/" + s.name;
  FILE *out = std::fopen(path.c_str(), "wb");
  if (!out) {
    std::perror(path.c_str());
    std::exit(1);
  }
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, out);
  cinfo.image_width = static_cast<JDIMENSION>(s.width);
  cinfo.image_height = static_cast<JDIMENSION>(s.height);
  cinfo.input_components = s.components;
  cinfo.in_color_space = s.space;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 85, TRUE);
  if (!s.subsample && s.components == 3)
    for (int c = 0; c < 3; ++c)
      cinfo.comp_info[c].h_samp_factor = cinfo.comp_info[c].v_samp_factor = 1;
  cinfo.optimize_coding = s.optimize ? TRUE : FALSE;
  cinfo.arith_code = s.arithmetic ? TRUE : FALSE;
  cinfo.restart_in_rows = s.restart_rows;
  if (s.progressive)
    jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row =
        pixels.data() + static_cast<std::size_t>(cinfo.next_scanline) * s.width * s.components;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::fclose(out);
}

} // namespace

int main(int argc, char **argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  const Seed seeds[] = {
      {"baseline-420.jpg", 48, 32, 3, JCS_RGB, false, false, false, true, 0},
      {"baseline-444.jpg", 40, 24, 3, JCS_RGB, false, false, false, false, 0},
      {"progressive.jpg", 48, 32, 3, JCS_RGB, true, false, false, true, 0},
      {"grey.jpg", 33, 17, 1, JCS_GRAYSCALE, false, false, false, true, 0},
      {"optimised-restart.jpg", 64, 40, 3, JCS_RGB, false, true, false, true, 1},
      {"arithmetic.jpg", 32, 32, 3, JCS_RGB, false, false, true, true, 0},
      {"cmyk.jpg", 24, 16, 4, JCS_CMYK, false, false, false, true, 0},
  };
  for (const auto &s : seeds)
    write(dir, s);
  return 0;
}
