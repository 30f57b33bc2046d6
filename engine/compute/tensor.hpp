// Tensors in their real storage format (FP16/BF16: 2 bytes, FP8: 1 byte) with a memory category.
// Rule: every allocation goes through a Backend, which keeps exact per-category byte totals.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/compute/memory.hpp"
#include "engine/compute/row_matrix.hpp"
#include "engine/precision/format.hpp"

namespace mpx {

class Backend;

// A move-only handle to a (rows, cols) row-major block of one format, owned by a backend.
class Tensor {
public:
    Tensor() = default;
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;
    Tensor(Tensor&& o) noexcept { swap(o); }
    Tensor& operator=(Tensor&& o) noexcept {
        Tensor tmp(std::move(o));
        swap(tmp);
        return *this;
    }
    ~Tensor();

    Format format() const { return m_format; }
    int rows() const { return m_rows; }
    int cols() const { return m_cols; }
    std::size_t size() const { return static_cast<std::size_t>(m_rows) * m_cols; }
    std::size_t bytes() const { return size() * info(m_format).storage_bytes; }
    MemCategory category() const { return m_category; }
    bool empty() const { return m_data == nullptr; }
    void* data() { return m_data; }
    const void* data() const { return m_data; }
    Backend* backend() const { return m_backend; }
    // A pass over fewer rows than the tensor was allocated with (a GPT sample's one sequence in a
    // training batch's buffers): the tensor reads as its first `rows` rows until the next call. The
    // storage, the backend's byte totals and the rows past them stay as they were.
    int allocated_rows() const { return m_allocated_rows; }
    void use_rows(int rows);

private:
    friend class Backend;
    void swap(Tensor& o) noexcept {
        std::swap(m_backend, o.m_backend);
        std::swap(m_data, o.m_data);
        std::swap(m_format, o.m_format);
        std::swap(m_rows, o.m_rows);
        std::swap(m_allocated_rows, o.m_allocated_rows);
        std::swap(m_cols, o.m_cols);
        std::swap(m_category, o.m_category);
    }
    Backend* m_backend = nullptr;
    void* m_data = nullptr;
    Format m_format = Format::fp32;
    int m_rows = 0, m_cols = 0;
    int m_allocated_rows = 0;  // what the byte totals counted
    MemCategory m_category = MemCategory::workspace;
};

}  // namespace mpx
