// The CPU backend's scratch blocks and its FP32 row-major views of them (internal to engine/compute).
#pragma once

#include <Eigen/Core>

#include <cstdlib>
#include <memory>
#include <new>

#include "engine/compute/row_matrix.hpp"

namespace mpx::cpu {

using Map = Eigen::Map<RowMatrix>;
using CMap = Eigen::Map<const RowMatrix>;

// A scratch block, shaped per op, that keeps its largest size: it is allocated only to grow, so
// after a step of each shape nothing in a step allocates (DESIGN: buffers are allocated once and
// reused every step). The new block is allocated before the old is freed: out of memory stays an
// exception and the old block stays valid.
class Scratch {
public:
    Map shape(Eigen::Index rows, Eigen::Index cols) {
        const auto n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
        if (n > m_capacity) {
            std::unique_ptr<float, Free> fresh(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64)));
            if (!fresh) throw std::bad_alloc();
            m_data = std::move(fresh);
            m_capacity = n;
        }
        m_rows = rows;
        m_cols = cols;
        return map();
    }
    Map map() { return Map(m_data.get(), m_rows, m_cols); }
    float* data() { return m_data.get(); }

private:
    struct Free {
        void operator()(float* p) const noexcept { std::free(p); }
    };
    std::unique_ptr<float, Free> m_data;
    std::size_t m_capacity = 0;
    Eigen::Index m_rows = 0, m_cols = 0;
};

}  // namespace mpx::cpu
