// The Ascend C kernel entry points compiled for the CPU twin (csrc/kernels/*.cpp).
#pragma once
#include <cstdint>

extern "C" {
void rope_float(uint8_t* x, uint8_t* cos, uint8_t* sin, uint8_t* y, uint8_t* workspace, uint8_t* tiling);
void rope_half(uint8_t* x, uint8_t* cos, uint8_t* sin, uint8_t* y, uint8_t* workspace, uint8_t* tiling);
void rope_bfloat16(uint8_t* x, uint8_t* cos, uint8_t* sin, uint8_t* y, uint8_t* workspace, uint8_t* tiling);
}
