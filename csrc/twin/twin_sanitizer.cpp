// CPU twin, the sanitizer (see twin_sanitizer.h for the rules): vector clocks per pipe,
// per-32-byte race shadow and per-byte init shadow of each on-chip space, the flag table, and
// the block's GM accesses for the launch-level multi-core check.
#include "twin_sanitizer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>

#include "twin_core.h"
#include "twin_span.h"

namespace AscendC {
namespace twin {

namespace {
constexpr uint32_t kGranule = 32;
constexpr uint64_t kCapacity[kSpaces] = {0, kUbBytes, 512 * 1024, 64 * 1024, 64 * 1024, 128 * 1024, kBtBytes};
constexpr int kFlagSlots = kPipes * kPipes * kEventIds;
constexpr size_t kMaxGmRecent = 4096;  // unordered GM accesses kept for the in-core GM race check

using Clock = std::array<uint32_t, kPipes>;

}  // namespace

struct BlockSanitizer::State {
  struct Info {
    const char* op;
    Pipe pipe;
    uint32_t epoch;
    const char* via = nullptr;  // TQue call behind a framework flag
    const char* que = nullptr;
    bool smallMmad = false;  // Instr::smallMmad
  };
  struct Flag {
    bool set = false;
    Clock token{};
    uint32_t serial = 0;
  };
  struct SpaceShadow {
    std::vector<uint32_t> write;                   // per granule: serial of the last write (0: none)
    std::vector<std::array<uint32_t, kPipes>> read;  // per granule and pipe: last read since then
    std::vector<uint8_t> undef;                    // per byte: 1 = holds no defined value
    std::vector<uint32_t> origin;                  // per granule: what left undefined bytes (0: never written)
  };
  struct GmRecent {
    Span span;
    bool write;
    Pipe pipe;
    uint32_t epoch, serial;
  };

  std::vector<Info> info{Info{"?", Pipe::S, 0}};  // by serial; [0] unused
  Clock vc[kPipes]{};                              // vc[P][Q]: Q's instructions known complete before P's next
  uint32_t issued[kPipes]{};
  Flag flags[kFlagSlots];
  SpaceShadow space[kSpaces];
  std::vector<GmRecent> gmRecent;
  std::vector<GmAccess> gm;

  SpaceShadow& Shadow(Space s) {
    SpaceShadow& sh = space[int(s)];
    if (sh.write.empty()) {
      const uint64_t granules = kCapacity[int(s)] / kGranule;
      sh.write.assign(granules, 0);
      sh.read.assign(granules, std::array<uint32_t, kPipes>{});
      sh.undef.assign(kCapacity[int(s)], 1);
      sh.origin.assign(granules, 0);
    }
    return sh;
  }
  std::string Name(uint32_t serial) const {
    const Info& i = info[serial];
    std::string name = std::string(PipeName(i.pipe)) + " " + i.op + " #" + std::to_string(serial);
    if (i.via) name += std::string(" (") + i.via + " of a " + (i.que ? i.que : "?") + " buffer)";
    return name;
  }
  static void Join(Clock& a, const Clock& b) {
    for (int q = 0; q < kPipes; ++q) a[q] = std::max(a[q], b[q]);
  }
  Clock Full(Pipe q) const {  // what waiting for pipe q now guarantees
    Clock c = vc[int(q)];
    c[int(q)] = issued[int(q)];
    return c;
  }
  // Is the earlier instruction `serial` ordered before pipe p's current instruction?
  bool Ordered(Pipe p, uint32_t serial) const {
    const Info& e = info[serial];
    if (e.pipe == Pipe::S) return true;  // scalar accesses complete in order (syncs are the compiler's)
    return e.epoch <= vc[int(p)][int(e.pipe)];
  }

