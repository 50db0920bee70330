// Fused attention unit tests: the problem function's messages and output shapes (every layer's), the
// tiling's block sizes against L1 / L0 / UB, its workspace, and the S2 blocks each task needs under the
// band (fully masked blocks skipped); the backward's tiling and the S1 blocks its key tasks visit. Prints
// "N passed, M failed".
#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "attention_blocks.h"
#include "attention_buffers.h"
#include "attention_grad_tiling.h"
#include "attention_problem.h"
#include "expect.h"
#include "platform.h"

using namespace tiling;
using expect::ArgErrorOf;
using expect::Throws;

namespace {
const DType f16 = DType::kFloat16, f32 = DType::kFloat32, bf16 = DType::kBFloat16, b1 = DType::kBool;
const OpSpec kOp{"fusion_attention",
                 "",
                 {"query", "key", "value", "atten_mask"},
                 {{f16, f16, f16, b1}, {f32, f32, f32, b1}, {bf16, bf16, bf16, b1}}};
const TensorArg<int64_t> kNoMask{{}, DType::kOther, false};
const std::vector<int64_t> kCum3{2, 4, 6};

TensorArg<int64_t> T(std::vector<int64_t> shape, DType t = f16) { return {std::move(shape), t, true}; }

struct Call {
  TensorArg<int64_t> q, k, v, mask = kNoMask;
  int64_t heads = 1;
  std::string layout = "BNSD";
  int64_t pre = 2147483647, next = 2147483647;
  const std::vector<int64_t>* qlen = nullptr;
  const std::vector<int64_t>* kvlen = nullptr;
  int64_t mode = 0;
  AttentionMaskBytes maskBytes;
  AttentionAttrs Attrs() const {
    const auto list = [](const std::vector<int64_t>* l) {
      return l ? std::optional<std::vector<int64_t>>(*l) : std::nullopt;
    };
    return {heads, layout, 0.125, pre, next, list(qlen), list(kvlen), mode};
  }
  AttentionArgs<int64_t> Run() const { return CheckFusionAttention(kOp, q, k, v, mask, Attrs(), maskBytes); }
  std::string Error(ArgError::Kind* kind = nullptr) const {
    return ArgErrorOf([&] { Run(); }, kind);
  }
  AttentionProblem Problem() const { return AttentionProblemOf(Run()); }
  AttentionTiling Tile(uint32_t cores = 24) const { return TileAttention(Problem(), Ascend910BCube(cores)); }
  AttentionGradTiling TileGrad(uint32_t cores = 24) const {
    return TileAttentionGrad(Problem(), Ascend910BCube(cores));
  }
};

Call Bnsd(int64_t b, int64_t n1, int64_t n2, int64_t s1, int64_t s2, int64_t d, int64_t dv, DType t = f16) {
  Call c{T({b, n1, s1, d}, t), T({b, n2, s2, d}, t), T({b, n2, s2, dv}, t)};
  c.heads = n1;
  return c;
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void TestShapes() {
  Call c = Bnsd(2, 8, 2, 100, 300, 128, 128);
  AttentionArgs<int64_t> a = c.Run();
  EXPECT((a.out == std::vector<int64_t>{2, 8, 100, 128}));
  EXPECT((a.stats == std::vector<int64_t>{2, 8, 100, 8}));
  EXPECT(a.heads == 8 && a.kvHeads == 2 && a.s1 == 100 && a.s2 == 300);
  Call bsh{T({2, 100, 8 * 64}), T({2, 300, 2 * 64}), T({2, 300, 2 * 48})};
  bsh.heads = 8, bsh.layout = "BSH";
  a = bsh.Run();
  EXPECT(a.headDim == 64 && a.valueDim == 48 && a.kvHeads == 2);
  EXPECT((a.out == std::vector<int64_t>{2, 100, 8 * 48}));
  Call sbh{T({100, 2, 8 * 64}), T({300, 2, 4 * 64}), T({300, 2, 4 * 64})};
  sbh.heads = 8, sbh.layout = "SBH";
  EXPECT((sbh.Run().out == std::vector<int64_t>{100, 2, 8 * 64}));
  Call bsnd{T({2, 100, 8, 80}), T({2, 30, 8, 80}), T({2, 30, 8, 80})};
  bsnd.heads = 8, bsnd.layout = "BSND";
  EXPECT((bsnd.Run().stats == std::vector<int64_t>{2, 8, 100, 8}));
  Call tnd{T({6, 4, 64}), T({6, 2, 64}), T({6, 2, 64})};
  tnd.heads = 4, tnd.layout = "TND", tnd.qlen = &kCum3, tnd.kvlen = &kCum3;
  a = tnd.Run();
  EXPECT((a.out == std::vector<int64_t>{6, 4, 64}) && (a.stats == std::vector<int64_t>{6, 4, 8}) && a.batch == 3);
}

void TestErrors() {
  Call c = Bnsd(2, 8, 2, 16, 16, 64, 64);
  Call bad = c;
  bad.layout = "NSD";
  EXPECT(bad.Error() == "fusion_attention: input_layout must be one of 'BSH', 'SBH', 'BSND', 'BNSD', 'TND', got 'NSD'");
  bad = c, bad.q = T({2, 8, 16});
  EXPECT(bad.Error() ==
         "fusion_attention: query must be 4-D [B, N, S, D] for input_layout='BNSD', got shape [2, 8, 16]");
  bad = Bnsd(2, 8, 3, 16, 16, 64, 64);
  EXPECT(bad.Error() == "fusion_attention: query's heads N1 = 8 must be a multiple of key's heads N2 = 3");
  bad = c, bad.k = T({2, 2, 16, 32});
  EXPECT(bad.Error() == "fusion_attention: key's head dim Dk must equal query's Dq = 64, got 32");
  bad = Bnsd(2, 8, 2, 16, 16, 64, 80);
  EXPECT(bad.Error() == "fusion_attention: value's head dim Dv must be at most Dk = 64, got 80");
  bad = c, bad.heads = 4;
  EXPECT(bad.Error() == "fusion_attention: head_num must equal query's N = 8, got 4");
  Call bsh{T({2, 16, 8 * 64}), T({2, 16, 2 * 64}), T({2, 16, 2 * 64})};
  bsh.heads = 3, bsh.layout = "BSH";
  EXPECT(bsh.Error() == "fusion_attention: head_num = 3 must divide query's H = 512");
  bad = c, bad.k = T({3, 2, 16, 64});
  EXPECT(Contains(bad.Error(), "query, key and value must have one batch size B = 2"));
  bad = c, bad.v = T({2, 2, 17, 64});
  EXPECT(bad.Error() == "fusion_attention: value must have key's S = 16 rows, got 17 (shape [2, 2, 17, 64])");
  ArgError::Kind kind = ArgError::kValue;
  bad = c, bad.k.dtype = f32;
  EXPECT(bad.Error(&kind) == "fusion_attention: key must have query's dtype float16, got float32" &&
         kind == ArgError::kType);
  for (int64_t mode : {5, 6}) {
    bad = c, bad.mode = mode;
    EXPECT(bad.Error() ==
           "fusion_attention: sparse_mode " + std::to_string(mode) + " (prefix) is not supported; supported: 0-4");
  }
  bad = c, bad.mode = 7;
  EXPECT(Contains(bad.Error(), "sparse_mode 7 (varlen split across cards) is not supported"));
  bad = c, bad.mode = 9;
  EXPECT(Contains(bad.Error(), "sparse_mode must be 0-4"));
  // masks
  bad = c, bad.mask = T({2, 8, 16, 15}, b1);
  EXPECT(Contains(bad.Error(),
                  "atten_mask must be [B, N, S1, S2], [B, 1, S1, S2], [1, 1, S1, S2] or [S1, S2] = "
                  "[16, 16] (B = 2, N = 8), got shape [2, 8, 16, 15]"));
  bad = c, bad.mask = T({1, 8, 16, 16}, b1);
  EXPECT(Contains(bad.Error(), "got shape [1, 8, 16, 16]"));
  bad = c, bad.mask = T({16, 16}, f16);
  EXPECT(bad.Error(&kind) == "fusion_attention: atten_mask must be one of bool, got float16" &&
         kind == ArgError::kType);
  bad = c, bad.mode = 3, bad.mask = T({16, 16}, b1);
  EXPECT(bad.Error() ==
         "fusion_attention: atten_mask must be the compressed [2048, 2048] causal mask for sparse_mode 3, got "
         "shape [16, 16]");
  Call one = Bnsd(1, 8, 2, 16, 16, 64, 64);  // B = 1: [1, N, S1, S2] is BNSS
  one.mask = T({1, 8, 16, 16}, b1);
  EXPECT(one.Error().empty());
  for (auto shape : std::vector<std::vector<int64_t>>{{2, 8, 16, 16}, {2, 1, 16, 16}, {1, 1, 16, 16}, {16, 16}}) {
    Call ok = c;
    ok.mask = T(shape, b1);
    EXPECT(ok.Error().empty());
  }
  // varlen
  Call tnd{T({6, 4, 64}), T({6, 2, 64}), T({6, 2, 64})};
  tnd.heads = 4, tnd.layout = "TND";
  EXPECT(Contains(tnd.Error(), "input_layout='TND' needs actual_seq_qlen and actual_seq_kvlen"));
  const std::vector<int64_t> down{2, 1, 6}, shortEnd{2, 4, 5}, two{3, 6};
  tnd.qlen = &down, tnd.kvlen = &kCum3;
  EXPECT(tnd.Error() ==
         "fusion_attention: actual_seq_qlen must be cumulative sequence ends (non-decreasing, from >= 0, no leading "
         "0, trailing 0s allowed), got [2, 1, 6]: entry 1 = 1 is below 2");
  tnd.qlen = &kCum3, tnd.kvlen = &shortEnd;
  EXPECT(tnd.Error() ==
         "fusion_attention: actual_seq_kvlen must end at key's T = 6 tokens, got [2, 4, 5] (ending at 5)");
  tnd.kvlen = &two;
  EXPECT(Contains(tnd.Error(), "must have one entry per batch"));
  bad = c, bad.qlen = &kCum3;
  EXPECT(Contains(bad.Error(), "are for input_layout='TND' only"));
  // trailing zeros drop batches; a TND mask is [max S1, max S2]
  const std::vector<int64_t> trailing{2, 6, 0, 0};
  tnd.qlen = &trailing, tnd.kvlen = &trailing;
  EXPECT(tnd.Error().empty() && tnd.Run().batch == 4);
  EXPECT(AttentionLengths(trailing) == (std::vector<int64_t>{2, 4, 0, 0}));
  tnd.mask = T({4, 4}, b1);
  EXPECT(tnd.Error().empty());
  tnd.mask = T({6, 6}, b1);
  EXPECT(tnd.Error() ==
         "fusion_attention: atten_mask must be [max S1, max S2] = [4, 4] for input_layout='TND', got "
         "shape [6, 6]");
  tnd.mask = T({2048, 2048}, b1), tnd.mode = 3;
  EXPECT(tnd.Error().empty());
  const std::vector<int64_t> longQ{3, 6}, shortK{2, 6};
  tnd.qlen = &longQ, tnd.kvlen = &shortK;
  EXPECT(tnd.Error() ==
         "fusion_attention: sparse_mode 3 with input_layout='TND' needs S1 <= S2 in every sequence, got "
         "S1 = 3, S2 = 2 in sequence 0");
  // bands that keep no key anywhere, as torch_npu's tiling refuses them (only with a mask)
  Call band = c;
  band.mask = T({16, 16}, b1), band.pre = -20, band.next = 30;
  EXPECT(band.Error() ==
         "fusion_attention: pre_tockens = -20, next_tockens = 30 leave no valid block for sparse_mode 0 with S1 = 16, "
         "S2 = 16");
  band.pre = -4;
  EXPECT(band.Error().empty());
  band.mask = kNoMask, band.pre = -20;
  EXPECT(band.Error().empty());  // no mask: the tokens are ignored
  band.mask = T({1, 1, 2048, 2048}, b1), band.mode = 4, band.pre = 0, band.next = -17;
  EXPECT(Contains(band.Error(), "leave no valid block for sparse_mode 4"));

  // sparse_mode 2-4's mask values, where the caller has them: triu(ones(2048, 2048), 1), any non-zero byte True;
  // read only for those modes
  const int64_t m = kAttentionCompressedMask;
  std::vector<uint8_t> triu(size_t(m * m), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = i + 1; j < m; ++j) triu[size_t(i * m + j)] = uint8_t(j % 2 ? 1 : 7);
  int reads = 0;
  Call causal = c;
  causal.mode = 2, causal.mask = T({2048, 2048}, b1);
  causal.maskBytes = [&] { return ++reads, triu.data(); };
  EXPECT(causal.Error().empty() && reads == 1);
  triu[size_t(5 * m + 5)] = 1;  // the diagonal masked
  EXPECT(causal.Error() ==
         "fusion_attention: atten_mask must be triu(ones(2048, 2048), 1) for sparse_mode 2 (the compressed causal "
         "mask), got another matrix");
  triu[size_t(5 * m + 5)] = 0, triu[size_t(m * m - 1 - m)] = 0;  // a key above the diagonal kept
  EXPECT(Contains(causal.Error(), "got another matrix"));
  Call full = c;
  full.mask = T({16, 16}, b1), full.maskBytes = causal.maskBytes;
  EXPECT(full.Error().empty() && reads == 3);  // sparse_mode 0: the values are the caller's to choose
}

// Every block size fits A2's buffers, with the L1 tiles and L0C buffered as the tiling says (two of each
// where they fit, at 128 x 128 blocks in 16-bit dtypes); the workspace holds the S, P and P V slots per group.
void TestTilingLimits() {
  for (DType t : {f16, bf16, f32})
    for (int64_t d : {16, 64, 80, 128, 256}) {
      Call c = Bnsd(1, 2, 1, 1000, 700, d, d, t);
      const AttentionTiling a = c.Tile();
      const AttentionTilingData& td = a.data;
      const int64_t bytes = ElementBytes(t), d16 = (d + 15) / 16 * 16;
      EXPECT(td.s1Block >= 32 && td.s2Block >= 128 && td.s1Block * td.s2Block <= 128 * 128 && td.qkChunk % 16 == 0 &&
             td.pvChunk % 16 == 0);
      EXPECT(int64_t(td.s1Block) * std::max<int64_t>(td.qkChunk, td.pvChunk) * bytes * 2 <= kA2L0aBytes);
      EXPECT(int64_t(td.s2Block) * td.qkChunk * bytes * 2 <= kA2L0bBytes);
      EXPECT(int64_t(td.pvChunk) * td.vPitch * bytes * 2 <= kA2L0bBytes);
      EXPECT(td.l0cBuffers * int64_t(td.s1Block) * std::max<int64_t>(td.s2Block, td.vPitch) * 4 <= kA2L0cBytes);
      EXPECT(
          td.l1Buffers *
              (int64_t(td.s1Block) * d16 + int64_t(td.s2Block) * (d16 + td.vPitch) + int64_t(td.s1Block) * td.s2Block) *
              bytes <=
          kA2L1Bytes);
      EXPECT(td.l1Buffers >= 1 && td.l1Buffers <= 2 && td.l0cBuffers >= 1 && td.l0cBuffers <= 2);
      if (bytes == 2 && d <= 128) EXPECT(td.s1Block == 128 && td.l1Buffers == 2 && td.l0cBuffers == 2);
      EXPECT(td.workspacePerGroup >= kAttentionSSlots * td.s1Block * td.s2Block * 4 +
                                         kAttentionPSlots * td.s1Block * td.s2Block * bytes +
                                         kAttentionOSlots * td.s1Block * td.vPitch * 4);
      EXPECT(td.pOffset >= kAttentionSSlots * td.sSlotBytes &&
             td.oOffset >= td.pOffset + kAttentionPSlots * td.pSlotBytes &&
             td.workspacePerGroup >= td.oOffset + kAttentionOSlots * td.oSlotBytes);
      EXPECT(a.workspaceBytes == int64_t(a.blockDim) * td.workspacePerGroup);
      EXPECT(td.tasks == 2 * ((1000 + td.s1Block - 1) / td.s1Block) && a.blockDim == std::min<int64_t>(td.tasks, 24));
    }
  EXPECT(Throws([] { Bnsd(1, 1, 1, 8, 8, 4096, 4096, f32).Tile(); }));
  // a row pitch past the cube's 16-bit srcDValue
  Call wide{T({1, 8, 512 * 128}), T({1, 8, 512 * 128}), T({1, 8, 512 * 128})};
  wide.heads = 512, wide.layout = "BSH";
  EXPECT(Throws([&] { wide.Tile(); }));
  // nothing to compute
  EXPECT(Bnsd(0, 2, 1, 8, 8, 64, 64).Tile().blockDim == 0);
  EXPECT(Bnsd(1, 2, 1, 0, 8, 64, 64).Tile().blockDim == 0);
}

// The S2 blocks per task: all of them without a band; the causal modes skip the blocks above the diagonal,
// bottom-right shifted by S2 - S1; a row block whose rows keep no key needs none.
void TestBlocks() {
  Call c = Bnsd(1, 1, 1, 512, 512, 64, 64);
  AttentionTiling full = c.Tile();
  const int64_t s1b = full.data.s1Block;
  std::vector<int64_t> blocks = AttentionTaskBlocks(full);
  EXPECT(int64_t(blocks.size()) == 512 / s1b);
  EXPECT(std::all_of(blocks.begin(), blocks.end(), [](int64_t n) { return n == 4; }));
  Call causal = c;
  causal.mode = 2, causal.mask = T({2048, 2048}, b1);
  AttentionTiling ct = causal.Tile();
  blocks = AttentionTaskBlocks(ct);
  int64_t total = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT(blocks[i] == (int64_t(i + 1) * s1b + 127) / 128);
    total += blocks[i];
  }
  EXPECT(total < 4 * int64_t(blocks.size()));  // fewer blocks than the full problem
  // bottom-right, S1 < S2: the last row block sees every key, the first the keys up to S2 - S1 + its rows
  Call br = Bnsd(1, 1, 1, 128, 512, 64, 64);
  br.mode = 3, br.mask = T({2048, 2048}, b1);
  blocks = AttentionTaskBlocks(br.Tile());
  EXPECT(blocks.back() == 4);
  // bottom-right, S1 > S2: the first S1 - S2 rows keep no key
  Call tall = Bnsd(1, 1, 1, 512, 64, 64, 64);
  tall.mode = 3, tall.mask = T({2048, 2048}, b1);
  AttentionTiling tt = tall.Tile();
  blocks = AttentionTaskBlocks(tt);
  EXPECT(blocks.front() == 0 && blocks.back() == 1);
  int64_t lo, hi;
  AttentionRowKeys(tt.data, 447, 512, 64, lo, hi);
  EXPECT(lo == 0 && hi == 0);
  AttentionRowKeys(tt.data, 448, 512, 64, lo, hi);
  EXPECT(lo == 0 && hi == 1);
  // band (mode 4): pre 10, next 0 keeps keys [i + off - 10, i + off]
  Call band = Bnsd(1, 1, 1, 512, 512, 64, 64);
  band.mode = 4, band.pre = 10, band.next = 0, band.mask = T({2048, 2048}, b1);
  AttentionTiling bt = band.Tile();
  AttentionRowKeys(bt.data, 300, 512, 512, lo, hi);
  EXPECT(lo == 290 && hi == 301);
  blocks = AttentionTaskBlocks(bt);
  EXPECT(std::all_of(blocks.begin(), blocks.end(), [](int64_t n) { return n <= 2; }));
  // no mask: sparse_mode and the tokens are ignored
  Call ignored = c;
  ignored.mode = 0, ignored.pre = 0, ignored.next = 0;
  EXPECT(ignored.Tile().data.band == 0);
  // TND: tasks per batch by its own length
  const std::vector<int64_t> cum{1, 301, 301, 2349};
  Call tnd{T({2349, 4, 64}), T({2349, 2, 64}), T({2349, 2, 64})};
  tnd.heads = 4, tnd.layout = "TND", tnd.qlen = &cum, tnd.kvlen = &cum;
  AttentionTiling nt = tnd.Tile();
  const int64_t b = nt.data.s1Block;
  EXPECT(nt.data.tasks == 4 * (1 + (300 + b - 1) / b + 0 + (2048 + b - 1) / b));
  EXPECT(int64_t(AttentionTaskBlocks(nt).size()) == nt.data.tasks);
  EXPECT((nt.varlenTable == std::vector<int64_t>{1, 301, 301, 2349, 1, 301, 301, 2349}));
}

// Decode with GQA: one task per (batch, kv head) when the group's rows fit a block; not for MHA, TND,
// longer queries, or the backward's query tasks.
void TestStackedHeads() {
  const AttentionTiling dec = Bnsd(2, 32, 8, 1, 700, 128, 128).Tile();
  EXPECT(dec.data.stackHeads == 4 && dec.data.tasks == 2 * 8 && dec.blockDim == 16);
  EXPECT(int64_t(AttentionTaskBlocks(dec).size()) == dec.data.tasks);
  EXPECT(Bnsd(1, 128, 8, 4, 512, 128, 128).Tile().data.stackHeads == 16);  // 64 rows
  EXPECT(Bnsd(1, 16, 2, 40, 512, 64, 64).Tile().data.stackHeads == 1);     // 320 rows: one head per task
  EXPECT(Bnsd(1, 8, 8, 1, 512, 64, 64).Tile().data.stackHeads == 1);       // MHA
  EXPECT(Bnsd(1, 8, 2, 0, 512, 64, 64).Tile().blockDim == 0);              // no rows, no tasks
  const std::vector<int64_t> cum{1, 2};
  Call tnd{T({2, 8, 64}), T({2, 2, 64}), T({2, 2, 64})};
  tnd.heads = 8, tnd.layout = "TND", tnd.qlen = &cum, tnd.kvlen = &cum;
  EXPECT(tnd.Tile().data.stackHeads == 1);
  const AttentionGradTiling g = Bnsd(2, 32, 8, 1, 700, 128, 128).TileGrad();
  EXPECT(g.data.fwd.stackHeads == 1 && g.data.fwd.tasks == 2 * 32);
}

// GQA prefill: bundles of a kv group's heads whose waves cost at most 1/16 more than single tasks' (all blocks
// alike without a mask: the busiest group's work is its waves), with the L1
// left by the blocks' buffers as K / V cache (all of S2 without streaming buffers when it fits); none for MHA,
// decode (stacked), or when the bundles would leave core groups idle.
void TestGroupHeads() {
  const auto waves = [](int64_t units, int64_t cores) { return (units + cores - 1) / cores; };
  for (DType t : {f16, bf16, f32})
    for (int64_t d : {40, 64, 128, 256})
      for (auto [b, n1, n2, s] :
           std::vector<std::array<int64_t, 4>>{{4, 64, 8, 512}, {1, 32, 8, 4096}, {2, 8, 2, 300}}) {
        const AttentionTiling a = Bnsd(b, n1, n2, s, s, d, d, t).Tile();
        const AttentionTilingData& td = a.data;
        const int64_t h = td.groupHeads, bytes = ElementBytes(t), d16 = (d + 15) / 16 * 16;
        EXPECT(h >= 1 && (n1 / n2) % h == 0 && 16 * h * waves(td.tasks / h, 24) <= 17 * waves(td.tasks, 24));
        EXPECT(a.blockDim == std::min<int64_t>(td.tasks / h, 24));
        EXPECT((h == 1) == (td.kvCacheBlocks == 0));
        const int64_t need = (s + td.s2Block - 1) / td.s2Block;
        EXPECT(td.kvStream == 1 || td.kvCacheBlocks == need);
        const int64_t l1 = td.l1Buffers * (int64_t(td.s1Block) * (d16 + td.s2Block) +
                                           td.kvStream * int64_t(td.s2Block) * (d16 + td.vPitch)) +
                           int64_t(td.kvCacheBlocks) * td.s2Block * (d16 + td.vPitch);
        EXPECT(l1 * bytes <= kA2L1Bytes);
      }
  // cann-bench's GQA 9: 1024 tasks, 43 waves; bundles of 4 heads take 11 waves (44 heads' time; 8 heads: 6, 48),
  // every S2 block cached, none streamed
  const AttentionTilingData g9 = Bnsd(4, 64, 8, 512, 512, 128, 128, bf16).Tile().data;
  EXPECT(g9.groupHeads == 4 && g9.kvStream == 0 && g9.kvCacheBlocks == 4);
  EXPECT(Bnsd(1, 8, 8, 512, 512, 128, 128).Tile().data.groupHeads == 1);       // MHA
  EXPECT(Bnsd(2, 32, 8, 1, 700, 128, 128).Tile().data.groupHeads == 1);        // decode: stacked
  EXPECT(Bnsd(1, 8, 1, 128, 128, 64, 64).Tile().data.groupHeads == 1);         // 8 tasks for 24 groups
  const AttentionTiling two = Bnsd(1, 8, 1, 128, 128, 64, 64).Tile(2);  // 2 groups: 4 waves in bundles of 4
  EXPECT(two.data.groupHeads == 4 && two.blockDim == 2);
  // tests/ops/test_attention.py's bundles on two groups: every S2 block cached, or the first 3 of 8 and streaming
  const AttentionTilingData all = Bnsd(1, 8, 2, 200, 300, 128, 128, bf16).Tile(2).data;
  EXPECT(all.groupHeads == 4 && all.kvStream == 0 && all.kvCacheBlocks == 3);
  const AttentionTilingData part = Bnsd(1, 8, 2, 200, 1000, 128, 128, bf16).Tile(2).data;
  EXPECT(part.groupHeads == 4 && part.kvStream == 1 && part.kvCacheBlocks == 3);
}

// The backward: blocks that fit every head dim and dtype, its task counts and workspace, and the S1 blocks
// a key task visits: exactly those holding a row that keeps one of its keys (checked row by row).
void TestGradTiling() {
  for (DType t : {f16, bf16, f32})
    for (auto [d, dv] : std::vector<std::pair<int64_t, int64_t>>{
             {40, 40}, {64, 64}, {80, 80}, {96, 64}, {128, 128}, {192, 128}, {256, 256}}) {
      const AttentionGradTiling g = Bnsd(2, 8, 2, 300, 500, d, dv, t).TileGrad();
      const AttentionTilingData& f = g.data.fwd;
      EXPECT(f.s1Block >= 32 && f.s2Block >= 32 && g.data.rowChunk >= 16 && f.pvChunk >= 16 && f.qkChunk >= 16);
      // the AIV's D pass takes at least 8 rows of dy * attention_in through an S block's buffer
      EXPECT((f.s1Block + 1) / 2 * f.s2Block / f.vPitch >= 8);
      EXPECT(f.tasks == 2 * 8 * ((300 + f.s1Block - 1) / f.s1Block));
      EXPECT(g.data.kvTasks == 2 * 2 * ((500 + f.s2Block - 1) / f.s2Block));
      // a slot per step in flight, each S, dP, P^T, dS and the two results, every block in it whole
      const int64_t s1b = f.s1Block, s2b = f.s2Block, dp = g.data.dPitch, vp = f.vPitch, s1p = g.data.s1Pitch;
      const int64_t bytes = t == f32 ? 4 : 2;
      EXPECT(g.data.workspacePerGroup == kAttentionGradSlots * g.data.slotBytes);
      EXPECT(g.data.dpOffset >= s1b * s2b * 4 && g.data.pOffset - g.data.dpOffset >= s1b * s2b * 4 &&
             g.data.dsOffset - g.data.pOffset >= s2b * s1p * bytes &&
             g.data.r1Offset - g.data.dsOffset >= std::max(s1b * s2b, s2b * s1p) * bytes &&
             g.data.r2Offset - g.data.r1Offset >= std::max(s1b, s2b) * dp * 4 &&
             g.data.slotBytes - g.data.r2Offset >= s2b * vp * 4 && g.data.slotBytes % 512 == 0);
      // the AIC's L1 queues (Q, dy, K l1Buffers deep; V and P^T with dS^T one) and L0C buffers fit A2's
      const int64_t l1 =
          (f.l1Buffers * (s1b * (dp + vp) + s2b * dp) + s2b * vp + std::max(2 * s2b * s1p, s1b * s2b)) * bytes;
      // below D 256 a task's sums stay in L0C (dk and dv of its keys, or dq of its rows) beside S / dP's buffers;
      // else each step's parts pass L0C too
      const int64_t sums = g.data.l0cSums ? std::max(s2b * (dp + vp), s1b * dp) * 4 : 0;
      const int64_t l0c = g.data.l0cSums ? s1b * s2b * 4 : std::max({s1b * s2b, s2b * std::max(dp, vp), s1b * dp}) * 4;
      EXPECT(g.data.l0cSums == (d < 256 ? 1 : 0));
      EXPECT(f.l1Buffers >= 1 && f.l1Buffers <= 2 && l1 <= kA2L1Bytes);
      EXPECT(f.l0cBuffers >= 1 && f.l0cBuffers <= 2 && sums + f.l0cBuffers * l0c <= kA2L0cBytes);
      if (t != f32 && d <= 128) EXPECT(f.l1Buffers == 2);  // the training head dims keep the cube a step ahead
      // the AIVs' buffers as their Init carves them, with vecSets sets of S / dP / statistics, fit UB; two (loads
      // under the previous step's work) at the training head dims, and only with the cube's lead
      const uint32_t rows = AttentionGradHalf(uint32_t(s1b)), keys = AttentionGradHalf(uint32_t(s2b));
      EXPECT(g.data.vecSets == 1 || g.data.vecSets == 2);
      EXPECT(AttentionGradVectorBuffers(rows, keys, uint32_t(s2b), uint32_t(dp), uint32_t(vp), uint32_t(bytes),
                                        f.maskFull, uint32_t(g.data.vecSets), f.dropout)
                 .Total() <= kA2UbBudget);
      EXPECT(g.data.vecSets == 1 || f.l1Buffers == 2);
      if (d <= 128) EXPECT(g.data.vecSets == 2);
      // with the ring (kAttentionGradRing step tiles and the task's tile, no other operand queues) the AIC's L1
      // still fits: seven tiles of the larger block's rows by D + Dv, and P with dS
      const int64_t ringL1 = (7 * std::max(s1b, s2b) * (dp + vp) + std::max(2 * s2b * s1p, s1b * s2b)) * bytes;
      EXPECT(g.data.qdyRing == 0 || (ringL1 <= kA2L1Bytes && f.l1Buffers == 2));
      EXPECT(ringL1 == AttentionGradRingL1Bytes(s1b, s2b, s1p, dp, vp, bytes));
      if (t != f32 && d <= 128) EXPECT(g.data.qdyRing == 1);
      // the groups' workspaces, then D of every query row (B x N1 x S1 fp32, 512-byte aligned)
      EXPECT(g.blockDim == 24 && g.data.dOffset == 24 * g.data.workspacePerGroup);
      EXPECT(g.workspaceBytes == g.data.dOffset + (2 * 8 * 300 * 4 + 511) / 512 * 512);
      // with a sink, then d_sink's partials: a 32-byte slot per query task and AIV, head by head
      EXPECT(g.data.sinkOffset == g.workspaceBytes && g.data.headTasks * 8 == f.tasks);
      AttentionProblem withSink = Bnsd(2, 8, 2, 300, 500, d, dv, t).Problem();
      withSink.sinkDefined = true;
      const AttentionGradTiling gs = TileAttentionGrad(withSink, Ascend910BCube(24));
      EXPECT(gs.data.fwd.sink == 1 && gs.data.sinkOffset == g.data.sinkOffset &&
             gs.workspaceBytes == g.workspaceBytes + (2 * f.tasks * 32 + 511) / 512 * 512);
    }
  // bf16 D 512: dk and dv of even 32 keys fill L0C, so each step's parts go out by themselves
  EXPECT(Bnsd(1, 2, 1, 40, 70, 512, 512, bf16).TileGrad().data.l0cSums == 0);
  struct Band {
    int64_t mode, pre, next, s1, s2;
  };
  for (const Band& b : std::vector<Band>{{2, 0, 0, 300, 200},
                                         {3, 0, 0, 200, 333},
                                         {3, 0, 0, 333, 200},
                                         {4, 50, 7, 300, 300},
                                         {4, 10, -3, 250, 400},
                                         {0, 1000, 1000, 90, 70}}) {
    Call c = Bnsd(1, 1, 1, b.s1, b.s2, 64, 64);
    c.mode = b.mode, c.pre = b.pre, c.next = b.next;
    c.mask = b.mode >= 2 ? T({2048, 2048}, b1) : T({b.s1, b.s2}, b1);
    const AttentionGradTiling g = c.TileGrad();
    const AttentionTilingData& t = g.data.fwd;
    const std::vector<int64_t> visits = AttentionGradKvTaskBlocks(g);
    EXPECT(int64_t(visits.size()) == g.data.kvTasks);
    for (int64_t j0 = 0, task = 0; j0 < b.s2; j0 += t.s2Block, ++task) {
      const int64_t j1 = std::min<int64_t>(b.s2, j0 + t.s2Block);
      int64_t first, count, want0 = -1, want1 = -1;
      AttentionS1Blocks(t, j0, j1, b.s1, b.s2, first, count);
      for (int64_t i = 0; i < b.s1; ++i) {
        int64_t lo, hi;
        AttentionRowKeys(t, i, b.s1, b.s2, lo, hi);
        if (std::max(lo, j0) < std::min(hi, j1)) {
          if (want0 < 0) want0 = i / t.s1Block;
          want1 = i / t.s1Block;
        }
      }
      const int64_t want = want0 < 0 ? 0 : want1 - want0 + 1;
      EXPECT(count == want && (count == 0 || first == want0) && visits[size_t(task)] == count);
    }
  }
  // TND: tasks per sequence by its own lengths; an empty sequence has none
  const std::vector<int64_t> cumQ{5, 5, 300}, cumKv{40, 100, 100};
  Call tnd{T({300, 4, 64}), T({100, 2, 64}), T({100, 2, 64})};
  tnd.heads = 4, tnd.layout = "TND", tnd.qlen = &cumQ, tnd.kvlen = &cumKv;
  const AttentionGradTiling g = tnd.TileGrad();
  const int64_t s1b = g.data.fwd.s1Block, s2b = g.data.fwd.s2Block;
  EXPECT(g.data.fwd.tasks == 4 * (1 + 0 + (295 + s1b - 1) / s1b));
  EXPECT(g.data.kvTasks == 2 * ((40 + s2b - 1) / s2b + (60 + s2b - 1) / s2b + 0));
}

}  // namespace

