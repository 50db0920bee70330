// STUB -- CANN does not publish this file: platform/soc_spec.h belongs to CANN's closed platform
// package (libplatform), which asc-devkit's public tiling/platform/platform_ascendc.h includes.
// platform_ascendc.h itself declares everything our op_host code uses (PlatformAscendC,
// CoreMemType, GetCoreNumAiv, GetCoreMemSize, GetLibApiWorkSpaceSize); nothing is needed from
// here for a syntax check. Used only by tools/check_cann.py.
#pragma once
#include <cstdint>
