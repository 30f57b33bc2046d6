// What the comparisons share: a tensor uploaded to both backends (Twin, Rig), the reference's
// rounding of inputs, and one op's step record. Rule: both backends start from identical stored
// values, uploaded from the same floats.
#pragma once

#include <string>
#include <vector>

#include "engine/compute/backend.hpp"
#include "engine/precision/format.hpp"

namespace mpx::compare {

// The same tensor on both backends.
struct Twin {
    Tensor ref, dut;
};

class Rig {
public:
    Rig(Backend& ref, Backend& dut) : m_ref(ref), m_dut(dut) {}
    Backend& ref() { return m_ref; }
    Backend& dut() { return m_dut; }

    Twin make(Format f, int r, int c, const std::vector<float>& v) {
        Twin t{m_ref.alloc(f, r, c, MemCategory::activations),
               m_dut.alloc(f, r, c, MemCategory::activations)};
        m_ref.upload(v, t.ref);
        m_dut.upload(v, t.dut);
        return t;
    }
    Twin zeros(Format f, int r, int c) {
        return make(f, r, c, std::vector<float>(static_cast<std::size_t>(r) * c, 0.0f));
    }
    std::vector<float> ref_values(const Twin& t) { return values(m_ref, t.ref); }
    std::vector<float> dut_values(const Twin& t) { return values(m_dut, t.dut); }

private:
    static std::vector<float> values(Backend& be, const Tensor& t) {
        std::vector<float> v(t.size());
        be.download(t, v);
        return v;
    }
    Backend& m_ref;
    Backend& m_dut;
};

inline std::vector<float> rounded(std::vector<float> v, Format compute) {
    if (compute != Format::fp32) round_in_place(compute, v);
    return v;
}

inline std::string name(Format f) { return std::string(to_string(f)); }

// One op alone: its whole step record (a wait on the GPU), then the record cleared.
template <class Op>
StepStats stats_of(Backend& be, Op&& op) {
    be.begin_step();
    be.set_site(0, TensorKind::grad_output);
    op();
    const StepStats s = be.read_stats();
    be.begin_step();
    return s;
}
struct LossRun {
    double loss;
    RoundStats rounding;
};
template <class Op>
LossRun loss_of(Backend& be, Op&& op) {
    const StepStats s = stats_of(be, op);
    return {s.loss_sum, s.total()};
}

}  // namespace mpx::compare
