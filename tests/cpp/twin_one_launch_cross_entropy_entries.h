// One dtype of the op package's one-launch cross-entropy entries (csrc/kernels/op_package/cross_entropy/*.cpp),
// each renamed op_package_<op>_<ONE_LAUNCH_SUFFIX>; twin_one_launch_kernels.cpp includes this once per dtype with
// DTYPE_INPUT, DTYPE_LOG_PROB (as CANN's op build defines them) and ONE_LAUNCH_SUFFIX set, so no include guard.
#define cross_entropy_loss ONE_LAUNCH_NAME(cross_entropy_loss)
#include "op_package/cross_entropy/cross_entropy_loss.cpp"
#undef cross_entropy_loss
#define cross_entropy_loss_grad ONE_LAUNCH_NAME(cross_entropy_loss_grad)
#include "op_package/cross_entropy/cross_entropy_loss_grad.cpp"
#undef cross_entropy_loss_grad
#undef DTYPE_INPUT
#undef DTYPE_LOG_PROB
#undef ONE_LAUNCH_SUFFIX
