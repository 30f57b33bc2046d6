// CudaBackend::Impl: the backend's stream, device buffers and helpers, shared by the translation
// units that implement CudaBackend (cuda_backend.cpp: the ops; cuda_step_state.cpp: what a run
// carries from step to step). Rule: g++ only (no kernels here), and only these files include it:
// everything else sees CudaBackend through cuda_backend.hpp.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/gemm.hpp"
#include "cuda/kernels.hpp"
#include "engine/base/error.hpp"

namespace mpx::cuda {

inline bool narrower(Format compute, Format storage) {  // as the CPU backend's view()
    return compute != Format::fp32 && compute != storage;
}

inline void require(bool ok, const char* what) {
    if (!ok) throw ConfigError("", std::string("CUDA backend: ") + what);
}

// Owns the backend's stream; destroyed last (declared first in Impl).
struct Stream {
    cudaStream_t s = nullptr;
    Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream() {
        if (s) {
            cudaStreamSynchronize(s);
            cudaStreamDestroy(s);
        }
    }
};

// Pinned host memory for one T: the target of the step record's asynchronous copy.
template <typename T>
struct Pinned {
    T* p = nullptr;
    Pinned() { CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p), sizeof(T))); }
    Pinned(const Pinned&) = delete;
    Pinned& operator=(const Pinned&) = delete;
    ~Pinned() {
        if (p) cudaFreeHost(p);
    }
};

// Host → device copies through pinned memory: a copy from pageable memory may make the host wait
// for the stream, one from pinned memory never does. A ring of slots, each with the event of the
// copy that last read it; a slot is refilled only once that copy is done (steps wait once, for
// their record, so in a run it always is: a wait here is counted, as every other). With records
// one step late two steps are in flight: where the next slot's copy is still queued, the ring
// takes one more slot instead of waiting (up to k_max_slots), so a step of many micro-batches
// does not wait for the step before it.
class UploadRing {
public:
    UploadRing() : m_slots(k_slots) {
        for (Slot& s : m_slots) CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
    }
    UploadRing(const UploadRing&) = delete;
    UploadRing& operator=(const UploadRing&) = delete;
    ~UploadRing() {
        for (Slot& s : m_slots) {
            if (s.done) {
                cudaEventSynchronize(s.done);
                cudaEventDestroy(s.done);
            }
            if (s.host) cudaFreeHost(s.host);
        }
        for (Slot& s : m_captured)
            if (s.host) cudaFreeHost(s.host);
        for (void* p : m_deferred) cudaFreeHost(p);
    }
    // A step captured into a CUDA graph reads its uploads when the graph runs, after the whole
    // step was queued: every upload of the step gets a slot of its own (no event: the graph's run
    // ends with the step's wait, before the next step refills them).
    // Called at every step's start: the uploads since the last call are a step's (and whatever
    // came between steps), whose sizes the next captured step's slots are made for.
    void mark_step() {
        m_last_max = m_max;
        m_last_count = m_count;
        m_max = m_count = 0;
    }
    // Before capturing (allocation inside a capture is avoided): a slot for every upload the
    // last step made, each as large as its largest.
    void prepare_capture() {
        while (m_captured.size() < m_last_count) m_captured.emplace_back();
        for (Slot& c : m_captured) grow(c, m_last_max, nullptr);
    }
    void begin_capture() {
        m_capturing = true;
        m_next_captured = 0;
    }
    void end_capture() { m_capturing = false; }
    // After the wait that followed a captured step: the pinned blocks it outgrew.
    void free_deferred() {
        for (void* p : m_deferred) cudaFreeHost(p);
        m_deferred.clear();
    }
    // Queues a copy of `bytes` from `src` to `dst` on `stream`; src may change once this returns.
    void copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, long long& waits) {
        if (bytes == 0) return;
        ++m_count;
        m_max = std::max(m_max, bytes);
        if (m_capturing) {
            if (m_next_captured == m_captured.size()) m_captured.emplace_back();
            Slot& c = m_captured[m_next_captured++];
            grow(c, bytes, &m_deferred);  // only when this step uploads more than the last
            std::memcpy(c.host, src, bytes);
            CUDA_CHECK(cudaMemcpyAsync(dst, c.host, bytes, cudaMemcpyHostToDevice, stream));
            return;
        }
        if (cudaEventQuery(m_slots[m_next].done) == cudaErrorNotReady && m_slots.size() < k_max_slots) {
            Slot fresh;  // placed before the oldest slot in use, which stays next in turn
            CUDA_CHECK(cudaEventCreateWithFlags(&fresh.done, cudaEventDisableTiming));
            m_slots.insert(m_slots.begin() + static_cast<std::ptrdiff_t>(m_next), fresh);
        }
        Slot& s = m_slots[m_next];
        m_next = (m_next + 1) % m_slots.size();
        if (cudaEventQuery(s.done) == cudaErrorNotReady) {
            ++waits;
            CUDA_CHECK(cudaEventSynchronize(s.done));
        }
        grow(s, bytes, nullptr);  // the event is done: nothing reads the old block any more
        std::memcpy(s.host, src, bytes);
        CUDA_CHECK(cudaMemcpyAsync(dst, s.host, bytes, cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaEventRecord(s.done, stream));
    }

private:
    // A step uploads its inputs and labels (targets) per micro-batch: 2 copies; with records one
    // step late two steps are in flight, so a slot comes round again after the step before last.
    static constexpr std::size_t k_slots = 8;
    static constexpr std::size_t k_max_slots = 256;  // then a slot still in use is waited for
    struct Slot {
        void* host = nullptr;
        std::size_t bytes = 0;
        cudaEvent_t done = nullptr;
    };
    // At least `bytes`; the old block freed, or kept in `deferred` (a captured step may still
    // read it when its graph runs).
    static void grow(Slot& s, std::size_t bytes, std::vector<void*>* deferred) {
        if (bytes <= s.bytes) return;
        void* fresh = nullptr;
        CUDA_CHECK(cudaMallocHost(&fresh, bytes));
        if (s.host) {
            if (deferred) deferred->push_back(s.host);
            else CUDA_CHECK(cudaFreeHost(s.host));
        }
        s.host = fresh;
        s.bytes = bytes;
    }
    std::vector<Slot> m_slots;
    std::size_t m_next = 0;
    bool m_capturing = false;
    std::vector<Slot> m_captured;  // a captured step's uploads, one slot each
    std::size_t m_next_captured = 0;
    std::vector<void*> m_deferred;  // pinned blocks a captured step outgrew
    std::size_t m_count = 0, m_max = 0, m_last_count = 0, m_last_max = 0;  // uploads per step
};

