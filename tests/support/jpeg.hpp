#pragma once
// Hand-made JPEG files for the tests of `bench data.decode` (unit and CLI).
#include <cstddef>
#include <vector>

namespace dlrig::test {

// A hand-made one-component JPEG width x height whose Huffman tables have a single one-bit code
// (symbol 0: a DC difference of 0, an AC end of block), so an all-zero byte codes flat blocks.
// Baseline with one scan of `entropy` zero bytes, or progressive with `scans` DC-first scans of
// one zero byte each (repeating a scan is allowed with a warning, as libjpeg-turbo reads it).
std::vector<unsigned char> hand_made_jpeg(unsigned width, unsigned height, bool progressive,
                                          int scans, std::size_t entropy);

} // namespace dlrig::test
