// Attention dropout's explicit mask on the AIVs (docs/attention.md, "Dropout"): torch_npu's uint8 mask holds one
// bit per score element, flat over [B, N1, S1, S2] (TND: each sequence's [N1, s1_b, s2_b] after the ones before
// it), element e in bit e % 8 of byte e / 8, 1 = kept. A block of `rows` score rows x `cols` keys becomes fp32
// factors keep / keep_prob [rows, pp] (pp = cols rounded up to 8).
// Rows at any bit (S2 % 8 != 0; TND: a sequence's keys % 8 != 0; kDropoutBits):
//   AttentionLoadDropout: each row's bytes from GM (a row starts at any bit, so one copy a row) into `bytes`,
//     rb = AttentionDropoutRowBytes(cols) a row, zero past them;
//   AttentionDropoutFactors: the bytes as fp32; per row a Gather of each key's byte (the row's bit shift picks
//     one of 8 offset tables) times 2^-bit (the same shift's power table).
// Rows of whole bytes (every S2 % 8 == 0, kDropoutBytes: every row starts at bit 0, pp = cols):
//   AttentionLoadDropoutBytes: one strided copy for the block;
//   AttentionDropoutByteFactors: the bytes as fp32, packed to pp / 8 a row where a row is whole blocks, each
//     repeated 8 times by one Brcb (a Brcb a row otherwise), times 2^-(c % 8) in one multiply from a 32-byte block
//     every block of a repeat re-reads.
// Both then bit = floor(y) mod 2 by shifts of the integer: bit << 30 is 2.0f or 0, times 1 / (2 keep_prob). The
// tables are built once for the widest block. AttentionDropout holds an AIV's buffers (the UB plan's
// AttentionDropoutUb) and drop_mask, for the forward's and the backward's AIVs alike.
#pragma once
#include "kernel_operator.h"
// after kernel_operator.h: its functions are __aicore__
#include "attention_buffers.h"
#include "kernel_utils.h"

using namespace AscendC;