// A tensor of another backend holds host (or another device's) memory: a kernel would fault and
// leave the context unusable, so refuse it up front. nullptr entries (absent bias, master) pass.
inline void require_own(const Backend* be, std::initializer_list<const Tensor*> ts) {
    for (const Tensor* t : ts)
        if (t && t->backend() != be)
            throw DeviceError(
                "a tensor of another backend was passed to the CUDA backend; tensors "
                "cannot be shared between backends");
}

struct CudaBackend::Impl {
    int device;
    Stream stream;  // first: destroyed after every buffer that work on it may use
    std::string name;
    int cc = 0;  // compute capability, 90 for 9.0
    Gemm gemm;
    // Two step records on the device (holds_two_steps): a step counts into records[slot]; each is
    // copied at its step's end into its own pinned host record, the copy's event marking it done.
    // With CUDA graphs one record is used (slot stays 0): a captured step's pointers stay the same.
    DeviceBuffer record{2 * sizeof(StepStats)};
    int slot = 0;
    DeviceBuffer state{sizeof(cuda::DeviceStepState)};  // the loss scaler, Adam's applied steps
    DeviceBuffer bias;  // Adam's bias corrections by t − 1 (set_bias_corrections)
    long long bias_size = 0;
    DeviceBuffer lrs;   // the learning rate by schedule steps (set_lr_schedule)
    long long lrs_size = 0;
    Pinned<StepStats> host_record[2];
    struct RecordCopy {
        cudaEvent_t done = nullptr;
        bool queued = false;  // the copy of this slot's record is queued and not yet waited for
    } record_copy[2];
    DeviceBuffer hist;  // StepHistograms on the device, allocated on the first collecting step
    std::unique_ptr<StepHistograms> host_hist;
    bool collecting = false;
    int hist_layers = 0;  // the layers the current step's histograms cover
    DeviceBuffer eval_counts{sizeof(Counts)};  // accuracy's hits, outside the step record
    Pinned<Counts> host_eval_counts;
    // Scratch, grown on demand (outside the memory accounting, like the CPU's Eigen scratch).
    DeviceBuffer op_a, op_b;  // GEMM operands cast to the compute format
    DeviceBuffer acc;         // GEMM output (FP32) before rounding into the destination
    DeviceBuffer aux;         // column sums, layernorm sums, staging, losses, chunk sums
    DeviceBuffer aux2;
    DeviceBuffer labels;
    DeviceBuffer fp8_work{k_fp8_tensors * sizeof(cuda::Fp8Work)};  // by Fp8Tensor
    DeviceBuffer fp8_op;  // MXFP8: dy blocked down columns for the weight gradient
    // Delayed scaling's amax histories (set_amax_histories): states by fp8_index, their values.
    DeviceBuffer amax_states, amax_hist;
    int amax_count = 0;
    long long amax_values = 0;
    core::AmaxHistoryState* amax_states_at() { return static_cast<core::AmaxHistoryState*>(amax_states.data()); }

