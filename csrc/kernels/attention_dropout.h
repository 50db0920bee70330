// Attention dropout's explicit mask on the AIVs (docs/attention.md, "Dropout"): torch_npu's uint8 mask holds one
// bit per score element, flat over [B, N1, S1, S2], element e in bit e % 8 of byte e / 8, 1 = kept. A block of
// `rows` score rows x `cols` keys becomes fp32 factors keep / keep_prob [rows, pp] (pp = cols rounded up to 8):
//   AttentionLoadDropout: each row's bytes from GM (a row starts at any bit when S2 % 8 != 0, so one copy a row)
//     into `bytes`, rb = AttentionDropoutRowBytes(cols) a row, zero past them;
//   AttentionDropoutFactors: the bytes as fp32; per row a Gather of each key's byte (the row's bit shift picks
//     one of 8 offset tables) times 2^-bit (the same shift's power table), then bit = floor(y) - 2 floor(y / 2),
//     all exact in fp32; times 1 / keep_prob.
// The tables (AttentionDropoutTables) are built once for the widest block. AttentionDropout holds an AIV's buffers
// (the UB plan's AttentionDropoutUb) and drop_mask, for the forward's and the backward's AIVs alike.
#pragma once
#include "kernel_operator.h"
// after kernel_operator.h: its functions are __aicore__
#include "attention_buffers.h"
#include "kernel_utils.h"

using namespace AscendC;

namespace attention_dropout {
constexpr uint32_t kShifts = 8;  // a row's first bit within its first byte
}  // namespace attention_dropout

// offsets [8, pitch] (uint32, bytes into one row of the fp32 bytes) and powers [8, pitch] (fp32): for shift s and
// key c < pitch (a multiple of 8), the byte of bit s + c and 2^-((s + c) % 8). The scalar unit writes each shift's
// first 8 keys; the next 8 are a byte on (offsets) with the same bits (powers), so vector adds double the rest
// (64 scalar writes a table, not 8 x pitch: a pipeline's worth at pitch 512).
__aicore__ inline void AttentionDropoutTables(const LocalTensor<uint32_t>& offsets, const LocalTensor<float>& powers,
                                              uint32_t pitch) {
  using attention_dropout::kShifts;
  for (uint32_t s = 0; s < kShifts; ++s) {
    for (uint32_t c = 0; c < kShifts; ++c) {
      const uint32_t bit = s + c;
      offsets.SetValue(s * pitch + c, bit / 8 * uint32_t(sizeof(float)));
      powers.SetValue(s * pitch + c, 1.0f / float(1u << (bit % 8)));
    }
  }
  SyncPipes<HardEvent::S_V>();
  const LocalTensor<int32_t> o = offsets.ReinterpretCast<int32_t>();
  for (uint32_t s = 0; s < kShifts; ++s) {
    for (uint32_t k = kShifts; k < pitch; k *= 2) {
      const int32_t n = int32_t(pitch - k < k ? pitch - k : k), at = int32_t(s * pitch);
      Adds(o[at + int32_t(k)], o[at], int32_t(k / 8 * sizeof(float)), n);
      Adds(powers[at + int32_t(k)], powers[at], 0.0f, n);
    }
  }
}

// Rows [0, rows) of the block, row r's first key at bit firstBit + r * rowBits of `mask`, into `bytes`
// (rb = AttentionDropoutRowBytes(cols) a row). An MTE2 copy: the caller syncs before reading it.
__aicore__ inline void AttentionLoadDropout(const LocalTensor<uint8_t>& bytes, const GlobalTensor<uint8_t>& mask,
                                            int64_t firstBit, int64_t rowBits, uint32_t rows, uint32_t cols,
                                            uint32_t rb) {
  Duplicate(bytes.ReinterpretCast<uint16_t>(), uint16_t(0), int32_t(rows * rb / 2));  // the gaps the copies skip
  SyncPipes<HardEvent::V_MTE2>();
  for (uint32_t r = 0; r < rows; ++r) {
    const int64_t bit = firstBit + int64_t(r) * rowBits;
    const uint32_t n = uint32_t(((bit & 7) + cols + 7) / 8), padded = (n + 31) / 32 * 32;
    DataCopyPad(bytes[r * rb], mask[bit >> 3], DataCopyExtParams(1, n, 0, 0, 0),
                DataCopyPadExtParams<uint8_t>(padded != n, 0, uint8_t(padded - n), 0));
  }
}

