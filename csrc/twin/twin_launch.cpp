// CPU twin, launcher: a small persistent thread pool; blocks are handed out one at a time.
#include "twin_launch.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "twin_core.h"
#include "twin_fuse.h"
#include "twin_record.h"

namespace AscendC {
namespace twin {

void ResetCoreModel(CoreContext& c, uint32_t slot);

namespace {
void AllocateBuffers(CoreContext& c) {
  c.ub = static_cast<uint8_t*>(std::aligned_alloc(64, kUbBytes));
  c.l1 = static_cast<uint8_t*>(std::aligned_alloc(1024, kL1Bytes));
  c.l0a = static_cast<uint8_t*>(std::aligned_alloc(1024, kL0aBytes));
  c.l0b = static_cast<uint8_t*>(std::aligned_alloc(1024, kL0bBytes));
  c.l0c = static_cast<uint8_t*>(std::aligned_alloc(1024, kL0cBytes));
  c.bt = static_cast<uint8_t*>(std::aligned_alloc(1024, kBtBytes));
}
void FreeBuffers(CoreContext& c) {
  for (uint8_t* p : {c.ub, c.l1, c.l0a, c.l0b, c.l0c, c.bt}) std::free(p);
}

// One UB per host thread: blocks never share a UB while they run.
struct ThreadCore {
  CoreContext ctx;
  bool inBlock = false;
  ThreadCore() { AllocateBuffers(ctx); }
  ~ThreadCore() { FreeBuffers(ctx); }
};
thread_local ThreadCore tCore;

// The buffers of a synchronising launch's cores, kept for the next launch (a full chip: 72 cores, 1 MiB each).
std::mutex gBuffersMutex;
std::vector<CoreContext> gFreeBuffers;

struct Job {
  const char* kernel = nullptr;
  uint32_t blockDim = 0;
  const std::function<void()>* block = nullptr;
  LaunchRecord* record = nullptr;  // non-null when a record consumer (sanitizer, export) is active
  bool fuse = true;                // fused execution of element-wise runs (twin_fuse.h)
  std::atomic<uint32_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex errorMutex;
};

// Streaming stores to GM are weakly ordered: make them visible before the block counts as done.
inline void FenceStreamingStores() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

void RunBlock(Job& job, uint32_t b) {
  if (job.failed.load(std::memory_order_relaxed)) return;
  ThreadCore& tc = tCore;
  tc.inBlock = true;
  tc.ctx.kernel = job.kernel;
  tc.ctx.blockNum = job.blockDim;
  tc.ctx.blockIdx = b;
  ResetCoreModel(tc.ctx, b);
  try {
    BeginBlock(job.record, b);
    BeginFusedBlock(job.fuse);
    (*job.block)();
    FlushFused();  // the block's last run of arithmetic
    FenceStreamingStores();
    EndBlock(job.record, true);
  } catch (...) {
    DropFused();
    AbortBlock();
    std::lock_guard<std::mutex> lock(job.errorMutex);
    if (!job.failed.exchange(true)) job.error = std::current_exception();
  }
  tc.inBlock = false;
}

// Blocks handed out one at a time to whichever thread is free.
void RunBlocks(Job& job) {
  for (uint32_t b; (b = job.next.fetch_add(1)) < job.blockDim;) RunBlock(job, b);
}

class Pool {
 public:
  ~Pool() { Resize(0); }
  void Resize(int workers) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      ++generation_;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
    stop_ = false;
    const uint64_t start = generation_;  // workers wait for the first job after this one
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this, start] { Work(start); });
  }
  int Workers() const { return int(threads_.size()); }
  // Every worker and the calling thread run `work` once; it hands itself its items.
  void Run(const std::function<void()>& work) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &work;
      busy_ = int(threads_.size());
      ++generation_;
    }
    cv_.notify_all();
    work();  // the calling thread works too
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return busy_ == 0; });
    job_ = nullptr;
  }

 private:
  void Work(uint64_t seen) {
    for (;;) {
      const std::function<void()>* job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      if (job) (*job)();
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_;
  const std::function<void()>* job_ = nullptr;
  uint64_t generation_ = 0;
  int busy_ = 0;
  bool stop_ = false;
};

std::mutex gLaunchMutex;  // one launch at a time owns the pool
ParallelFor gParallelFor;  // empty: use the twin's pool
int gThreads = std::max(1u, std::thread::hardware_concurrency());
std::atomic<uint64_t> gInlineBytes{kDefaultInlineLaunchBytes};
Pool& ThePool() {
  static Pool pool;
  return pool;
}
}  // namespace

