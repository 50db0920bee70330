// What the test kernel libraries (twin_faults, twin_sanitizer_faults, twin_fuse_kernels) share: a
// table of kernels by name, looked up with a readable error, and launches whose twin RuleError
// arrives in Python as a RuntimeError with the rule's message.
#pragma once
#include <torch/library.h>

#include <map>
#include <string>
#include <vector>

#include "twin_core.h"

template <class Kernel>
using KernelTable = std::map<std::string, Kernel>;

// The entry named `name`; a ValueError "unknown <what> <name>" if there is none.
template <class Kernel>
typename KernelTable<Kernel>::const_iterator FindKernel(const KernelTable<Kernel>& table, c10::string_view name,
                                                        const char* what) {
  auto it = table.find(std::string(name));
  TORCH_CHECK_VALUE(it != table.end(), "unknown ", what, " ", std::string(name));
  return it;
}

template <class Kernel>
std::vector<std::string> KernelNames(const KernelTable<Kernel>& table) {
  std::vector<std::string> names;
  for (const auto& kv : table) names.push_back(kv.first);
  return names;
}

template <class F>
void RaiseRuleErrors(F&& launch) {
  try {
    launch();
  } catch (const AscendC::twin::RuleError& e) {
    TORCH_CHECK(false, e.what());
  }
}
