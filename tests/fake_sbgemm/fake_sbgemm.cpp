// A naive cblas_sbgemm with OpenBLAS's signature (bfloat16 = uint16_t, fp32 C and accumulation):
// C = alpha * A * B + beta * C, row-major, no transposes (the only form dlrig calls; anything else
// is refused on stderr and leaves C alone, so verification fails). DLRIG_FAKE_SBGEMM_WRONG=1 adds
// 1 to every entry of C, a wrong product dlrig must catch.
#include <cblas.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifndef FAKE_SBGEMM_WITHOUT_SYMBOL
namespace {

float widen(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace

extern "C" __attribute__((visibility("default"))) void
cblas_sbgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n,
             blasint k, float alpha, const std::uint16_t *a, blasint lda, const std::uint16_t *b,
             blasint ldb, float beta, float *c, blasint ldc) {
  if (order != CblasRowMajor || ta != CblasNoTrans || tb != CblasNoTrans) {
    std::fprintf(stderr, "fake cblas_sbgemm: only row-major without transposes\n");
    return;
  }
  const bool wrong = std::getenv("DLRIG_FAKE_SBGEMM_WRONG") != nullptr;
  for (blasint i = 0; i < m; ++i)
    for (blasint j = 0; j < n; ++j) {
      float sum = 0;
      for (blasint p = 0; p < k; ++p)
        sum += widen(a[i * lda + p]) * widen(b[p * ldb + j]);
      float &out = c[i * ldc + j];
      out = alpha * sum + (beta == 0 ? 0 : beta * out) + (wrong ? 1.0f : 0.0f);
    }
}
#else
extern "C" __attribute__((visibility("default"))) int fake_sbgemm_missing() {
  return 0;
}
#endif
