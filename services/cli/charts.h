// Pictures of a run: a line chart drawn with characters for the terminal, and an SVG report.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::cli {

using Series = std::vector<std::pair<double, double>>;  // (x, y), x ascending

// Axis ticks for [lo, hi]: the multiples of one step of 1, 2 or 5 times a power of ten that lie in
// it, about `target` of them (at least two where the range allows).
std::vector<double> NiceTicks(double lo, double hi, int target);
// A tick's label at the precision its step needs: "30000", "2.5", "0.05", "1.2e+07".
std::string TickLabel(double value, double step);

// A `width` x `height` character plot of `points`, the y ticks labelled on the left (a '-' on the
// axis at each) and the x ticks below it ('+' on the axis). Empty when there are fewer than two
// points.
std::string TerminalChart(const Series& points, int width, int height, const std::string& x_label);

// An SVG document with the loss curves and the throughput curve of a job's reduced steps: the
// training loss, and the validation loss (a second series with a marker at each evaluation and a
// legend) when steps carry one. Each panel has ticks and grid lines on both axes. A point of merged steps (a downsampled series) is drawn at the
// middle of its steps.
std::string SvgReport(const v1::JobSeries& series);

}  // namespace gradsync::cli
