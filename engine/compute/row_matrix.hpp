// The one dense matrix type of the CPU side: FP32, row-major (batch rows, feature columns), as the
// backend's tensors and the data sets store them.
#pragma once

#include <Eigen/Core>

namespace mpx {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace mpx