CoreContext& Core() { return tCore.ctx; }

void ResetCoreModel(CoreContext& c, uint32_t slot) {
  c.aic = false, c.subBlockIdx = 0, c.taskRation = 1, c.launchType = KERNEL_TYPE_MAX;
  c.declaredType = KERNEL_TYPE_MAX, c.slot = slot, c.cross = nullptr, c.crossEpoch = 0;
  c.atomicDtype = nullptr, c.matmulObjects = 0;
}
void SetInBlock(bool in) { tCore.inBlock = in; }
bool InBlock() { return tCore.inBlock; }

CoreContext TakeCoreBuffers() {
  {
    std::lock_guard<std::mutex> lock(gBuffersMutex);
    if (!gFreeBuffers.empty()) {
      CoreContext c = gFreeBuffers.back();
      gFreeBuffers.pop_back();
      return c;
    }
  }
  CoreContext c;
  AllocateBuffers(c);
  return c;
}
void GiveCoreBuffers(const CoreContext& c) {
  std::lock_guard<std::mutex> lock(gBuffersMutex);
  gFreeBuffers.push_back(c);
}

void RunWorkers(uint32_t workers, const std::function<void(uint32_t)>& worker) {
  if (workers <= 1) return worker(0);
  std::atomic<uint32_t> next{0};
  const auto work = [&] {
    for (uint32_t w; (w = next.fetch_add(1)) < workers;) worker(w);
  };
  if (gParallelFor) {
    gParallelFor(workers, [&](uint32_t begin, uint32_t end) {
      for (uint32_t w = begin; w < end; ++w) work();
    });
    return;
  }
  std::lock_guard<std::mutex> lock(gLaunchMutex);
  Pool& pool = ThePool();
  if (pool.Workers() != gThreads - 1) pool.Resize(gThreads - 1);
  pool.Run(work);
}

void SetParallelFor(ParallelFor parallelFor) {
  std::lock_guard<std::mutex> lock(gLaunchMutex);
  gParallelFor = std::move(parallelFor);
}

void SetThreads(int threads) {
  std::lock_guard<std::mutex> lock(gLaunchMutex);
  gThreads = std::max(1, threads);
}
int Threads() { return gThreads; }

void SetInlineLaunchBytes(uint64_t bytes) { gInlineBytes.store(bytes, std::memory_order_relaxed); }
uint64_t InlineLaunchBytes() { return gInlineBytes.load(std::memory_order_relaxed); }

void ForEachBlock(const char* kernelName, uint32_t blockDim, const std::function<void()>& block, uint64_t gmBytes) {
  Job job;
  job.kernel = kernelName;
  job.blockDim = blockDim;
  job.block = &block;
  job.record = BeginLaunch(kernelName, blockDim);
  job.fuse = FuseEnabled();
  const bool small = gmBytes < gInlineBytes.load(std::memory_order_relaxed);
  if (tCore.inBlock || blockDim <= 1 || small) {  // nested, a single block or tiny: run right here
    const CoreContext saved = tCore.ctx;
    const bool wasIn = tCore.inBlock;
    BlockRecorder* const outer = tRecorder;
    tRecorder = nullptr;
    FlushFused();  // a nested launch shares this thread's UB: the outer block's run executes first
    RunBlocks(job);
    tRecorder = outer;
    tCore.ctx = saved;
    tCore.inBlock = wasIn;
  } else if (gParallelFor) {
    gParallelFor(blockDim, [&job](uint32_t begin, uint32_t end) {
      for (uint32_t b = begin; b < end; ++b) RunBlock(job, b);
    });
  } else {
    std::lock_guard<std::mutex> lock(gLaunchMutex);
    Pool& pool = ThePool();
    const int workers = gThreads - 1;
    if (pool.Workers() != workers) pool.Resize(workers);
    pool.Run([&job] { RunBlocks(job); });
  }
  EndLaunch(job.record, !job.error);  // multi-core checks; may throw
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace twin
}  // namespace AscendC