    UploadRing uploads;  // every host → device copy of inputs, labels and tables
    // The update pass's table of every parameter (Backend::unscale_all, clip_all, optimizer_all),
    // kept on the device as last uploaded: uploaded again only when the parameters change.
    DeviceBuffer params;
    std::vector<cuda::ParamEntry> params_host;
    cuda::ParamLaunch params_launch;

    Impl(int dev, cudaDeviceProp prop, bool use_graphs)
        : device(dev), name(prop.name), cc(prop.major * 10 + prop.minor), gemm(stream.s) {
        scratch = {&bias, &lrs, &hist, &op_a, &op_b, &acc, &aux, &aux2, &labels, &fp8_op, &params, &amax_states, &amax_hist};
        for (DeviceBuffer* b : scratch) {
            b->count_waits_in(&syncs);
            b->sync_on(stream.s);
        }
        graphs.enabled = use_graphs;
        for (RecordCopy& c : record_copy) CUDA_CHECK(cudaEventCreateWithFlags(&c.done, cudaEventDisableTiming));
    }
    ~Impl() {
        drop_capture();
        if (graphs.exec) cudaGraphExecDestroy(graphs.exec);
        cudaStreamSynchronize(s());
        for (void* p : graphs.deferred) cudaFree(p);
        for (RecordCopy& c : record_copy)
            if (c.done) cudaEventDestroy(c.done);
    }
    // The record of `at` into its pinned host record, asynchronously, once per step.
    void queue_record_copy(int at) {
        RecordCopy& c = record_copy[at];
        if (c.queued) return;
        CUDA_CHECK(cudaMemcpyAsync(host_record[at].p, record_at(at), sizeof(StepStats), cudaMemcpyDeviceToHost, s()));
        CUDA_CHECK(cudaEventRecord(c.done, s()));
        c.queued = true;
    }
    // The host waits for the copy of record `at` only, not for what was queued after it (counted).
    const StepStats& wait_for_record(int at) {
        queue_record_copy(at);
        ++syncs;
        CUDA_CHECK(cudaEventSynchronize(record_copy[at].done));
        record_copy[at].queued = false;
        return *host_record[at].p;
    }
    std::vector<DeviceBuffer*> scratch;  // the buffers that grow on demand