namespace attention_dropout {
constexpr uint32_t kShifts = 8;  // a row's first bit within its first byte
constexpr uint32_t kLanes = 64;  // fp32 lanes of a repeat
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

// Whole-byte rows: powers, one block: 2^-c for c < 8 (key c's bit is c % 8).
__aicore__ inline void AttentionDropoutBytePowers(const LocalTensor<float>& powers) {
  for (uint32_t c = 0; c < attention_dropout::kShifts; ++c) powers.SetValue(c, 1.0f / float(1u << c));
  SyncPipes<HardEvent::S_V>();
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

// Whole-byte rows [0, rows) of a block of cols (a multiple of 8) keys, row r's from byte firstByte + r * rowBytes
// of `mask`, into `bytes`, AttentionDropoutByteRowBytes(cols) a row, zero past cols / 8: one strided copy (MTE2;
// the caller syncs before reading it).
__aicore__ inline void AttentionLoadDropoutBytes(const LocalTensor<uint8_t>& bytes, const GlobalTensor<uint8_t>& mask,
                                                 int64_t firstByte, int64_t rowBytes, uint32_t rows, uint32_t cols) {
  const uint32_t n = cols / 8, rb = AttentionDropoutByteRowBytes(cols);
  SyncPipes<HardEvent::V_MTE2>();  // V is done with the last block's bytes
  DataCopyPad(bytes, mask[firstByte], DataCopyExtParams(uint16_t(rows), n, uint32_t(rowBytes) - n, 0, 0),
              DataCopyPadExtParams<uint8_t>(rb != n, 0, uint8_t(rb - n), 0));
}

// floats [nb] = bytes [nb] as fp32, through half at the start of `through` (uint8 casts to half only).
__aicore__ inline void AttentionDropoutBytesAsFloat(const LocalTensor<float>& floats, const LocalTensor<uint8_t>& bytes,
                                                    const LocalTensor<float>& through, int32_t nb) {
  const LocalTensor<half> bytesHalf = through.ReinterpretCast<half>();
  Cast(bytesHalf, bytes, RoundMode::CAST_NONE, nb);
  Cast(floats, bytesHalf, RoundMode::CAST_NONE, nb);
}

// factors [n] hold y = byte / 2^bit: the bit is floor(y)'s lowest, which shifts to bit 30, 2.0f's only one (0
// stays 0.0f); times 1 / (2 keep_prob) (exact: a halving), in place.
__aicore__ inline void AttentionDropoutBits(const LocalTensor<float>& factors, int32_t n, float invKeepProb) {
  const LocalTensor<uint32_t> bits = factors.ReinterpretCast<uint32_t>();
  Cast(factors.ReinterpretCast<int32_t>(), factors, RoundMode::CAST_FLOOR, n);
  ShiftLeft(bits, bits, 31u, n);
  ShiftRight(bits, bits, 1u, n);
  Muls(factors, factors, 0.5f * invKeepProb, n);
}

// factors [rows, pp] = keep / keep_prob of the loaded block (AttentionLoadDropout's firstBit and rowBits), the
// tables `pitch` apart; bytesFloat rows * rb floats (Gather's source: not factors). factors holds rows * pitch
// floats, the bytes' halves first.
__aicore__ inline void AttentionDropoutFactors(const LocalTensor<float>& factors, const LocalTensor<uint8_t>& bytes,
                                               const LocalTensor<float>& bytesFloat,
                                               const LocalTensor<uint32_t>& offsets, const LocalTensor<float>& powers,
                                               uint32_t pitch, int64_t firstBit, int64_t rowBits, uint32_t rows,
                                               uint32_t pp, uint32_t rb, float invKeepProb) {
  AttentionDropoutBytesAsFloat(bytesFloat, bytes, factors, int32_t(rows * rb));
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t s = uint32_t((firstBit + int64_t(r) * rowBits) & 7);
    Gather(factors[r * pp], bytesFloat, offsets[s * pitch], r * rb * uint32_t(sizeof(float)), pp);
    Mul(factors[r * pp], factors[r * pp], powers[s * pitch], int32_t(pp));
  }
  AttentionDropoutBits(factors, int32_t(rows * pp), invKeepProb);
}

// factors [rows, pp] = keep / keep_prob of a loaded whole-byte block (AttentionLoadDropoutBytes's, pp = its cols);
// bytesFloat rows * rb floats, Brcb's source. Where a row's bytes are whole 32-byte blocks of fp32 (pp % 64 == 0)
// they are packed into bytesFloat, pp / 8 a row (the fp32 bytes first in factors, after their halves), and one
// Brcb repeats each 8 times; else a Brcb a row (its last repeat runs into the next row, which the next Brcb
// writes). factors holds rows * pitch floats, pitch >= 64 a multiple of 64.
__aicore__ inline void AttentionDropoutByteFactors(const LocalTensor<float>& factors, const LocalTensor<uint8_t>& bytes,
                                                   const LocalTensor<float>& bytesFloat,
                                                   const LocalTensor<float>& powers, uint32_t rows, uint32_t pp,
                                                   float invKeepProb) {
  using attention_dropout::kLanes;
  constexpr uint32_t kMaxRepeats = 255;  // a Brcb's or a Mul's repeats (uint8_t repeatTime)
  const uint32_t rb = AttentionDropoutByteRowBytes(pp), n = rows * pp;
  if (pp % kLanes == 0 && rb != pp / 8) {
    const LocalTensor<float> unpacked = factors[rows * rb / 2];  // past the halves
    AttentionDropoutBytesAsFloat(unpacked, bytes, factors, int32_t(rows * rb));
    DataCopy(bytesFloat, unpacked,
             DataCopyParams(uint16_t(rows), uint16_t(pp / kLanes), uint16_t((rb - pp / 8) / 8), 0));
  } else {
    AttentionDropoutBytesAsFloat(bytesFloat, bytes, factors, int32_t(rows * rb));
  }
  if (pp % kLanes == 0) {
    for (uint32_t at = 0; at < n; at += kLanes * kMaxRepeats) {
      const uint32_t repeats = (n - at < kLanes * kMaxRepeats ? n - at : kLanes * kMaxRepeats) / kLanes;
      Brcb(factors[at], bytesFloat[at / 8], uint8_t(repeats), BrcbRepeatParams(1, 8));
    }
  } else {
    for (uint32_t r = 0; r < rows; ++r)
      Brcb(factors[r * pp], bytesFloat[r * rb], uint8_t((pp + kLanes - 1) / kLanes), BrcbRepeatParams(1, 8));
  }
  const BinaryRepeatParams eachBlock(1, 1, 0, 8, 8, 0);  // src1: the powers' one block for every block
  for (uint32_t at = 0; at < n; at += kLanes * kMaxRepeats) {
    const uint32_t len = n - at < kLanes * kMaxRepeats ? n - at : kLanes * kMaxRepeats, full = len / kLanes;
    if (full > 0) Mul(factors[at], factors[at], powers, kLanes, uint8_t(full), eachBlock);
    if (len % kLanes > 0)
      Mul(factors[at + full * kLanes], factors[at + full * kLanes], powers, len % kLanes, 1, eachBlock);
  }
  AttentionDropoutBits(factors, int32_t(n), invKeepProb);
}

// An AIV's dropout: drop_mask (maskBytes bytes) in GM, its buffers and tables, for blocks of up to s2Block keys (the
// UB plan's), in `mode` (AttentionTilingData::dropout). The factors go into a buffer the caller has free.
class AttentionDropout {
 public:
  // A kernel's: the plan's buffers for t's blocks and mode, and the score layout of t (TND: varlenTable holds the
  // cumulative ends, cumQ then cumKv, of t.batch sequences): score (b, n, i, j) is bit
  // N1 * sum_{c<b} s1_c * s2_c + (n * s1_b + i) * s2_b + j, so the mask holds N1 * sum_b s1_b * s2_b bits.
  __aicore__ inline void Init(TPipe& pipe, const AttentionDropoutUb& ub, const AttentionTilingData& t, GM_ADDR dropMask,
                              GM_ADDR varlenTable) {
    heads_ = t.heads, varlen_ = t.varlen != 0, batches_ = t.batch;
    if (varlen_) cum_.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(varlenTable), 2 * t.batch);
    const int64_t scores = heads_ * ScoresBefore(t.batch, t.s1, t.s2);
    Init(pipe, ub, uint32_t(t.s2Block), t.dropout, dropMask, uint64_t(scores + 7) / 8);
  }

