// CPU twin of CANN's lib/matmul_intf.h: the high-level Matmul API (twin_cube.h).
#pragma once
#include "../twin_cube.h"

#define REGIST_MATMUL_OBJ(tpipe, workspace, ...) AscendC::InitCurObj(tpipe, __VA_ARGS__)
#define REGIST_MATMUL_OBJ_STATIC REGIST_MATMUL_OBJ

namespace matmul = AscendC;