    // ---- CUDA graphs (CudaOptions::graphs, off by default) ----
    // After k_eager_steps plain steps (they size every scratch buffer and upload slot), each step
    // from begin_step to read_stats is captured (relaxed mode: nothing is waited for, scratch that
    // grows frees its old block only after the graph ran, uploads take a slot each) and launched
    // as one graph; the executable graph is updated in place while the step keeps its shape
    // (cudaGraphExecUpdate), and instantiated again when it changed (a histogram step).
    static constexpr long long k_eager_steps = 2;
    struct Graphs {
        bool enabled = false;
        bool capturing = false;
        long long eager = 0;
        cudaGraphExec_t exec = nullptr;
        long long launched = 0, instantiated = 0;
        std::vector<void*> deferred;  // scratch blocks replaced while capturing
    } graphs;
    void set_deferral(bool on) {
        for (DeviceBuffer* b : scratch) b->defer_frees_to(on ? &graphs.deferred : nullptr);
    }
    // A capture an op abandoned by throwing: ended and thrown away (the stream is usable again).
    void drop_capture() noexcept {
        if (!graphs.capturing) return;
        graphs.capturing = false;
        uploads.end_capture();
        set_deferral(false);
        cudaGraph_t g = nullptr;
        cudaStreamEndCapture(s(), &g);
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
    }
    void begin_step_capture() {
        drop_capture();
        uploads.mark_step();
        if (!graphs.enabled) return;
        if (graphs.eager < k_eager_steps) {
            ++graphs.eager;
            return;
        }
        uploads.prepare_capture();
        CUDA_CHECK(cudaStreamBeginCapture(s(), cudaStreamCaptureModeRelaxed));
        graphs.capturing = true;
        uploads.begin_capture();
        set_deferral(true);
    }
    // Ends the step's capture and launches it (nothing when the step was not captured).
    void launch_captured_step() {
        if (!graphs.capturing) return;
        graphs.capturing = false;
        uploads.end_capture();
        set_deferral(false);
        cudaGraph_t g = nullptr;
        const cudaError_t e = cudaStreamEndCapture(s(), &g);
        if (e != cudaSuccess || !g) {
            cudaGetLastError();
            if (g) cudaGraphDestroy(g);
            throw DeviceError(std::string("a CUDA graph could not capture this training step (") +
                              cudaGetErrorString(e) + "); train without CUDA graphs");
        }
        if (graphs.exec) {
            cudaGraphExecUpdateResultInfo info{};
            if (cudaGraphExecUpdate(graphs.exec, g, &info) != cudaSuccess) {  // the shape changed
                cudaGetLastError();
                cudaGraphExecDestroy(graphs.exec);
                graphs.exec = nullptr;
            }
        }
        cudaError_t made = cudaSuccess;
        if (!graphs.exec) {
            made = cudaGraphInstantiate(&graphs.exec, g, 0);
            if (made == cudaSuccess) ++graphs.instantiated;
        }
        cudaGraphDestroy(g);
        CUDA_CHECK(made);
        CUDA_CHECK(cudaGraphLaunch(graphs.exec, s()));
        ++graphs.launched;
    }
    void free_deferred() {
        for (void* p : graphs.deferred) cudaFree(p);
        graphs.deferred.clear();
        uploads.free_deferred();
    }
    // A host → device copy that never waits for the stream (counted where it must).
    void upload_bytes(void* dst, const void* src, std::size_t bytes) { uploads.copy(dst, src, bytes, s(), syncs); }

    cudaStream_t s() const { return stream.s; }
    StepStats* record_at(int at) { return static_cast<StepStats*>(record.data()) + at; }
    StepStats* rec() { return record_at(slot); }  // the current step's
    cuda::DeviceStepState* steps() { return static_cast<cuda::DeviceStepState*>(state.data()); }
    // The host's tables the optimizer reads at the device's step counts (device pointers).
    core::StepTables step_tables() {
        return {static_cast<const float*>(lrs.data()), lrs_size,
                static_cast<const core::BiasCorrection*>(bias.data()), bias_size};
    }
    // A site of the device record (Backend::site(); -1: uncounted work, nullptr).
    Counts* counters(int site) { return site < 0 ? nullptr : &rec()->site[site]; }
    StepHistograms* hists() { return static_cast<StepHistograms*>(hist.data()); }
    // A site's counts and, on a collecting step, its bins.
    Sink sink(int site) {
        return {counters(site), collecting && site >= 0 ? &hists()->site[site] : nullptr};
    }

