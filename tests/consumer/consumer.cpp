// SPDX-License-Identifier: Apache-2.0
// An installed attnscore used from C++17: views, a known case computed (scores, attention and a
// key cache), an error, the version.
#include <attnscore/attnscore.hpp>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

const float expect[2][3] = {{0.5f, 5.0f, 6.0f}, {-0.5f, 1.0f, 0.5f}};

bool check(const char *what, attnscore::Status st, const std::vector<float> &s) {
  if (st != ATTNSCORE_OK) {
    std::fprintf(stderr, "consumer (C++), %s: %s\n", what, attnscore::status_string(st));
    return false;
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      if (s[i * 3 + j] != expect[i][j]) {
        std::fprintf(stderr, "consumer (C++), %s: S[%d][%d] = %g, expected %g\n", what, i, j,
                     s[i * 3 + j], expect[i][j]);
        return false;
      }
  return true;
}

}  // namespace

int main() {
  // Q is 2 x 4, K is 3 x 4 inside a buffer with a stride of 6 (as one head of a wider one);
  // d = 4, so the default scale is exactly 1/2. Small integers: every sum is exact.
  const std::vector<float> q = {1, 2, 3, 4, -1, 0, 2, 1};
  const std::vector<float> k = {1, 0,  0, 0, 9, 9,  //
                                1, 1,  1, 1, 9, 9,  //
                                2, -1, 0, 3, 9, 9};
  std::vector<float> s(2 * 3);
  attnscore::MatrixView<const float> Q(q.data(), 2, 4), K(k.data(), 3, 4, 6);
  attnscore::MatrixView<float> S(s.data(), 2, 3);
  if (!check("scores", attnscore::scores(Q, K, S), s)) return 1;

  // The same as one head of the attention call, and from a key cache in a caller's buffer.
  s.assign(s.size(), 0.0f);
  if (!check("attention", attnscore::attention(Q, K, S), s)) return 1;
  std::vector<unsigned char> mem(attnscore::KeyCache<float>::bytes(1, 3, 4));
  attnscore::KeyCache<float> cache(mem.data(), mem.size(), 1, 3, 4);
  if (cache.status() != ATTNSCORE_OK || cache.append(K) != ATTNSCORE_OK || cache.size() != 3) {
    std::fprintf(stderr, "consumer (C++): cannot fill the key cache\n");
    return 1;
  }
  s.assign(s.size(), 0.0f);
  if (!check("key cache", attnscore::attention(Q, cache, S), s)) return 1;

  // Shapes that disagree: their own status.
  if (attnscore::scores(Q, K, attnscore::MatrixView<float>(s.data(), 3, 2)) !=
      ATTNSCORE_ERR_SHAPE_MISMATCH) {
    std::fprintf(stderr, "consumer (C++): a shape mismatch was not reported\n");
    return 1;
  }
  if (std::strcmp(attnscore::version(), ATTNSCORE_VERSION_STRING) != 0) {
    std::fprintf(stderr, "consumer (C++): header %s, library %s\n", ATTNSCORE_VERSION_STRING,
                 attnscore::version());
    return 1;
  }
  std::printf("consumer (C++17): attnscore %s, kernel %s: ok\n", attnscore::version(),
              attnscore::kernel_name());
  return 0;
}
