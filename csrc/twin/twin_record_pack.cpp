// CPU twin, the packed record (twin_record_pack.h): distinct instructions once per launch, blocks as
// index streams, identical blocks once, GM ranges as their union.
#include "twin_record_pack.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>
#include <utility>

namespace AscendC {
namespace twin {

namespace {
bool SameText(const char* a, const char* b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return std::strcmp(a, b) == 0;
}
size_t TextHash(const char* s) { return s ? std::hash<std::string_view>()(s) : 0x9e37u; }
void Mix(size_t& h, uint64_t v) { h ^= std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }

std::mutex gPackMutex;
bool gPack = false;
std::vector<std::string> gPacked;
}  // namespace

ModelInstr ModelInstr::Of(const Instr& in) {
  ModelInstr m;
  m.kind = in.kind, m.pipe = in.pipe, m.src = in.src, m.dst = in.dst, m.crossMode = in.crossMode;
  m.event = in.event, m.slot = in.que ? in.slot : -1;
  m.op = in.op, m.dtype = in.dtype, m.que = in.que, m.count = in.count, m.repeats = in.repeats;
  for (int i = 0; i < in.nAccess; ++i) {
    const Access& a = in.access[i];
    const int s = int(a.space), w = a.write ? 1 : 0;
    m.bytes[s][w] += a.span.Bytes();
    if (a.span.blocks) m.ranged |= uint16_t(1u << (2 * s + w));
    m.present |= uint8_t(1u << s);
  }
  return m;
}

bool ModelInstr::operator==(const ModelInstr& o) const {
  return kind == o.kind && pipe == o.pipe && src == o.src && dst == o.dst && crossMode == o.crossMode &&
         event == o.event && slot == o.slot && count == o.count && repeats == o.repeats && ranged == o.ranged &&
         present == o.present && std::memcmp(bytes, o.bytes, sizeof(bytes)) == 0 && SameText(op, o.op) &&
         SameText(dtype, o.dtype) && SameText(que, o.que);
}

size_t ModelInstrHash::operator()(const ModelInstr& m) const {
  size_t h = TextHash(m.op);
  Mix(h, TextHash(m.dtype));
  Mix(h, TextHash(m.que));
  Mix(h, uint64_t(m.kind) | uint64_t(m.pipe) << 8 | uint64_t(m.src) << 16 | uint64_t(m.dst) << 24 |
             uint64_t(uint8_t(m.crossMode)) << 32 | uint64_t(m.present) << 40 | uint64_t(m.ranged) << 48);
  Mix(h, uint64_t(uint32_t(m.event)) | uint64_t(uint32_t(m.slot)) << 32);
  Mix(h, m.count);
  Mix(h, m.repeats);
  for (const auto& sw : m.bytes) Mix(h, sw[0] * 31 + sw[1]);
  return h;
}

// ---- the union of GM ranges ----
void RangeUnion::Add(uint64_t begin, uint64_t end) {
  if (end <= begin) return;  // an empty range adds no byte to the union
  if (!runs_.empty() && begin >= runs_.back().first && begin <= runs_.back().second) {
    runs_.back().second = std::max(runs_.back().second, end);  // the common case: the next row of a tile
    return;
  }
  runs_.emplace_back(begin, end);
  if (runs_.size() >= limit_) Compact();
}

void RangeUnion::Compact() {
  std::sort(runs_.begin(), runs_.end());
  size_t n = 0;
  for (const auto& r : runs_) {
    if (n && r.first <= runs_[n - 1].second) {
      runs_[n - 1].second = std::max(runs_[n - 1].second, r.second);
    } else {
      runs_[n++] = r;
    }
  }
  runs_.resize(n);
  limit_ = std::max<size_t>(1 << 12, 2 * n);  // memory stays within twice the union's runs
}

void RangeUnion::Merge(RangeUnion& other) {
  runs_.insert(runs_.end(), other.runs_.begin(), other.runs_.end());
  other.runs_.clear();
  other.runs_.shrink_to_fit();
  Compact();
}

const std::vector<std::pair<uint64_t, uint64_t>>& RangeUnion::Runs() {
  Compact();
  return runs_;
}

// ---- one block ----
namespace {
// Appends the chunks [begin, end) covers to `out` (position `pos`); a chunk equal to the last one this
// instruction's reads (or writes) added, from `first` on, grows that entry instead.
void AddTouches(std::vector<uint64_t>& out, size_t first, uint64_t pos, uint64_t begin, uint64_t end, uint64_t flag) {
  while (begin < end) {
    const uint64_t chunk = begin / kL2ChunkBytes, stop = std::min(end, (chunk + 1) * kL2ChunkBytes);
    if (out.size() > first && out[out.size() - 2] == chunk) {
      out.back() += stop - begin;
    } else {
      out.insert(out.end(), {pos, chunk, (stop - begin) | flag});
    }
    begin = stop;
  }
}
}  // namespace

void BlockPack::OnInstr(const Instr& in) {
  const ModelInstr m = ModelInstr::Of(in);
  auto it = index.find(m);
  if (it == index.end()) {
    it = index.emplace(m, uint32_t(table.size())).first;
    table.push_back(m);
  }
  stream.push_back(it->second);
  bool writeRange = false;
  for (int i = 0; i < in.nAccess; ++i) {
    const Access& a = in.access[i];
    if (a.space != Space::GM || !a.span.blocks) continue;
    writeRange |= a.write;
    RangeUnion& into = a.write ? writes : reads;
    if (a.span.pitch == a.span.blockBytes) {  // contiguous blocks: one range
      into.Add(a.span.begin, a.span.begin + a.span.Bytes());
      continue;
    }
    for (uint32_t k = 0; k < a.span.blocks; ++k) {
      const uint64_t b = a.span.begin + k * a.span.pitch;
      into.Add(b, b + a.span.blockBytes);
    }
  }
  if (!writeRange) unrangedWrite += m.bytes[int(Space::GM)][1];
  // the touches: reads, then writes (as the JSON export lists them)
  const uint64_t pos = stream.size() - 1;
  for (const bool write : {false, true}) {
    const size_t first = touches.size();
    for (int i = 0; i < in.nAccess; ++i) {
      const Access& a = in.access[i];
      if (a.space != Space::GM || a.write != write || !a.span.blocks) continue;
      for (uint32_t k = 0; k < a.span.blocks; ++k) {
        const uint64_t b = a.span.begin + k * a.span.pitch;
        AddTouches(touches, first, pos, b, b + a.span.blockBytes, write ? kTouchWrite : 0);
      }
    }
  }
  if (!writeRange && m.bytes[int(Space::GM)][1])
    touches.insert(touches.end(), {pos, kTouchUnranged, m.bytes[int(Space::GM)][1] | kTouchWrite});
}

// ---- the launch ----
void LaunchPack::AddBlock(uint32_t slot, BlockPack& block) {
  std::vector<uint32_t> remap(block.table.size());
  for (size_t i = 0; i < block.table.size(); ++i) {
    auto it = index_.find(block.table[i]);
    if (it == index_.end()) {
      it = index_.emplace(block.table[i], uint32_t(table_.size())).first;
      table_.push_back(block.table[i]);
    }
    remap[i] = it->second;
  }
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the launch-wide indices
  for (uint32_t& id : block.stream) {
    id = remap[id];
    h = (h ^ id) * 0x100000001b3ull;
  }
  int64_t kind = -1;
  auto [lo, hi] = kindByHash_.equal_range(h);
  for (auto it = lo; it != hi && kind < 0; ++it)
    if (kinds_[it->second] == block.stream) kind = it->second;
  if (kind < 0) {
    kind = int64_t(kinds_.size());
    kindByHash_.emplace(h, uint32_t(kind));
    kinds_.push_back(std::move(block.stream));
  }
  if (kindOf_.size() <= slot) kindOf_.resize(slot + 1, -1);
  kindOf_[slot] = kind;
  reads_.Merge(block.reads);
  writes_.Merge(block.writes);
  unrangedWrite_ += block.unrangedWrite;
  if (touches_.size() <= slot) touches_.resize(slot + 1);
  touches_[slot] = std::move(block.touches);
}

namespace {
void JsonText(std::string& out, const char* s) {
  out += '"';
  out += s;
  out += '"';
}

void Spans(std::string& out, const ModelInstr& m, Space s, bool write) {
  char buf[48];
  if (m.ranged >> (2 * int(s) + write) & 1u) {
    std::snprintf(buf, sizeof(buf), "[[0,%llu]]", (unsigned long long)m.bytes[int(s)][write]);
    out += buf;
  } else {
    out += "[]";
  }
}

// The instruction in the JSON export's format, each span list one range of its byte total.
void InstrJson(std::string& out, const ModelInstr& m) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"pipe\":\"%s\",\"op\":\"%s\",\"dtype\":\"%s\",\"count\":%llu,\"repeats\":%u,\"gm_read\":%llu,"
                "\"gm_write\":%llu,\"ub_read\":",
                PipeName(m.pipe), m.op, m.dtype, (unsigned long long)m.count, m.repeats,
                (unsigned long long)m.bytes[int(Space::GM)][0], (unsigned long long)m.bytes[int(Space::GM)][1]);
  out += buf;
  Spans(out, m, Space::UB, false);
  out += ",\"ub_write\":";
  Spans(out, m, Space::UB, true);
  for (Space s : {Space::L1, Space::L0A, Space::L0B, Space::L0C, Space::BT}) {
    if (!(m.present >> int(s) & 1u)) continue;
    std::snprintf(buf, sizeof(buf), ",\"%s_read\":", SpaceName(s));
    out += buf;
    Spans(out, m, s, false);
    std::snprintf(buf, sizeof(buf), ",\"%s_write\":", SpaceName(s));
    out += buf;
    Spans(out, m, s, true);
  }
  if (m.kind == Kind::kSetFlag || m.kind == Kind::kWaitFlag) {
    std::snprintf(buf, sizeof(buf), ",\"event\":[\"%s\",\"%s\",%d]", PipeName(m.src), PipeName(m.dst), m.event);
    out += buf;
  } else {
    out += ",\"event\":null";
  }
  if (m.kind == Kind::kBarrier) {
    out += ",\"barrier\":";
    JsonText(out, PipeName(m.pipe));
  }
  if (m.que) {
    std::snprintf(buf, sizeof(buf), ",\"que\":\"%s\",\"slot\":%d", m.que, m.slot);
    out += buf;
  }
  if (m.kind == Kind::kCross) {
    std::snprintf(buf, sizeof(buf), ",\"cross\":{\"mode\":%d,\"flag\":%d}", m.crossMode, m.event);
    out += buf;
  }
  out += '}';
}

template <typename T>
void Append(std::string& out, const T* data, size_t n) {
  out.append(reinterpret_cast<const char*>(data), n * sizeof(T));
}
}  // namespace