    // Where the update pass adds its counts and bins (ParamEntry's site and layer index these).
    cuda::ParamSinks param_sinks() {
        return {rec()->site, collecting ? hists()->site : nullptr,
                collecting ? hists()->update_ulp : nullptr};
    }

    // Start of an op: this backend's device current (the worker thread may not have chosen it).
    void use() { CUDA_CHECK(cudaSetDevice(device)); }
    // The host waits for the stream (counted; so are a scratch buffer's growth and an upload slot
    // still in use, which a run's steady state never meets).
    void wait() {
        if (graphs.capturing)  // a wait would end the capture: no op inside a step may wait
            throw DeviceError("the CUDA backend was asked to wait for the device inside a step "
                              "being captured into a CUDA graph; train without CUDA graphs");
        ++syncs;
        CUDA_CHECK(cudaStreamSynchronize(s()));
    }
    long long syncs = 0;

    // A GEMM operand in the layout cuBLAS is given: the tensor itself where its storage already is
    // the compute format's, else a cast into `scratch` (rounded to the compute format as the CPU's
    // operand(); the cast counted into `counts` where given, as there).
    const void* operand(const Tensor& t, Format compute, DeviceBuffer& scratch, Sink counts) {
        const Format stored_as = gemm_storage(gemm_input(compute));
        const bool round = narrower(compute, t.format());
        const bool same_container =
            t.format() == stored_as || (t.format() == Format::tf32 && stored_as == Format::fp32);
        if (same_container && !round) return t.data();
        void* dst = scratch.get<char>(t.size() * info(stored_as).storage_bytes);
        if (round)
            cuda::cast(t.data(), t.format(), compute, dst, stored_as, t.size(), counts, s());
        else
            cuda::convert(t.data(), t.format(), Format::fp32, dst, stored_as, t.size(), nullptr,
                          s());
        return dst;
    }

    cuda::Fp8Work* fp8_slot(Fp8Tensor t) {
        return static_cast<cuda::Fp8Work*>(fp8_work.data()) + static_cast<int>(t);
    }
    // An FP8 GEMM operand (engine/core/fp8_math.hpp) into `scratch` as FP32 values (FP8 products are
    // exact in FP32: cuBLASLt's FP32 GEMM stands in for the FP8 tensor-core GEMM); its amax and
    // scale stay in fp8_slot(which) for the descale. `record` of the step's FP8 record or nullptr.
    // Delayed scaling casts with the scale of g.layer's history of `which` on the device.
    float* fp8_operand(const Tensor& t, const Fp8Gemm& g, Fp8Tensor which, bool along_rows,
                       DeviceBuffer& scratch, Sink counts, core::Fp8Record* record) {
        float* dst = scratch.get<float>(t.size());
        const int h = fp8_index(g.layer, which);
        const cuda::Fp8Cast how{g.recipe, g.format(which), g.overflow(which),
                                h < amax_count ? &amax_states_at()[h].scale : nullptr, along_rows};
        cuda::fp8_cast(t.data(), t.format(), t.rows(), t.cols(), how, dst, fp8_slot(which), counts,
                       record, s());
        return dst;
    }
    core::Fp8Record* fp8_record(int site, int layer, Fp8Tensor t) {
        return site < 0 ? nullptr : &rec()->fp8[fp8_index(layer, t)];
    }

    std::vector<int> checked_labels(std::span<const int> labels, int rows, int classes) {
        require(labels.size() >= static_cast<std::size_t>(rows), "fewer labels than rows");
        std::vector<int> l(labels.begin(), labels.begin() + rows);
        for (int v : l)
            if (v < 0 || v >= classes)
                throw ConfigError("labels", "label " + std::to_string(v) + " is outside 0.." +
                                                std::to_string(classes - 1));
        return l;
    }
    const int* upload_labels(const std::vector<int>& l) {
        int* d = labels.get<int>(l.size());
        upload_bytes(d, l.data(), l.size() * sizeof(int));
        return d;
    }
};

}  // namespace mpx::cuda