// Dropout's mode: rows of whole bytes exactly when S2 % 8 == 0 (attention_dropout.h), off at keep_prob 1; its
// buffers are in the plan the forward's and the backward's tilings held to UB.
void TestDropoutMode() {
  for (const int64_t s2 : {133, 264, 512}) {
    AttentionProblem p = Bnsd(1, 2, 1, 77, s2, 64, 64).Problem();
    EXPECT(TileAttention(p, Ascend910BCube(24)).data.dropout == kDropoutOff);
    p.keepProb = 0.9f;
    const AttentionTiling t = TileAttention(p, Ascend910BCube(24));
    EXPECT(t.data.dropout == (s2 % 8 == 0 ? kDropoutBytes : kDropoutBits));
    const AttentionGradTiling g = TileAttentionGrad(p, Ascend910BCube(24));
    EXPECT(g.data.fwd.dropout == t.data.dropout);
  }
  // TND: whole bytes only when every sequence's keys are (its block then starts at a multiple of 8 too)
  for (const int64_t end : {24, 21}) {
    const std::vector<int64_t> q{8, 24}, kv{8, end};
    Call tnd{T({24, 2, 64}), T({end, 1, 64}), T({end, 1, 64})};
    tnd.heads = 2, tnd.layout = "TND", tnd.qlen = &q, tnd.kvlen = &kv;
    AttentionProblem p = tnd.Problem();
    p.keepProb = 0.9f;
    EXPECT(TileAttention(p, Ascend910BCube(24)).data.dropout == (end == 24 ? kDropoutBytes : kDropoutBits));
  }
}

int main() {
  TestDropoutMode();
  TestGradTiling();
  TestStackedHeads();
  TestGroupHeads();
  TestShapes();
  TestErrors();
  TestTilingLimits();
  TestBlocks();
  return expect::Report();
}
