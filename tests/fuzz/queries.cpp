// SPDX-License-Identifier: Apache-2.0
// The other calls: level names (hostile strings), levels and statuses as raw values, queries.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz/fuzz.hpp"

extern "C" {  // tests/fuzz/c_calls.c
const char *fuzz_c_kernel_name(int dtype);
int fuzz_c_kernel_level(int dtype);
const char *fuzz_c_level_name(int level);
int fuzz_c_level_supported(int level);
int fuzz_c_set_max_level(int level);
const char *fuzz_c_status_string(int status);
}

namespace fuzz {

namespace {

// An enum argument as a C caller may pass it: any int, mostly near the enumerators.
int c_enum_value(Input &in) {
  const std::uint8_t m = in.u8();
  return m < 0xf8 ? m : static_cast<std::int32_t>(in.u32());
}

}  // namespace

// Levels whose kernels are int8 only: f32 takes the best level below them.
bool int8_only(int level) {
  return level == ATTNSCORE_LEVEL_AVX512VNNI || level == ATTNSCORE_LEVEL_AVXVNNI ||
         level == ATTNSCORE_LEVEL_NEON_DOTPROD || level == ATTNSCORE_LEVEL_NEON_I8MM;
}

// Whether this build has the int8 path (it answers ATTNSCORE_ERR_UNKNOWN_DTYPE otherwise).
bool s8_built() {
  static const bool built = [] {
    const std::int8_t q = 1;
    const float one = 1.0f;
    float s = 0.0f;
    return attnscore_scores_s8(1, 1, 1, &q, 1, &one, 1, &q, 1, &one, 1, &s, 1, 0.0f) !=
           ATTNSCORE_ERR_UNKNOWN_DTYPE;
  }();
  return built;
}

int fuzz_queries(Input &in, int) {
  g_call = "queries";
  // attnscore_level_from_name on a string of exactly its own length (or NULL arguments).
  {
    const std::uint8_t mode = in.u8();
    std::string name;
    if (mode % 4 == 0) {
      name = kLevelNames[in.u8() % (sizeof kLevelNames / sizeof kLevelNames[0])].name;
    } else {
      const std::size_t n = in.u8() % 16;
      for (std::size_t i = 0; i < n; ++i) {
        const char c = static_cast<char>(in.u8());
        name += c != '\0' ? c : '?';  // NUL only at the end
      }
    }
    char *str = static_cast<char *>(std::malloc(name.size() + 1));
    std::memcpy(str, name.c_str(), name.size() + 1);
    const bool null_name = mode == 0xff, null_out = mode == 0xfe;
    attnscore_level out = as_level(0x5a);
    g_call = "attnscore_level_from_name(\"" + name + "\")";
    const attnscore_status st = api("attnscore_level_from_name", [&] {
      return attnscore_level_from_name(null_name ? nullptr : str, null_out ? nullptr : &out);
    });
    attnscore_status want = ATTNSCORE_ERR_UNKNOWN_LEVEL;
    int level = 0x5a;
    for (const LevelName &l : kLevelNames)
      if (name == l.name) want = ATTNSCORE_OK, level = l.level;
    if (null_name || null_out) want = ATTNSCORE_ERR_NULL_POINTER, level = 0x5a;
    if (st != want) fail("returned %d, expected %d", st, want);
    if (static_cast<int>(out) != level) fail("level %d, expected %d", static_cast<int>(out), level);
    std::free(str);
  }
  // Enum arguments as C callers may pass them (tests/fuzz/c_calls.c): levels, dtypes, statuses.
  {
    const int level = c_enum_value(in), dtype = c_enum_value(in), status = c_enum_value(in);
    char what[96];
    std::snprintf(what, sizeof what, "enum values from C: level %d, dtype %d, status %d", level,
                  dtype, status);
    g_call = what;
    const char *name = api("attnscore_level_name", [&] { return fuzz_c_level_name(level); });
    const char *want = nullptr;
    for (const LevelName &l : kLevelNames)
      if (l.level == level) want = l.name;
    if ((name == nullptr) != (want == nullptr) || (want && std::strcmp(name, want) != 0))
      fail("attnscore_level_name gave %s", name ? name : "NULL");
    const int sup = api("attnscore_level_supported", [&] { return fuzz_c_level_supported(level); });
    if (sup != 0 && !in_family(level)) fail("a level of another family is supported");
    if (level == 0 && sup != 1) fail("scalar is not supported");
    const int st = api("attnscore_set_max_level", [&] { return fuzz_c_set_max_level(level); });
    const bool valid = in_family(level) || level == kBest;
    if (st != (valid ? ATTNSCORE_OK : ATTNSCORE_ERR_UNKNOWN_LEVEL))
      fail("attnscore_set_max_level returned %d", st);
    const char *kn = api("attnscore_kernel_name", [&] { return fuzz_c_kernel_name(dtype); });
    // Every dtype has kernels unless the build left it out (its calls then say so).
    const bool known = dtype_built(dtype);
    if ((kn == nullptr) == known) fail("attnscore_kernel_name gave %s", kn ? kn : "NULL");
    const int kl = api("attnscore_kernel_level", [&] { return fuzz_c_kernel_level(dtype); });
    if (known && !attnscore_level_supported(as_level(kl)))
      fail("the kernel's level %d is not supported", kl);
    const char *msg = api("attnscore_status_string", [&] { return fuzz_c_status_string(status); });
    if (msg == nullptr || *msg == '\0') fail("no message for status %d", status);
  }
  // The default scale of any d, the CPU features.
  {
    const std::size_t d = in.u8() < 0x80 ? in.u16() : huge(in, in.u8());
    const float f = api("attnscore_default_scale", [&] { return attnscore_default_scale(d); });
    if (d == 0 ? f != 0.0f : !(f > 0.0f))
      fail("attnscore_default_scale(%zu) = %a", d, static_cast<double>(f));
    const std::uint64_t feat =
        api("attnscore_cpu_features", [] { return attnscore_cpu_features(); });
    if (feat != attnscore_cpu_features()) fail("CPU features changed");
  }
  return 0;
}

}  // namespace fuzz
