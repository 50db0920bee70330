// One dtype combination of the op package's one-launch RMSNorm backward entries
// (csrc/kernels/op_package/rms_norm/*_grad.cpp), each renamed op_package_<op>_<ONE_LAUNCH_SUFFIX>.
// twin_one_launch_kernels.cpp includes this once per combination, with DTYPE_X, DTYPE_GAMMA (as CANN's
// op build defines them) and ONE_LAUNCH_SUFFIX set; so no include guard, and it undefines them at the end.
#define rms_norm_grad ONE_LAUNCH_NAME(rms_norm_grad)
#include "op_package/rms_norm/rms_norm_grad.cpp"
#undef rms_norm_grad
#define add_rms_norm_grad ONE_LAUNCH_NAME(add_rms_norm_grad)
#include "op_package/rms_norm/add_rms_norm_grad.cpp"
#undef add_rms_norm_grad
#define gemma_rms_norm_grad ONE_LAUNCH_NAME(gemma_rms_norm_grad)
#include "op_package/rms_norm/gemma_rms_norm_grad.cpp"
#undef gemma_rms_norm_grad
#define gated_rms_norm_grad ONE_LAUNCH_NAME(gated_rms_norm_grad)
#include "op_package/rms_norm/gated_rms_norm_grad.cpp"
#undef gated_rms_norm_grad
#undef DTYPE_X
#undef DTYPE_GAMMA
#undef ONE_LAUNCH_SUFFIX
