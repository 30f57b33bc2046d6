// Decision boundaries: which class each run's model predicts over a grid on the input plane of a 2-D
// data set, through the run's own forward pass (Run::predict) in the run's own precisions. Every 2-D
// data set is a classification (the one regression set, sine, has one input), so grids hold classes.
// Rule: a grid is a read of the weights, like an evaluation: it never changes training, and its
// predictions are exactly what that forward pass gives on the cell centres (no second model, no
// FP32 shortcut). Cells are row-major with row 0 at the bottom (lowest y).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/dataset.hpp"
#include "engine/run/boundary_grid.hpp"

namespace mpx {

class Run;
class Session;

// A square extent centred on every training and held-out point, each side `margin` × the larger
// span wider than the data, so shapes keep their proportions. ConfigError (data.kind) unless 2-D.
PlaneExtent plane_extent(const Dataset& d, double margin = 0.1);

// The cell centres of a resolution × resolution grid over `e`: (resolution², 2), row-major, row 0
// at y0. Coordinates are computed in double and stored as float, as the data set's inputs are.
RowMatrix grid_points(const PlaneExtent& e, int resolution);

// One run's grid over `plane`. ConfigError (data.kind) for a data set without two input features,
// ConfigError (boundary.resolution) for a resolution outside [16, 128].
BoundaryGrid evaluate_boundary(Run& run, const DatasetConfig& data, const PlaneExtent& plane,
                               int resolution);
// Every run of the session over plane_extent(dataset), timed; the same errors.
Boundaries evaluate_boundaries(Session& s, int resolution);

}  // namespace mpx
