// Element types of gpu.gemm as cuBLASLt stores them (gemm_data.hpp). Standalone (no other part of
// dlrig): the fake cuBLASLt under tests/fake_cublaslt compiles this file too, so the element
// conversions are tested on their own against published bit patterns (gemm_data_test.cpp).
#include "dlrig/bench/gemm_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dlrig::bench::gemm {

namespace {

// A binary floating-point format: mantissa bits, exponent bias, largest finite value.
struct Format {
  int mantissa, bias;
  double max;
  int emin() const { return 1 - bias; }
};
constexpr Format kHalf{10, 15, 65504};
constexpr Format kE4m3{3, 7, 448};

double quantize(const Format &f, double x) {
  if (x == 0 || !std::isfinite(x))
    return x;
  int e = 0;
  std::frexp(std::fabs(x), &e); // |x| = f * 2^e, f in [0.5, 1): the exponent is e - 1
  const double step = std::ldexp(1.0, std::max(e - 1, f.emin()) - f.mantissa);
  const double q = std::min(std::nearbyint(std::fabs(x) / step) * step, f.max);
  return std::copysign(q, x);
}

unsigned encode(const Format &f, double x) {
  const double q = quantize(f, x);
  const unsigned sign = std::signbit(q) ? 1u : 0u;
  const int width = 1 + f.mantissa + (f.mantissa == 10 ? 5 : 4);
  const unsigned sign_bit = sign << (width - 1);
  const double a = std::fabs(q);
  if (a == 0)
    return sign_bit;
  int e = 0;
  std::frexp(a, &e);
  const int exp = e - 1;
  if (exp < f.emin()) // subnormal
    return sign_bit | static_cast<unsigned>(std::ldexp(a, f.mantissa - f.emin()));
  const auto mant = static_cast<unsigned>(std::ldexp(a, f.mantissa - exp)) - (1u << f.mantissa);
  return sign_bit | (static_cast<unsigned>(exp + f.bias) << f.mantissa) | mant;
}

double decode(const Format &f, unsigned bits) {
  const int width = 1 + f.mantissa + (f.mantissa == 10 ? 5 : 4);
  const bool negative = (bits >> (width - 1)) & 1u;
  const unsigned exp = (bits >> f.mantissa) & ((1u << (width - 1 - f.mantissa)) - 1);
  const unsigned mant = bits & ((1u << f.mantissa) - 1);
  double v = exp == 0 ? std::ldexp(static_cast<double>(mant), f.emin() - f.mantissa)
                      : std::ldexp(static_cast<double>((1u << f.mantissa) + mant),
                                   static_cast<int>(exp) - f.bias - f.mantissa);
  return negative ? -v : v;
}

std::uint16_t bf16_bits(double x) {
  const float f = static_cast<float>(x);
  std::uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u); // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

double from_bf16(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace

std::size_t element_bytes(Element e) {
  switch (e) {
  case Element::f32:
  case Element::i32:
    return 4;
  case Element::f16:
  case Element::bf16:
    return 2;
  case Element::e4m3:
  case Element::i8:
    return 1;
  }
  return 1;
}

double round_to(Element e, double x) {
  switch (e) {
  case Element::f32:
    return static_cast<float>(x);
  case Element::f16:
    return quantize(kHalf, x);
  case Element::bf16:
    return from_bf16(bf16_bits(x));
  case Element::e4m3:
    return quantize(kE4m3, x);
  case Element::i8:
    return std::clamp(std::nearbyint(x), -127.0, 127.0);
  case Element::i32:
    return std::clamp(std::nearbyint(x), -2147483648.0, 2147483647.0);
  }
  return x;
}

void write_element(Element e, double x, unsigned char *out) {
  switch (e) {
  case Element::f32: {
    const float f = static_cast<float>(x);
    std::memcpy(out, &f, 4);
    return;
  }
  case Element::f16: {
    const auto h = static_cast<std::uint16_t>(encode(kHalf, x));
    std::memcpy(out, &h, 2);
    return;
  }
  case Element::bf16: {
    const std::uint16_t b = bf16_bits(x);
    std::memcpy(out, &b, 2);
    return;
  }
  case Element::e4m3:
    *out = static_cast<unsigned char>(encode(kE4m3, x));
    return;
  case Element::i8: {
    const auto v = static_cast<std::int8_t>(round_to(e, x));
    std::memcpy(out, &v, 1);
    return;
  }
  case Element::i32: {
    const auto v = static_cast<std::int32_t>(round_to(e, x));
    std::memcpy(out, &v, 4);
    return;
  }
  }
}

double read_element(Element e, const unsigned char *in) {
  switch (e) {
  case Element::f32: {
    float f = 0;
    std::memcpy(&f, in, 4);
    return f;
  }
  case Element::f16: {
    std::uint16_t h = 0;
    std::memcpy(&h, in, 2);
    return decode(kHalf, h);
  }
  case Element::bf16: {
    std::uint16_t b = 0;
    std::memcpy(&b, in, 2);
    return from_bf16(b);
  }
  case Element::e4m3:
    return decode(kE4m3, *in);
  case Element::i8: {
    std::int8_t v = 0;
    std::memcpy(&v, in, 1);
    return v;
  }
  case Element::i32: {
    std::int32_t v = 0;
    std::memcpy(&v, in, 4);
    return v;
  }
  }
  return 0;
}

} // namespace dlrig::bench::gemm