  // The bit of score (b, n, i, j) of a batch of s1 query rows and s2 keys.
  __aicore__ inline int64_t Bit(int64_t b, int64_t n, int64_t i, int64_t j, int64_t s1, int64_t s2) {
    return heads_ * ScoresBefore(b, s1, s2) + (n * s1 + i) * s2 + j;
  }

  // The buffers and tables alone, drop_mask's reads bounded by maskBytes (the twin's unpacking test's, Bit unused).
  __aicore__ inline void Init(TPipe& pipe, const AttentionDropoutUb& ub, uint32_t s2Block, int32_t mode,
                              GM_ADDR dropMask, uint64_t maskBytes) {
    mask_.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>(dropMask), maskBytes);
    pipe.InitBuffer(bytes_, ub.bytes);
    pipe.InitBuffer(floats_, ub.floats);
    if (ub.offsets > 0) pipe.InitBuffer(offsets_, ub.offsets);
    pipe.InitBuffer(powers_, ub.powers);
    pitch_ = s2Block, wholeBytes_ = mode == kDropoutBytes;
    if (wholeBytes_) {
      AttentionDropoutBytePowers(powers_.Get<float>());
    } else {
      AttentionDropoutTables(offsets_.Get<uint32_t>(), powers_.Get<float>(), pitch_);
    }
  }

  // Score elements sum_{c<b} s1_c * s2_c of the batches before b (of s1 x s2 each in the fixed layouts); TND's
  // from the cumulative ends, counted on from the last call's batch (the walks go forwards; counted again from 0
  // when a walk starts over).
  __aicore__ inline int64_t ScoresBefore(int64_t b, int64_t s1, int64_t s2) {
    if (!varlen_) return b * s1 * s2;
    if (b < seq_) seq_ = 0, before_ = 0;
    for (; seq_ < b; ++seq_) before_ += Length(seq_, 0) * Length(seq_, batches_);
    return before_;
  }

  // Rows [0, rows) x keys [0, cols) of a block, row r's first key at bit firstBit + r * rowBits: its bytes (MTE2;
  // Factors syncs).
  __aicore__ inline void Load(int64_t firstBit, int64_t rowBits, uint32_t rows, uint32_t cols) {
    if (wholeBytes_) {
      AttentionLoadDropoutBytes(bytes_.Get<uint8_t>(), mask_, firstBit >> 3, rowBits >> 3, rows, cols);
    } else {
      AttentionLoadDropout(bytes_.Get<uint8_t>(), mask_, firstBit, rowBits, rows, cols,
                           AttentionDropoutRowBytes(pitch_));
    }
  }

  // keep / keep_prob [rows, pp] of the loaded block (Load's firstBit and rowBits) into `into` (a free buffer of
  // rows x s2Block floats), which it returns.
  __aicore__ inline LocalTensor<float> Factors(const LocalTensor<float>& into, int64_t firstBit, int64_t rowBits,
                                               uint32_t rows, uint32_t pp, float invKeepProb) {
    SyncPipes<HardEvent::MTE2_V>();
    if (wholeBytes_) {
      AttentionDropoutByteFactors(into, bytes_.Get<uint8_t>(), floats_.Get<float>(), powers_.Get<float>(), rows, pp,
                                  invKeepProb);
    } else {
      AttentionDropoutFactors(into, bytes_.Get<uint8_t>(), floats_.Get<float>(), offsets_.Get<uint32_t>(),
                              powers_.Get<float>(), pitch_, firstBit, rowBits, rows, pp,
                              AttentionDropoutRowBytes(pitch_), invKeepProb);
    }
    return into;
  }

 private:
  // Sequence b's length from the cumulative ends at `at` (cumQ: 0, cumKv: batches_).
  __aicore__ inline int64_t Length(int64_t b, int64_t at) {
    return cum_.GetValue(at + b) - (b > 0 ? cum_.GetValue(at + b - 1) : 0);
  }

  GlobalTensor<uint8_t> mask_;
  GlobalTensor<int64_t> cum_;
  TBuf<TPosition::VECCALC> bytes_, floats_, offsets_, powers_;
  uint32_t pitch_ = 0;
  bool wholeBytes_ = false, varlen_ = false;
  int64_t heads_ = 1, batches_ = 0, seq_ = 0, before_ = 0;
};
