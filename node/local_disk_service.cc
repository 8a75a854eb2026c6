#include "node/local_disk_service.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <string>
#include <utility>

#include "common/mutex.h"
#include "rpc/local_disk_wire.h"

namespace shelfmark {
namespace {

// On the progress thread: `size` bytes (zeros) or, for a malformed request,
// an empty reply (the probe has no status; the caller checks the size).
void AnswerProbe(const AmRequest& request, AmResponder& responder) {
  auto size = DecodeLocalDiskProbe(request.header);
  std::string data;
  if (size.ok() && request.payload.empty()) data.resize(*size);
  responder.Reply({}, std::move(data));
}

}  // namespace

using OnServed = decltype(LocalDiskServiceOptions::on_served);
using OnMissing = decltype(LocalDiskServiceOptions::on_missing);

struct LocalDiskService::Core {
  struct Job {
    LocalDiskRequest request;
    AmResponder responder;
  };

  Core(StorageBackend* b, OnServed served, OnMissing missing)
      : backend(b), on_served(std::move(served)), on_missing(std::move(missing)) {}

  StorageBackend* const backend;
  // Cleared by Stop() under the writer lock: a handler still running on the
  // progress thread after the destructor unregistered it (UcxAm calls a copy
  // of the handler outside its lock) never calls it once Stop() returned.
  SharedMutex served_mu;
  OnServed on_served GUARDED_BY(served_mu);
  OnMissing on_missing GUARDED_BY(served_mu);
  Mutex mu;
  std::condition_variable_any cv;
  std::deque<Job> queue GUARDED_BY(mu);
  bool stopping GUARDED_BY(mu) = false;
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> bytes_served{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> malformed{0};
  std::atomic<uint64_t> inline_reads{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<uint64_t> corrupt{0};

  void Answer(AmResponder& responder, ErrorCode status, std::string data,
              const DiskPlace& place = {}) {
    LocalDiskReply reply;
    reply.status = status;
    if (status == ErrorCode::OK) {
      reply.bucket_id = place.bucket_id;
      reply.offset = place.offset;
      reply.data_size = data.size();
      bytes_served.fetch_add(data.size(), std::memory_order_relaxed);
    } else {
      errors.fetch_add(1, std::memory_order_relaxed);
      data.clear();
    }
    responder.Reply(EncodeLocalDiskReply(reply), std::move(data));
  }

  // Answers a decoded read and tells on_served about an OK one. A miss (on
  // a worker only) goes to on_missing first and is answered OBJECT_NOT_FOUND.
  void AnswerRead(const LocalDiskRequest& request, AmResponder& responder, ErrorCode status,
                  std::string data, const DiskPlace& place) {
    if (status == ErrorCode::DATA_CORRUPTED || status == ErrorCode::OBJECT_NOT_FOUND) {
      misses.fetch_add(1, std::memory_order_relaxed);
      if (status == ErrorCode::DATA_CORRUPTED) corrupt.fetch_add(1, std::memory_order_relaxed);
      {
        ReaderLock lock(&served_mu);
        if (on_missing) on_missing(request.tenant, request.key);
      }
      Answer(responder, ErrorCode::OBJECT_NOT_FOUND, {});
      return;
    }
    const uint64_t size = data.size();
    Answer(responder, status, std::move(data), place);
    if (status != ErrorCode::OK) return;
    ReaderLock lock(&served_mu);
    if (on_served) on_served(request.tenant, request.key, size);
  }

  // On the progress thread: decode and queue; never touches the backend.
  void OnRequest(AmRequest request, AmResponder responder) {
    requests.fetch_add(1, std::memory_order_relaxed);
    auto decoded = DecodeLocalDiskRequest(request.header);
    if (!decoded.ok() || !request.payload.empty()) {
      malformed.fetch_add(1, std::memory_order_relaxed);
      Answer(responder, ErrorCode::INVALID_PARAMS, {});
      return;
    }
    if (ServeCached(decoded.value(), responder)) return;
    {
      MutexLock lock(&mu);
      if (!stopping) {
        queue.push_back(Job{std::move(decoded).value(), std::move(responder)});
        cv.notify_one();
        return;
      }
    }
    Answer(responder, ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, {});
  }

  // On the progress thread: answers from the page cache when the backend can
  // without waiting for the device (ReadValueCached); false to queue.
  bool ServeCached(const LocalDiskRequest& request, AmResponder& responder) {
    std::string data;
    DiskPlace place;
    bool served = false;
    const ErrorCode status = backend->ReadValueCached(request.tenant, request.key,
                                                      request.expected_size, &data, &place,
                                                      &served);
    // A miss goes to a worker: on_missing may block.
    if (!served || status == ErrorCode::OBJECT_NOT_FOUND) return false;
    inline_reads.fetch_add(1, std::memory_order_relaxed);
    AnswerRead(request, responder, status, std::move(data), place);
    return true;
  }

  void Serve(Job& job) {
    std::string data;
    DiskPlace place;
    const ErrorCode status = backend->ReadValue(job.request.tenant, job.request.key,
                                                job.request.expected_size, &data, &place);
    AnswerRead(job.request, job.responder, status, std::move(data), place);
  }

  void WorkerLoop() {
    for (;;) {
      Job job;
      {
        MutexLock lock(&mu);
        cv.wait(lock, [this]() REQUIRES(mu) { return stopping || !queue.empty(); });
        if (stopping) return;
        job = std::move(queue.front());
        queue.pop_front();
      }
      Serve(job);
    }
  }

  void Stop() {
    {
      WriterLock lock(&served_mu);
      on_served = nullptr;
      on_missing = nullptr;
    }
    std::deque<Job> left;
    {
      MutexLock lock(&mu);
      stopping = true;
      left.swap(queue);
      cv.notify_all();
    }
    for (Job& job : left) Answer(job.responder, ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, {});
  }
};

LocalDiskService::LocalDiskService(AmTransport* am, StorageBackend* backend,
                                   LocalDiskServiceOptions options)
    : am_(am) {
  const size_t n = options.worker_threads == 0 ? 1 : options.worker_threads;
  core_ = std::make_shared<Core>(backend, std::move(options.on_served),
                                 std::move(options.on_missing));
  for (size_t i = 0; i < n; ++i) workers_.emplace_back([core = core_]() { core->WorkerLoop(); });
  am_->SetHandler(kLocalDiskReadAmId, [core = core_](AmRequest request, AmResponder responder) {
    core->OnRequest(std::move(request), std::move(responder));
  });
  am_->SetHandler(kLocalDiskProbeAmId, [](AmRequest request, AmResponder responder) {
    AnswerProbe(request, responder);
  });
}

LocalDiskService::~LocalDiskService() {
  am_->SetHandler(kLocalDiskProbeAmId, nullptr);
  am_->SetHandler(kLocalDiskReadAmId, nullptr);
  core_->Stop();
  for (std::thread& t : workers_) t.join();
}

LocalDiskStats LocalDiskService::stats() const {
  LocalDiskStats s;
  s.requests = core_->requests.load(std::memory_order_relaxed);
  s.bytes_served = core_->bytes_served.load(std::memory_order_relaxed);
  s.errors = core_->errors.load(std::memory_order_relaxed);
  s.malformed = core_->malformed.load(std::memory_order_relaxed);
  s.inline_reads = core_->inline_reads.load(std::memory_order_relaxed);
  s.misses = core_->misses.load(std::memory_order_relaxed);
  s.corrupt = core_->corrupt.load(std::memory_order_relaxed);
  return s;
}

}  // namespace shelfmark