  uint32_t Issue(const Instr& in, Pipe p) {
    const int pi = int(p);
    info.push_back(Info{in.op, p, ++issued[pi], in.via, in.que, in.smallMmad});
    if (p == Pipe::S) {
      vc[pi][pi] = issued[pi];
    } else {
      Join(vc[pi], vc[int(Pipe::S)]);  // the scalar unit dispatches every instruction in program order
    }
    return in.serial;
  }

  [[noreturn]] void Race(const char* kind, Space sp, uint64_t lo, uint64_t hi, uint32_t now, uint32_t before,
                         const char* verb, const char* verbBefore) {
    const Info& b = info[before];
    const Info& n = info[now];
    std::string how;
    if (b.pipe == n.pipe) {
      how = " without PipeBarrier<PIPE_" + std::string(PipeName(n.pipe)) +
            "> between them (same-pipe copies with "
            "overlapping destinations are not ordered by the hardware)";
    } else {
      how = " with nothing ordering them: SetFlag/WaitFlag<" + std::string(PipeName(b.pipe)) + "_" + PipeName(n.pipe) +
            ">, a TQue EnQue/DeQue or AllocTensor/FreeTensor hand-off, or PipeBarrier<PIPE_ALL>";
    }
    Violation("racecheck", std::string(kind) + " hazard on " + Bytes(sp, lo, hi) + ": " + Name(now) + " " + verb +
                               " what " + Name(before) + " " + verbBefore + how);
  }

  // racecheck for one granule g of an access [b, e) by pipe p
  void CheckGranule(SpaceShadow& sh, const Access& a, Pipe p, uint32_t serial, uint64_t g, uint64_t b, uint64_t e) {
    const uint64_t lo = std::max(b, g * kGranule);
    const uint32_t w = sh.write[g];
    if (p == Pipe::S) {  // the compiler's auto-sync: the scalar unit waits for the pipes that touched these bytes
      if (w && !Ordered(p, w)) Join(vc[int(Pipe::S)], Full(info[w].pipe));
      if (a.write)
        for (int q = 0; q < kPipes; ++q)
          if (sh.read[g][q] && !Ordered(p, sh.read[g][q])) Join(vc[int(Pipe::S)], Full(Pipe(q)));
      return;
    }
    // the report names the whole run of bytes the same earlier instruction touched
    const auto runEnd = [&](auto same) {
      uint64_t h = g + 1;
      while (h * kGranule < e && same(h)) ++h;
      return std::min(e, h * kGranule);
    };
    if (w && !Ordered(p, w)) {
      // Mmad.md 同步优化说明: accumulating onto the L0C of an Mmad with (m/16)*(n/16) < 10 needs
      // PipeBarrier<PIPE_M> between the two (larger ones the hardware orders itself)
      if (!a.write && p == Pipe::M && info[w].pipe == Pipe::M && info[w].smallMmad && a.space == Space::L0C)
        Violation("Mmad accumulation barrier",
                  Name(serial) + " accumulates onto " +
                      Bytes(a.space, lo, runEnd([&](uint64_t h) { return sh.write[h] == w; })) + ", written by " +
                      Name(w) +
                      " with (m/16)*(n/16) < 10, without PipeBarrier<PIPE_M> between them (Mmad.md 同步优化说明)");
      // same pipe: only MTE2 writes over MTE2 writes need a barrier; V -> V is the compiler's
      if (info[w].pipe != p || (a.write && p == Pipe::MTE2)) {
        Race(a.write ? "WAW" : "RAW", a.space, lo, runEnd([&](uint64_t h) { return sh.write[h] == w; }), serial, w,
             a.write ? "writes" : "reads", "writes");
      }
    }
    if (!a.write) return;
    for (int q = 0; q < kPipes; ++q) {
      const uint32_t r = sh.read[g][q];
      if (r && q != int(p) && !Ordered(p, r))
        Race("WAR", a.space, lo, runEnd([&](uint64_t h) { return sh.read[h][q] == r; }), serial, r, "writes", "reads");
    }
  }