// factors [rows, pp] = keep / keep_prob of the loaded block (AttentionLoadDropout's firstBit and rowBits), the
// tables `pitch` apart. Scratch: bytesFloat rows * rb floats (not overlapping factors: Gather), scratch
// max(rows * pp, rows * rb / 2) floats.
__aicore__ inline void AttentionDropoutFactors(const LocalTensor<float>& factors, const LocalTensor<uint8_t>& bytes,
                                               const LocalTensor<float>& bytesFloat, const LocalTensor<float>& scratch,
                                               const LocalTensor<uint32_t>& offsets, const LocalTensor<float>& powers,
                                               uint32_t pitch, int64_t firstBit, int64_t rowBits, uint32_t rows,
                                               uint32_t pp, uint32_t rb, float invKeepProb) {
  const int32_t nb = int32_t(rows * rb), n = int32_t(rows * pp);
  LocalTensor<half> bytesHalf = scratch.ReinterpretCast<half>();
  Cast(bytesHalf, bytes, RoundMode::CAST_NONE, nb);  // uint8 casts to half only
  Cast(bytesFloat, bytesHalf, RoundMode::CAST_NONE, nb);
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t s = uint32_t((firstBit + int64_t(r) * rowBits) & 7);
    Gather(factors[r * pp], bytesFloat, offsets[s * pitch], r * rb * uint32_t(sizeof(float)), pp);
    Mul(factors[r * pp], factors[r * pp], powers[s * pitch], int32_t(pp));
  }
  // y = byte / 2^bit: bit = floor(y) - 2 floor(y / 2); the int32 casts in place
  LocalTensor<int32_t> floors = scratch.ReinterpretCast<int32_t>(), halves = factors.ReinterpretCast<int32_t>();
  Cast(floors, factors, RoundMode::CAST_FLOOR, n);
  Cast(scratch, floors, RoundMode::CAST_NONE, n);
  Muls(factors, factors, 0.5f, n);
  Cast(halves, factors, RoundMode::CAST_FLOOR, n);
  Cast(factors, halves, RoundMode::CAST_NONE, n);
  Muls(factors, factors, -2.0f, n);
  Add(factors, factors, scratch, n);
  Muls(factors, factors, invKeepProb, n);
}

// An AIV's dropout: drop_mask in GM, its buffers and tables, for blocks of up to s2Block keys.
class AttentionDropout {
 public:
  __aicore__ inline void Init(TPipe& pipe, const AttentionDropoutUb& ub, uint32_t s2Block, GM_ADDR dropMask) {
    mask_.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>(dropMask));
    pipe.InitBuffer(bytes_, ub.bytes);
    pipe.InitBuffer(floats_, ub.floats);
    pipe.InitBuffer(factors_, ub.factors);
    pipe.InitBuffer(offsets_, ub.tables);
    pipe.InitBuffer(powers_, ub.tables);
    pitch_ = s2Block;
    AttentionDropoutTables(offsets_.Get<uint32_t>(), powers_.Get<float>(), pitch_);
  }

  // Rows [0, rows) x keys [0, cols) of a block, row r's first key at bit firstBit + r * rowBits: its bytes (MTE2;
  // Factors syncs).
  __aicore__ inline void Load(int64_t firstBit, int64_t rowBits, uint32_t rows, uint32_t cols) {
    AttentionLoadDropout(bytes_.Get<uint8_t>(), mask_, firstBit, rowBits, rows, cols, AttentionDropoutRowBytes(pitch_));
  }

  // keep / keep_prob [rows, pp] of the loaded block (Load's firstBit and rowBits); scratch as
  // AttentionDropoutFactors's.
  __aicore__ inline LocalTensor<float> Factors(const LocalTensor<float>& scratch, int64_t firstBit, int64_t rowBits,
                                               uint32_t rows, uint32_t pp, float invKeepProb) {
    SyncPipes<HardEvent::MTE2_V>();
    AttentionDropoutFactors(factors_.Get<float>(), bytes_.Get<uint8_t>(), floats_.Get<float>(), scratch,
                            offsets_.Get<uint32_t>(), powers_.Get<float>(), pitch_, firstBit, rowBits, rows, pp,
                            AttentionDropoutRowBytes(pitch_), invKeepProb);
    return factors_.Get<float>();
  }

  // The last Factors.
  __aicore__ inline LocalTensor<float> LastFactors() { return factors_.Get<float>(); }

 private:
  GlobalTensor<uint8_t> mask_;
  TBuf<TPosition::VECCALC> bytes_, floats_, factors_, offsets_, powers_;
  uint32_t pitch_ = 0;
};
