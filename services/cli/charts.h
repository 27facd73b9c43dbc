// Pictures of a run: a line chart drawn with characters for the terminal, and an SVG report.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::cli {

using Series = std::vector<std::pair<double, double>>;  // (x, y), x ascending

// A `width` x `height` character plot of `points` with the y range labelled on the left and the
// x range below. Empty when there are fewer than two points.
std::string TerminalChart(const Series& points, int width, int height, const std::string& x_label);

// An SVG document with the loss curves and the throughput curve of a job's reduced steps: the
// training loss, and the validation loss (a second series with a marker at each evaluation and a
// legend) when steps carry one. A point of merged steps (a downsampled series) is drawn at the
// middle of its steps.
std::string SvgReport(const v1::JobSeries& series);

}  // namespace gradsync::cli
