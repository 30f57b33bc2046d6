// A device allocation owned by one object: movable, never copied by accident (tiny-cuda-nn's
// GPUMemory habit). Rule: the backend's scratch lives here, outside the memory accounting, as the
// CPU backend's Eigen scratch matrices do (DESIGN.md, "Memory accounting" counts tensors only).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "cuda/check.hpp"

namespace mpx::cuda {

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes) { reserve(bytes); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept
        : m_data(std::exchange(o.m_data, nullptr)), m_bytes(std::exchange(o.m_bytes, 0)),
          m_waits(o.m_waits), m_deferred(o.m_deferred), m_stream(o.m_stream) {}
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        std::swap(m_data, o.m_data);
        std::swap(m_bytes, o.m_bytes);
        std::swap(m_waits, o.m_waits);
        std::swap(m_deferred, o.m_deferred);
        std::swap(m_stream, o.m_stream);
        return *this;
    }
    ~DeviceBuffer() {
        if (m_data) cudaFree(m_data);
    }

    // Grows to at least `bytes` (contents not kept). Waits for queued work first: a kernel still
    // reading the old block must finish before it is freed (rare: buffers only ever grow; a run's
    // first step sizes them). That wait is added to *waits where count_waits_in gave one. While
    // frees are deferred (a step being captured into a CUDA graph, where no wait may happen) the
    // old block goes into that list instead, to be freed once the graph has run.
    void reserve(std::size_t bytes) {
        if (bytes <= m_bytes) return;
        void* p = device_malloc(bytes);  // first: out of memory leaves the old block in place
        if (m_data && m_deferred) {
            m_deferred->push_back(m_data);
        } else if (m_data) {
            if (m_waits) ++*m_waits;
            if (m_stream) CUDA_CHECK(cudaStreamSynchronize(m_stream));
            else CUDA_CHECK(cudaDeviceSynchronize());
            cudaFree(m_data);
        }
        m_data = p;
        m_bytes = bytes;
    }
    template <typename T>
    T* get(std::size_t count) {
        reserve(count * sizeof(T) + (count == 0 ? 1 : 0));
        return static_cast<T*>(m_data);
    }
    void count_waits_in(long long* waits) { m_waits = waits; }
    void defer_frees_to(std::vector<void*>* list) { m_deferred = list; }  // nullptr: free at once
    // The only stream that uses this buffer: a growth waits for it alone (default: the device).
    void sync_on(cudaStream_t stream) { m_stream = stream; }
    void* data() const { return m_data; }
    std::size_t bytes() const { return m_bytes; }

private:
    void* m_data = nullptr;
    std::size_t m_bytes = 0;
    long long* m_waits = nullptr;
    std::vector<void*>* m_deferred = nullptr;
    cudaStream_t m_stream = nullptr;
};

}  // namespace mpx::cuda
