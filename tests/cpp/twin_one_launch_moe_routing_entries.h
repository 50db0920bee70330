// One dtype combination of the op package's one-launch moe_token_permute entry
// (csrc/kernels/op_package/moe_routing/moe_token_permute.cpp), renamed
// op_package_moe_token_permute_<ONE_LAUNCH_SUFFIX>. twin_one_launch_kernels.cpp includes this once per combination,
// with DTYPE_TOKENS, DTYPE_INDICES (as CANN's op build defines them) and ONE_LAUNCH_SUFFIX set; so no include guard,
// and it undefines them at the end.
#define moe_token_permute ONE_LAUNCH_NAME(moe_token_permute)
#include "op_package/moe_routing/moe_token_permute.cpp"
#undef moe_token_permute
#undef DTYPE_TOKENS
#undef DTYPE_INDICES
#undef ONE_LAUNCH_SUFFIX