  // racecheck for one on-chip access of pipe p; then the access becomes the granules' state
  void RaceCheck(const Access& a, Pipe p, uint32_t serial) {
    SpaceShadow& sh = Shadow(a.space);
    const uint64_t cap = kCapacity[int(a.space)];
    ForEachRun(a.span, [&](uint64_t b, uint64_t e) {
      e = std::min(e, cap);
      uint32_t lastW = 0;
      std::array<uint32_t, kPipes> lastR{};
      bool have = false;  // neighbouring granules mostly hold the same state: check each state once
      for (uint64_t g = b / kGranule; g * kGranule < e; ++g) {
        const uint32_t w = sh.write[g];
        if (!have || w != lastW || (a.write && sh.read[g] != lastR)) {
          CheckGranule(sh, a, p, serial, g, b, e);
          lastW = w, have = true;
          if (a.write) lastR = sh.read[g];
        }
        if (a.write) {
          sh.write[g] = serial;
          sh.read[g].fill(0);
        } else if (p != Pipe::S) {
          sh.read[g][int(p)] = serial;
        }
      }
    });
  }

  // GM inside the core: MTE3 -> MTE2 (and back) through the same bytes; MTE3 -> MTE3 overlaps
  void GmCheck(const Access& a, Pipe p, uint32_t serial, bool atomic) {
    gm.push_back(GmAccess{a.span, a.write, atomic && a.write, serial, info[serial].op, Core().crossEpoch});
    if (p == Pipe::S) {  // auto-synced like UB scalar accesses
      for (const GmRecent& r : gmRecent)
        if ((r.write || a.write) && r.epoch > vc[int(p)][int(r.pipe)]) {
          uint64_t lo, hi;
          if (SpansMeet(a.span, r.span, &lo, &hi)) Join(vc[int(Pipe::S)], Full(r.pipe));
        }
      return;
    }
    for (const GmRecent& r : gmRecent) {
      if (!(r.write || a.write) || r.epoch <= vc[int(p)][int(r.pipe)]) continue;
      if (r.pipe == p && !(p == Pipe::MTE3 && r.write && a.write)) continue;
      uint64_t lo, hi;
      if (!SpansMeet(a.span, r.span, &lo, &hi)) continue;
      Race(a.write ? (r.write ? "WAW" : "WAR") : "RAW", Space::GM, lo, hi, serial, r.serial,
           a.write ? "writes" : "reads", r.write ? "writes" : "reads");
    }
    if (gmRecent.size() >= 64) {  // forget what every pipe has seen complete
      gmRecent.erase(std::remove_if(gmRecent.begin(), gmRecent.end(),
                                    [&](const GmRecent& r) {
                                      for (int q = 0; q < kPipes; ++q)
                                        if (q != int(Pipe::S) && r.epoch > vc[q][int(r.pipe)]) return false;
                                      return true;
                                    }),
                     gmRecent.end());
      if (gmRecent.size() >= kMaxGmRecent) gmRecent.erase(gmRecent.begin());
    }
    gmRecent.push_back(GmRecent{a.span, a.write, p, info[serial].epoch, serial});
  }

