// SPDX-License-Identifier: Apache-2.0
// What the demo and the benchmark print about the machine: the CPU features detected and the
// kernel chosen for every dtype this build has.
#ifndef ATTNSCORE_BENCH_CPU_INFO_HPP
#define ATTNSCORE_BENCH_CPU_INFO_HPP

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "attnscore/attnscore.h"

namespace bench {

// The ATTNSCORE_CPU_* bits detected, by name, space-separated ("none" when there are none).
inline std::string cpu_feature_names() {
  static constexpr std::pair<std::uint64_t, const char *> kFeatures[] = {
      {ATTNSCORE_CPU_SSE2, "sse2"},
      {ATTNSCORE_CPU_AVX2, "avx2"},
      {ATTNSCORE_CPU_FMA, "fma"},
      {ATTNSCORE_CPU_F16C, "f16c"},
      {ATTNSCORE_CPU_AVX512F, "avx512f"},
      {ATTNSCORE_CPU_AVX512BW, "avx512bw"},
      {ATTNSCORE_CPU_AVX512DQ, "avx512dq"},
      {ATTNSCORE_CPU_AVX512VL, "avx512vl"},
      {ATTNSCORE_CPU_AVX512VNNI, "avx512vnni"},
      {ATTNSCORE_CPU_AVXVNNI, "avxvnni"},
      {ATTNSCORE_CPU_AVX512BF16, "avx512bf16"},
      {ATTNSCORE_CPU_NEON, "neon"},
      {ATTNSCORE_CPU_VFPV4, "vfpv4"},
      {ATTNSCORE_CPU_ASIMDDP, "asimddp"},
      {ATTNSCORE_CPU_FPHP, "fphp"},
      {ATTNSCORE_CPU_ASIMDHP, "asimdhp"},
      {ATTNSCORE_CPU_I8MM, "i8mm"},
      {ATTNSCORE_CPU_BF16, "bf16"},
  };
  const std::uint64_t features = attnscore_cpu_features();
  std::string out;
  for (const auto &f : kFeatures)
    if (features & f.first) out += (out.empty() ? "" : " ") + std::string(f.second);
  return out.empty() ? "none" : out;
}

// What the CPU is, from /proc/cpuinfo's first processor: {cpu_vendor, cpu_family, cpu_model,
// cpu_name}, "unknown" where the system does not say. x86 gives the vendor string, family, model
// and name; ARM the implementer, architecture and part codes (its name line, where the kernel
// prints one). Features alone do not tell Zen 4 from Sapphire Rapids, and speed differs there.
inline std::vector<std::pair<std::string, std::string>> cpu_identity() {
  static constexpr const char *kKeys[][3] = {
      {"cpu_vendor", "vendor_id", "CPU implementer"},
      {"cpu_family", "cpu family", "CPU architecture"},
      {"cpu_model", "model", "CPU part"},
      {"cpu_name", "model name", "Hardware"},
  };
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto &k : kKeys) out.emplace_back(k[0], "");
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::size_t start = line.find_first_not_of(" \t", colon + 1);
    const std::string value = start == std::string::npos ? "" : line.substr(start);
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i].second.empty() && (key == kKeys[i][1] || key == kKeys[i][2]))
        out[i].second = value;
  }
  for (auto &kv : out)
    if (kv.second.empty()) kv.second = "unknown";
  return out;
}

// {dtype, kernel chosen} for every dtype value this build has a kernel for, in enum order. The
// dtype is read from the kernel's name (qk_<dtype>_...), so dtypes added later show up here
// without a change; values without a kernel (a dtype compiled out) are skipped.
inline std::vector<std::pair<std::string, std::string>> kernels_chosen() {
  std::vector<std::pair<std::string, std::string>> out;
  for (int v = 0; v < 64; ++v) {
    const char *name = attnscore_kernel_name(static_cast<attnscore_dtype>(v));
    if (name == nullptr) continue;
    const std::string kernel = name;
    const std::size_t end = kernel.find('_', 3);
    out.emplace_back(kernel.rfind("qk_", 0) == 0 && end != std::string::npos
                         ? kernel.substr(3, end - 3)
                         : "dtype" + std::to_string(v),
                     kernel);
  }
  return out;
}

}  // namespace bench

#endif  // ATTNSCORE_BENCH_CPU_INFO_HPP
