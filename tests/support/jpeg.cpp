// Hand-made JPEG files for tests (jpeg.hpp).
#include "support/jpeg.hpp"

namespace dlrig::test {

namespace {

void put_be16(std::vector<unsigned char> &out, unsigned v) {
  out.push_back(static_cast<unsigned char>(v >> 8));
  out.push_back(static_cast<unsigned char>(v & 0xff));
}

// A marker segment: FF, the marker, the length (itself included) and the payload.
void segment(std::vector<unsigned char> &out, unsigned char marker,
             const std::vector<unsigned char> &payload) {
  out.push_back(0xff);
  out.push_back(marker);
  put_be16(out, static_cast<unsigned>(payload.size() + 2));
  out.insert(out.end(), payload.begin(), payload.end());
}

} // namespace

std::vector<unsigned char> hand_made_jpeg(unsigned width, unsigned height, bool progressive,
                                          int scans, std::size_t entropy) {
  std::vector<unsigned char> j = {0xff, 0xd8};
  std::vector<unsigned char> dqt(65, 1);
  dqt[0] = 0; // 8-bit table 0
  segment(j, 0xdb, dqt);
  std::vector<unsigned char> sof = {8};
  put_be16(sof, height);
  put_be16(sof, width);
  sof.insert(sof.end(), {1, 1, 0x11, 0}); // one component, id 1, 1x1 sampling, table 0
  segment(j, progressive ? 0xc2 : 0xc0, sof);
  std::vector<unsigned char> dht;
  for (unsigned char cls : {0x00, 0x10}) { // DC table 0, AC table 0
    dht.push_back(cls);
    dht.push_back(1); // one code of length 1
    dht.insert(dht.end(), 15, 0);
    dht.push_back(0); // its symbol
  }
  segment(j, 0xc4, dht);
  for (int s = 0; s < (progressive ? scans : 1); ++s) {
    // One component, tables 0/0; Ss, Se (0..63 baseline, 0..0 a DC scan), Ah/Al 0.
    segment(j, 0xda, {1, 1, 0x00, 0, static_cast<unsigned char>(progressive ? 0 : 63), 0});
    j.insert(j.end(), progressive ? 1 : entropy, 0);
  }
  j.insert(j.end(), {0xff, 0xd9});
  return j;
}

} // namespace dlrig::test
