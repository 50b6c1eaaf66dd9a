#include "dlrig/fit/safetensors.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace dlrig::fit {
namespace {

namespace fs = std::filesystem;

std::string le64(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A safetensors file: header length, header, and `data` bytes of (zero) weights.
std::string file_bytes(const std::string &header, std::uint64_t data) {
  return le64(header.size()) + header + std::string(static_cast<std::size_t>(data), '\0');
}

class Safetensors : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("dlrig-st-" +
           std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string &name, const std::string &bytes) {
    auto p = dir / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  std::string error_of(const std::string &header, std::uint64_t data) {
    auto r = read_safetensors(write("m.safetensors", file_bytes(header, data)));
    EXPECT_FALSE(r.ok());
    return r ? "" : r.error().message;
  }
  fs::path dir;
};

const char *kGood = R"({"__metadata__":{"format":"pt"},
  "model.embed_tokens.weight":{"dtype":"BF16","shape":[10,4],"data_offsets":[0,80]},
  "model.layers.0.self_attn.q_proj.weight":{"dtype":"F32","shape":[4,4],"data_offsets":[80,144]},
  "model.layers.0.self_attn.rotary_emb.inv_freq":{"dtype":"F32","shape":[2],"data_offsets":[144,152]}})";

TEST_F(Safetensors, ReadsTheHeaderOnly) {
  auto path = write("m.safetensors", file_bytes(kGood, 152));
  auto h = read_safetensors(path);
  ASSERT_TRUE(h.ok()) << h.error().message;
  ASSERT_EQ(h->tensors.size(), 3u);
  EXPECT_EQ(h->metadata.at("format"), "pt");
  EXPECT_EQ(h->data_bytes, 152u);
  auto c = read_checkpoint(path);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->params, 56u) << "inv_freq is a buffer, not a parameter";
  EXPECT_EQ(c->weight_bytes, 144u);
  EXPECT_EQ(c->params_by_dtype.at("BF16"), 40u);
}

TEST_F(Safetensors, ShardedFolderWithIndex) {
  write("model-00001-of-00002.safetensors",
        file_bytes(R"({"a.weight":{"dtype":"F16","shape":[3,2],"data_offsets":[0,12]}})", 12));
  write("model-00002-of-00002.safetensors",
        file_bytes(R"({"b.weight":{"dtype":"I8","shape":[5],"data_offsets":[0,5]},
                      "c.bias":{"dtype":"F64","shape":[],"data_offsets":[5,13]}})",
                   13));
  write("model.safetensors.index.json",
        R"({"metadata":{"total_size":25},"weight_map":{
            "a.weight":"model-00001-of-00002.safetensors",
            "b.weight":"model-00002-of-00002.safetensors",
            "c.bias":"model-00002-of-00002.safetensors"}})");
  auto c = read_checkpoint(dir.string());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->files.size(), 2u);
  EXPECT_EQ(c->tensors.size(), 3u);
  EXPECT_EQ(c->params, 6u + 5u + 1u);
  EXPECT_EQ(c->weight_bytes, 25u);
}