  // ---- initcheck ----
  static bool AnyUndef(const SpaceShadow& sh, uint64_t b, uint64_t e, uint64_t* at) {
    const uint8_t* u = sh.undef.data();
    uint64_t i = b;
    for (; i + 8 <= e; i += 8) {  // eight shadow bytes at a time
      uint64_t word;
      std::memcpy(&word, u + i, 8);
      if (word) break;
    }
    for (; i < e; ++i)
      if (u[i]) {
        *at = i;
        return true;
      }
    return false;
  }
  void SetUndef(SpaceShadow& sh, uint64_t b, uint64_t e, bool undef, uint32_t origin) {
    if (b >= e) return;
    std::fill(sh.undef.begin() + b, sh.undef.begin() + e, uint8_t(undef));
    if (undef)
      for (uint64_t g = b / kGranule; g * kGranule < e; ++g) sh.origin[g] = origin;
  }
  [[noreturn]] void Uninit(const Instr& in, const Access& a, uint64_t at) {
    SpaceShadow& sh = Shadow(a.space);
    uint64_t end = at;
    while (end < kCapacity[int(a.space)] && sh.undef[end] && end - at < 4096) ++end;
    ForEachRun(a.span, [&](uint64_t b, uint64_t e) {
      if (at >= b && at < e) end = std::min(end, e);
    });
    const uint32_t origin = sh.origin[at / kGranule];
    const uint32_t last = sh.write[at / kGranule];
    std::string from = origin ? "the padding " + Name(origin) + " left unfilled" : "bytes no instruction wrote";
    std::string via = last && last != origin ? " (last written by " + Name(last) + ")" : "";
    Violation("initcheck", Name(in.serial) + (in.pipe == Pipe::S ? " reads " : " copies out ") +
                               Bytes(a.space, at, end) + " that hold no defined value: they come from " + from + via);
  }
  void InitCheck(const Instr& in) {
    const Access* w = nullptr;
    for (int i = 0; i < in.nAccess; ++i) {
      const Access& a = in.access[i];
      if (a.space == Space::GM) continue;
      if (a.write) {
        w = &a;
        continue;
      }
      if (!a.leaves) continue;
      const SpaceShadow& sh = Shadow(a.space);
      uint64_t at = 0;
      bool bad = false;
      ForEachRun(a.span, [&](uint64_t b, uint64_t e) {
        bad = bad || AnyUndef(sh, b, std::min(e, kCapacity[int(a.space)]), &at);
      });
      if (bad) Uninit(in, a, at);
    }
    if (!w) return;
    SpaceShadow& out = Shadow(w->space);
    const uint64_t cap = kCapacity[int(w->space)];
    switch (w->init) {
      case Init::kDefined:
        ForEachRun(w->span, [&](uint64_t b, uint64_t e) { SetUndef(out, b, std::min(e, cap), false, 0); });
        return;
      case Init::kPadded:
        ForEachRun(w->span, [&](uint64_t b, uint64_t e) {
          SetUndef(out, b, std::min(e, cap), true, in.serial);
          SetUndef(out, std::min(b + w->definedLead, cap), std::min(b + w->definedLead + w->definedBytes, cap), false,
                   0);
        });
        return;
      case Init::kReduce: {
        uint64_t at = 0;
        uint32_t origin = 0;
        bool undef = false;
        for (int i = 0; i < in.nAccess && !undef; ++i) {
          const Access& a = in.access[i];
          if (a.write || a.space == Space::GM) continue;
          const SpaceShadow& sh = Shadow(a.space);
          ForEachRun(a.span, [&](uint64_t b, uint64_t e) {
            undef = undef || AnyUndef(sh, b, std::min(e, kCapacity[int(a.space)]), &at);
          });
          if (undef) origin = sh.origin[at / kGranule];
        }
        ForEachRun(w->span, [&](uint64_t b, uint64_t e) { SetUndef(out, b, std::min(e, cap), undef, origin); });
        return;
      }
      case Init::kElementwise:
      case Init::kGather: Elementwise(in, *w, out); return;
      case Init::kRowwise: Rowwise(in, *w, out); return;
    }
  }
  // Run k of the write is defined iff run k of every read is (a read of a single run: that run for every k).
  void Rowwise(const Instr& in, const Access& w, SpaceShadow& out) {
    const uint64_t cap = kCapacity[int(w.space)];
    std::vector<uint32_t> origins(w.span.blocks, 0);  // per run: the origin of its undefined input (0: none)
    std::vector<uint8_t> undef(w.span.blocks, 0);
    for (int i = 0; i < in.nAccess; ++i) {
      const Access& a = in.access[i];
      if (a.write || a.space == Space::GM) continue;
      const SpaceShadow& sh = Shadow(a.space);
      const uint64_t acap = kCapacity[int(a.space)];
      for (uint32_t k = 0; k < w.span.blocks; ++k) {
        if (undef[k]) continue;
        const uint64_t b = a.span.begin + (a.span.blocks > 1 ? uint64_t(k) * a.span.pitch : 0);
        uint64_t at = 0;
        if (AnyUndef(sh, std::min(b, acap), std::min(b + a.span.blockBytes, acap), &at))
          undef[k] = 1, origins[k] = sh.origin[at / kGranule];
      }
    }
    for (uint32_t k = 0; k < w.span.blocks; ++k) {
      const uint64_t b = w.span.begin + uint64_t(k) * w.span.pitch;
      SetUndef(out, std::min(b, cap), std::min(b + w.span.blockBytes, cap), undef[k], origins[k]);
    }
  }
  // Byte `off` of a span's data laid end to end (a strided UB->UB copy); a run maps to begin + off.
  static uint64_t SpanByte(const Span& s, uint64_t off) {
    return s.blockBytes ? s.begin + off / s.blockBytes * s.pitch + off % s.blockBytes : s.begin + off;
  }
  // Element i of the write is defined iff element i of every read is (kGather: the offset and
  // the source element it names).
  void Elementwise(const Instr& in, const Access& w, SpaceShadow& out) {
    const uint64_t cap = kCapacity[int(w.space)];
    bool anyUndef = false;
    for (int i = 0; i < in.nAccess && !anyUndef; ++i) {
      const Access& a = in.access[i];
      if (a.write || a.space == Space::GM) continue;
      const SpaceShadow& sh = Shadow(a.space);
      uint64_t at;
      ForEachRun(a.span, [&](uint64_t b, uint64_t e) {
        anyUndef = anyUndef || AnyUndef(sh, b, std::min(e, kCapacity[int(a.space)]), &at);
      });
    }
    if (!anyUndef) {  // the common case: everything read is defined
      ForEachRun(w.span, [&](uint64_t b, uint64_t e) { SetUndef(out, b, std::min(e, cap), false, 0); });
      return;
    }
    const uint32_t we = w.elemBytes ? w.elemBytes : 1;
    std::vector<uint8_t> result(in.count, 0);
    std::vector<uint32_t> origins(in.count, 0);
    for (int i = 0; i < in.nAccess; ++i) {
      const Access& a = in.access[i];
      if (a.write || a.space == Space::GM) continue;
      const SpaceShadow& sh = Shadow(a.space);
      const uint32_t re = a.elemBytes ? a.elemBytes : 1;
      const bool gatherSource = w.init == Init::kGather && i == 0;
      for (uint64_t k = 0; k < in.count; ++k) {
        if (result[k]) continue;
        uint64_t b;
        if (gatherSource) {
          b = uint64_t(in.gatherBase) + (in.gatherOffsets ? in.gatherOffsets[k] : 0);
        } else {
          b = SpanByte(a.span, k * re);
        }
        for (uint64_t j = b; j < b + re && j < kCapacity[int(a.space)]; ++j)
          if (sh.undef[j]) {
            result[k] = 1, origins[k] = sh.origin[j / kGranule];
            break;
          }
      }
    }
    for (uint64_t k = 0; k < in.count; ++k) {
      const uint64_t b = SpanByte(w.span, k * we);
      SetUndef(out, std::min(b, cap), std::min(b + we, cap), result[k], origins[k]);
    }
  }

