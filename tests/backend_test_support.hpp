// What the backend tests share: a tensor made from floats, and a tensor read back as floats.
// Rule: make() goes through the backend's own upload, so its values are rounded (and counted) into
// the tensor's format as any stored value is; get() reads them back exactly and counts nothing.
#pragma once

#include <vector>

#include "engine/compute/backend.hpp"

namespace mpx::test {

inline Tensor make(Backend& be, Format f, int r, int c, const std::vector<float>& v) {
    Tensor t = be.alloc(f, r, c, MemCategory::workspace);
    be.upload(v, t);
    return t;
}
inline std::vector<float> get(Backend& be, const Tensor& t) {
    std::vector<float> v(t.size());
    be.download(t, v);
    return v;
}

}  // namespace mpx::test