// Layout: u64 header length, the JSON header padded with spaces to 8 bytes, then the kinds' index
// streams (u32, concatenated; "kinds" gives their lengths), padded to 8 bytes, then the read and the
// write runs (u64 begin, end pairs; "reads" / "writes" give their counts), then each slot's touches (u64
// triples; "touches" gives their counts per slot, "l2_chunk" the chunk size).
std::string LaunchPack::Serialize(const std::string& kernel, uint32_t blockDim, const std::vector<std::string>& cores) {
  kindOf_.resize(blockDim, -1);
  touches_.resize(std::max<size_t>(touches_.size(), blockDim));
  std::string head = "{\"kernel\":\"" + kernel + "\",\"block_dim\":" + std::to_string(blockDim) + ",\"instrs\":[";
  for (size_t i = 0; i < table_.size(); ++i) {
    if (i) head += ',';
    InstrJson(head, table_[i]);
  }
  head += "],\"kinds\":[";
  for (size_t k = 0; k < kinds_.size(); ++k) head += (k ? "," : "") + std::to_string(kinds_[k].size());
  head += "],\"kind_of\":[";
  for (size_t s = 0; s < kindOf_.size(); ++s) head += (s ? "," : "") + std::to_string(kindOf_[s]);
  const auto& reads = reads_.Runs();
  const auto& writes = writes_.Runs();
  head += "],\"reads\":" + std::to_string(reads.size()) + ",\"writes\":" + std::to_string(writes.size()) +
          ",\"unranged_write\":" + std::to_string(unrangedWrite_) + ",\"l2_chunk\":" + std::to_string(kL2ChunkBytes) +
          ",\"touches\":[";
  for (size_t s = 0; s < touches_.size(); ++s) head += (s ? "," : "") + std::to_string(touches_[s].size() / 3);
  head += "]";
  if (!cores.empty()) {  // the core each block slot ran on, as the JSON export names them
    head += ",\"cores\":[";
    for (size_t b = 0; b < cores.size(); ++b)
      head += (b ? ",{\"kind\":\"" : "{\"kind\":\"") + cores[b].substr(0, 3) + "\",\"name\":\"" + cores[b] + "\"}";
    head += "]";
  }
  head += "}";
  head.append((8 - head.size() % 8) % 8, ' ');
  std::string out;
  const uint64_t headLen = head.size();
  Append(out, &headLen, 1);
  out += head;
  for (const auto& k : kinds_) Append(out, k.data(), k.size());
  out.append((8 - out.size() % 8) % 8, '\0');
  for (const auto* runs : {&reads, &writes})
    for (const auto& r : *runs) {
      const uint64_t pair[2] = {r.first, r.second};
      Append(out, pair, 2);
    }
  for (const auto& t : touches_) Append(out, t.data(), t.size());
  return out;
}

void SetRecordPack(bool on) {
  std::lock_guard<std::mutex> lock(gPackMutex);
  gPack = on;
}
bool RecordPackOn() {
  std::lock_guard<std::mutex> lock(gPackMutex);
  return gPack;
}
void AddPackedLaunch(std::string packed) {
  std::lock_guard<std::mutex> lock(gPackMutex);
  gPacked.push_back(std::move(packed));
}
std::vector<std::string> TakePackedLaunches() {
  std::lock_guard<std::mutex> lock(gPackMutex);
  std::vector<std::string> out;
  out.swap(gPacked);
  return out;
}

}  // namespace twin
}  // namespace AscendC
