// CPU twin, the packed record: the instruction record as the pipeline model reads it, small enough for
// training shapes. The model costs an instruction from its pipe, API, dtype, counts and byte totals, never
// from its addresses, and reads GM addresses only as the launch's union of read and write ranges (the L2's
// distinct bytes). So each distinct instruction (addresses dropped) is stored once per launch, a block is
// a list of indices into that table, identical blocks ("block kinds") are stored once with the slots that
// ran them, and the GM ranges are merged into their union as they arrive. Export: one binary string per
// launch (torch.ops.ascendc_ops.twin_record_packed / twin_record_packed_take; layout in Serialize, read by
// python/ascendc_ops/harness/pipeline/packed.py). The JSON export (twin_record.h) keeps every instruction
// whole for the tools that need the addresses.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "twin_record.h"

namespace AscendC {
namespace twin {

// One instruction as the model sees it: what the JSON export writes, with each span list reduced to its
// byte total and whether it holds a range at all.
struct ModelInstr {
  Kind kind = Kind::kOp;
  Pipe pipe = Pipe::V, src = Pipe::S, dst = Pipe::S;
  int8_t crossMode = -1;
  int32_t event = -1, slot = -1;
  const char* op = "";
  const char* dtype = "";
  const char* que = nullptr;
  uint64_t count = 0;
  uint32_t repeats = 0;
  uint64_t bytes[kSpaces][2] = {};  // per space, read [0] and written [1]: the bytes of its spans
  uint16_t ranged = 0;              // bit 2 * space + write: a span of at least one block (a JSON range)
  uint8_t present = 0;              // bit space: an access in that space (the JSON writes its keys)

  static ModelInstr Of(const Instr& in);
  bool operator==(const ModelInstr& o) const;
};
struct ModelInstrHash {
  size_t operator()(const ModelInstr& m) const;
};

// Sorted disjoint [begin, end) runs, touching ones joined; raw ranges are merged in when they pile up.
class RangeUnion {
 public:
  void Add(uint64_t begin, uint64_t end);
  void Merge(RangeUnion& other);
  const std::vector<std::pair<uint64_t, uint64_t>>& Runs();

 private:
  void Compact();
  std::vector<std::pair<uint64_t, uint64_t>> runs_;
  size_t limit_ = 1 << 12;
};

// The L2's reuse model (python/ascendc_ops/harness/pipeline/l2.py) follows a block's GM accesses in issue order at
// this granularity: each access as (its position in the block's stream, chunk = address / kL2ChunkBytes, its bytes
// in that chunk | kTouchWrite), one entry per chunk an instruction's reads (then writes) touch. A GM write without a
// range is one entry with chunk kTouchUnranged.
constexpr uint64_t kL2ChunkBytes = 1u << 16;
constexpr uint64_t kTouchWrite = 1ull << 63;
constexpr uint64_t kTouchUnranged = ~0ull;

// What one block adds: its distinct instructions, its stream of indices, its GM ranges and GM touches.
struct BlockPack {
  std::unordered_map<ModelInstr, uint32_t, ModelInstrHash> index;
  std::vector<ModelInstr> table;
  std::vector<uint32_t> stream;
  RangeUnion reads, writes;
  uint64_t unrangedWrite = 0;  // GM bytes written by instructions without a write range (the JSON's rule)
  std::vector<uint64_t> touches;  // (position, chunk, bytes | kTouchWrite) triples, in issue order
  void OnInstr(const Instr& in);
};

class LaunchPack {
 public:
  void AddBlock(uint32_t slot, BlockPack& block);  // under the launch's mutex
  std::string Serialize(const std::string& kernel, uint32_t blockDim, const std::vector<std::string>& cores);

 private:
  std::unordered_map<ModelInstr, uint32_t, ModelInstrHash> index_;
  std::vector<ModelInstr> table_;
  std::vector<std::vector<uint32_t>> kinds_;
  std::unordered_multimap<uint64_t, uint32_t> kindByHash_;
  std::vector<int64_t> kindOf_;  // per slot; -1: the block did not end (never happens in a launch that ends ok)
  RangeUnion reads_, writes_;
  uint64_t unrangedWrite_ = 0;
  std::vector<std::vector<uint64_t>> touches_;  // per slot: its block's touches
};

// On while a tool asks; one binary string per launch until taken.
void SetRecordPack(bool on);
bool RecordPackOn();
void AddPackedLaunch(std::string packed);
std::vector<std::string> TakePackedLaunches();

}  // namespace twin
}  // namespace AscendC