TEST_F(Safetensors, IndexNamingAMissingTensorOrShard) {
  write("s1.safetensors",
        file_bytes(R"({"a.weight":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", 2));
  write("model.safetensors.index.json",
        R"({"weight_map":{"a.weight":"s1.safetensors","z.weight":"s1.safetensors"}})");
  auto r = read_checkpoint(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("z.weight"), std::string::npos) << r.error().message;

  write("model.safetensors.index.json", R"({"weight_map":{"a.weight":"gone.safetensors"}})");
  r = read_checkpoint(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("gone.safetensors"), std::string::npos) << r.error().message;

  write("model.safetensors.index.json", R"({"weight_map":{"a.weight":"../../etc/passwd"}})");
  r = read_checkpoint(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a file name"), std::string::npos) << r.error().message;

  write("model.safetensors.index.json", R"({"weight_map":[1,2]})");
  EXPECT_FALSE(read_checkpoint(dir.string()).ok());
}

TEST_F(Safetensors, AbsurdHeaderLength) {
  auto path = write("m.safetensors", le64(std::uint64_t{1} << 62) + "{}");
  auto r = read_safetensors(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("limit"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(path), std::string::npos);
}

TEST_F(Safetensors, HeaderLengthPastTheEnd) {
  auto r = read_safetensors(write("m.safetensors", le64(5000) + "{}"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("past the end"), std::string::npos) << r.error().message;
}

TEST_F(Safetensors, TruncatedBeforeTheLength) {
  auto r = read_safetensors(write("m.safetensors", "abc"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("truncated"), std::string::npos) << r.error().message;
  EXPECT_FALSE(read_safetensors(write("e.safetensors", "")).ok());
}

TEST_F(Safetensors, TruncatedData) {
  auto msg = error_of(kGood, 100);
  EXPECT_NE(msg.find("past the data buffer"), std::string::npos) << msg;
}

TEST_F(Safetensors, TrailingBytes) {
  auto msg = error_of(kGood, 160);
  EXPECT_NE(msg.find("trailing"), std::string::npos) << msg;
}

TEST_F(Safetensors, MalformedJson) {
  auto msg = error_of(R"({"a":{"dtype":"F16",)", 0);
  EXPECT_NE(msg.find("malformed"), std::string::npos) << msg;
  msg = error_of("[1,2,3]", 0);
  EXPECT_NE(msg.find("not a JSON object"), std::string::npos) << msg;
}

TEST_F(Safetensors, NumberTooLargeForJson) {
  // nlohmann-json reports this as out_of_range, not a parse error (found by the fuzz target).
  auto msg = error_of(R"({"a":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}})", 4);
  EXPECT_NE(msg.find("malformed"), std::string::npos) << msg;
}

TEST_F(Safetensors, UnknownDtype) {
  auto msg = error_of(R"({"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16);
  EXPECT_NE(msg.find("unknown dtype \"F128\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"a\""), std::string::npos) << msg;
}

TEST_F(Safetensors, ShapeOverflow) {
  auto msg = error_of(
      R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})", 4);
  EXPECT_NE(msg.find("overflows"), std::string::npos) << msg;
  msg = error_of(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8);
  EXPECT_NE(msg.find("overflows"), std::string::npos) << msg;
}

TEST_F(Safetensors, NegativeOrFractionalShape) {
  auto msg = error_of(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4);
  EXPECT_NE(msg.find("non-negative"), std::string::npos) << msg;
  msg = error_of(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4);
  EXPECT_NE(msg.find("non-negative"), std::string::npos) << msg;
}

TEST_F(Safetensors, OffsetsNotMatchingDtypeTimesShape) {
  auto msg = error_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8);
  EXPECT_NE(msg.find("needs 12"), std::string::npos) << msg;
}

TEST_F(Safetensors, OverlappingOffsets) {
  auto msg = error_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                          "b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                      12);
  EXPECT_NE(msg.find("overlap"), std::string::npos) << msg;
}

// Issue 11.7: a repeated tensor name is reported as such, not as the hole it leaves.
TEST_F(Safetensors, DuplicateTensorNameIsNamed) {
  auto msg = error_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
    "a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                      16);
  EXPECT_NE(msg.find("\"a\" appears twice"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("belong to no tensor"), std::string::npos) << msg;
}

TEST_F(Safetensors, HoleInTheBuffer) {
  auto msg = error_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},
                          "b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                      12);
  EXPECT_NE(msg.find("belong to no tensor"), std::string::npos) << msg;
}

TEST_F(Safetensors, OffsetsOutOfRangeOrBackwards) {
  auto msg = error_of(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[8,4]}})", 4);
  EXPECT_NE(msg.find("end before"), std::string::npos) << msg;
  msg = error_of(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0]}})", 4);
  EXPECT_NE(msg.find("data_offsets"), std::string::npos) << msg;
  msg = error_of(
      R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551615,18446744073709551615]}})",
      1);
  EXPECT_NE(msg.find("past the data buffer"), std::string::npos) << msg;
}

TEST_F(Safetensors, MissingFieldsAndBadMetadata) {
  EXPECT_NE(error_of(R"({"a":{"shape":[1],"data_offsets":[0,1]}})", 1).find("dtype"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"a":{"dtype":"U8","data_offsets":[0,1]}})", 1).find("shape"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"a":7})", 0).find("entry must be an object"), std::string::npos);
  EXPECT_NE(error_of(R"({"__metadata__":{"k":1}})", 0).find("__metadata__"), std::string::npos);
}

TEST(SafetensorsParse, LengthIsLittleEndian) {
  std::string first = le64(0x0102);
  auto n = parse_safetensors_length(first, 0x0102 + 8, "x");
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(*n, 0x0102u);
}

TEST(SafetensorsParse, EmptyHeaderIsAnEmptyCheckpoint) {
  auto h = parse_safetensors_header("{}", 0, "x");
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->tensors.empty());
}

} // namespace
} // namespace dlrig::fit