  // ---- synccheck ----
  [[noreturn]] void SyncError(const Instr& in, const std::string& what) {
    Violation("synccheck", std::string(PipeName(in.pipe)) + " " + in.op + "<" + PipeName(in.src) + "_" +
                               PipeName(in.dst) + ">(" + std::to_string(in.event) + ") #" + std::to_string(in.serial) +
                               (in.via ? std::string(" (") + in.via + " of a " + in.que + " buffer)" : "") + ": " +
                               what);
  }
  void Sync(const Instr& in) {
    if (in.event < 0 || in.event >= kEventIds) {
      SyncError(in, in.manual
                        ? "event id outside 0..7 (the Atlas A2 range)"
                        : "the TPipe has no free event id left for this pipe pair (more than 8 pending hand-offs)");
    }
    if (in.manual && in.event >= 6 && !EventHandedOut(in.src, in.dst, in.event))
      SyncError(in,
                "event ids 6 and 7 are reserved (6 for the system, 7 for the TPipe's own syncs); use 0-5 or "
                "GetTPipePtr()->FetchEventID/AllocEventID");
    Flag& f = flags[(int(in.src) * kPipes + int(in.dst)) * kEventIds + in.event];
    if (in.kind == Kind::kSetFlag) {
      const uint32_t serial = Issue(in, in.src);
      if (f.set)
        SyncError(
            in, "the event is still set by " + Name(f.serial) +
                    " and not yet waited: a second SetFlag on it is undefined on the device (and hangs at "
                    "PipeBarrier<PIPE_ALL>); in a TPipe kernel take ids from GetTPipePtr()->FetchEventID/AllocEventID");
      f.set = true, f.serial = serial, f.token = Full(in.src);
    } else {
      Issue(in, in.dst);
      if (!f.set)
        SyncError(in, "waits for an event no SetFlag set: PIPE_" + std::string(PipeName(in.dst)) +
                          " hangs here on the device");
      Join(vc[int(in.dst)], f.token);
      f.set = false;
    }
  }
  void Barrier(const Instr& in) {
    if (in.pipe == Pipe::ALL) {
      info.push_back(Info{in.op, Pipe::S, 0});
      Clock all;
      for (int q = 0; q < kPipes; ++q) all[q] = issued[q];
      for (int p = 0; p < kPipes; ++p) vc[p] = all;
      return;
    }
    Issue(in, in.pipe);
    vc[int(in.pipe)][int(in.pipe)] = issued[int(in.pipe)];
  }
};

BlockSanitizer::BlockSanitizer() : s_(std::make_unique<State>()) { s_->Shadow(Space::UB); }
BlockSanitizer::~BlockSanitizer() = default;

void BlockSanitizer::OnInstr(const Instr& in) {
  State& s = *s_;
  if (s.info.size() != in.serial) s.info.resize(in.serial, State::Info{"?", Pipe::S, 0});
  switch (in.kind) {
    case Kind::kSetFlag:
    case Kind::kWaitFlag: s.Sync(in); return;
    case Kind::kBarrier: s.Barrier(in); return;
    case Kind::kCross: return;  // ordering across cores: the launch's CrossOrder (twin_crosscore.cpp)
    case Kind::kOp: break;
  }
  s.Issue(in, in.pipe);
  for (int i = 0; i < in.nAccess; ++i) {  // reads first, then writes (the record lists them so)
    const Access& a = in.access[i];
    if (a.space == Space::GM) s.GmCheck(a, in.pipe, in.serial, in.atomicAdd);
    else s.RaceCheck(a, in.pipe, in.serial);
  }
  s.InitCheck(in);
}

void BlockSanitizer::OnBlockEnd() {
  State& s = *s_;
  for (int k = 0; k < kFlagSlots; ++k) {
    if (!s.flags[k].set) continue;
    const int id = k % kEventIds, pair = k / kEventIds;
    Violation("synccheck", s.Name(s.flags[k].serial) + "<" + PipeName(Pipe(pair / kPipes)) + "_" +
                               PipeName(Pipe(pair % kPipes)) + ">(" + std::to_string(id) +
                               ") is never waited by the end of the block: an unpaired SetFlag (a stray set persists "
                               "into the next kernel on the device)");
  }
}

std::vector<GmAccess> BlockSanitizer::TakeGm() { return std::move(s_->gm); }

}  // namespace twin
}  // namespace AscendC
