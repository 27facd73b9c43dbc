#include "charts.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync::cli {
namespace {

struct Range {
  double lo = 0, hi = 1;
};

Range RangeOf(const Series& s, bool x) {
  Range r{INFINITY, -INFINITY};
  for (const auto& p : s) {
    const double v = x ? p.first : p.second;
    if (!std::isfinite(v)) continue;
    r.lo = std::min(r.lo, v);
    r.hi = std::max(r.hi, v);
  }
  if (!(r.lo < r.hi)) r = {r.lo - 0.5, r.lo + 0.5};
  return r;
}

std::string Num(double v) { return absl::StrFormat("%.4g", v); }

// One curve of an SVG panel; `markers` draws a circle at each point (sparse series such as the
// validation loss, whose points are the evaluations).
struct Curve {
  Series points;
  std::string color;
  std::string label;
  bool markers = false;
};

// The polyline of `c` (and its markers) in a panel whose data ranges are rx, ry.
std::string SvgCurve(const Curve& c, double x, double y, double w, double h, const Range& rx, const Range& ry) {
  std::string path, dots;
  for (const auto& [px, py] : c.points) {
    if (!std::isfinite(py)) continue;
    const double sx = x + (px - rx.lo) / (rx.hi - rx.lo) * w, sy = y + h - (py - ry.lo) / (ry.hi - ry.lo) * h;
    absl::StrAppend(&path, path.empty() ? "" : " ", absl::StrFormat("%.1f,%.1f", sx, sy));
    if (c.markers) {
      absl::StrAppend(&dots, absl::StrFormat(R"(<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>)", sx, sy, c.color));
    }
  }
  return absl::StrCat(
      absl::StrFormat(R"(<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>)", c.color, path), dots);
}

// One SVG panel: titled curves inside [x, y, w, h] on shared axes, with axis labels, and a legend
// when there is more than one curve with points.
std::string SvgPanel(const std::vector<Curve>& curves, double x, double y, double w, double h,
                     const std::string& title) {
  std::string out = absl::StrFormat(R"(<g><rect x="%g" y="%g" width="%g" height="%g" fill="white" stroke="#ccc"/>)"
                                    R"(<text x="%g" y="%g" font-size="14" font-weight="bold">%s</text>)",
                                    x, y, w, h, x, y - 8, title);
  if (curves.empty() || curves[0].points.size() < 2)
    return absl::StrCat(out, R"(<text x=")", x + 10, R"(" y=")", y + 20, R"(">no data</text></g>)");
  Series all;
  std::vector<const Curve*> shown;
  for (const Curve& c : curves) {
    if (c.points.empty()) continue;
    all.insert(all.end(), c.points.begin(), c.points.end());
    shown.push_back(&c);
  }
  const Range rx = RangeOf(all, true), ry = RangeOf(all, false);
  for (const Curve* c : shown) absl::StrAppend(&out, SvgCurve(*c, x, y, w, h, rx, ry));
  for (size_t i = 0; shown.size() > 1 && i < shown.size(); ++i) {
    const double ly = y + 16 + 16 * static_cast<double>(i);
    absl::StrAppend(&out, absl::StrFormat(R"(<g class="legend"><rect x="%g" y="%g" width="12" height="4" fill="%s"/>)"
                                          R"(<text x="%g" y="%g" font-size="11">%s</text></g>)",
                                          x + w - 190, ly - 4, shown[i]->color, x + w - 172, ly, shown[i]->label));
  }
  absl::StrAppend(&out, absl::StrFormat(R"(<text x="%g" y="%g" font-size="11" text-anchor="end">%s</text>)", x - 4,
                                        y + 10, Num(ry.hi)));
  absl::StrAppend(&out, absl::StrFormat(R"(<text x="%g" y="%g" font-size="11" text-anchor="end">%s</text>)", x - 4,
                                        y + h, Num(ry.lo)));
  absl::StrAppend(&out,
                  absl::StrFormat(R"(<text x="%g" y="%g" font-size="11">step %s</text>)", x, y + h + 14, Num(rx.lo)));
  absl::StrAppend(&out, absl::StrFormat(R"(<text x="%g" y="%g" font-size="11" text-anchor="end">step %s</text></g>)",
                                        x + w, y + h + 14, Num(rx.hi)));
  return out;
}

}  // namespace

std::string TerminalChart(const Series& points, int width, int height, const std::string& x_label) {
  if (points.size() < 2 || width < 4 || height < 2) return "";
  const Range rx = RangeOf(points, true), ry = RangeOf(points, false);
  std::vector<std::string> grid(height, std::string(width, ' '));
  int prev_row = -1;
  for (int col = 0; col < width; ++col) {
    // The mean of the points falling in this column, so long runs average instead of aliasing.
    const double x0 = rx.lo + (rx.hi - rx.lo) * col / width, x1 = rx.lo + (rx.hi - rx.lo) * (col + 1) / width;
    double sum = 0;
    int n = 0;
    for (const auto& [px, py] : points) {
      if (px >= x0 && (px < x1 || (col == width - 1 && px <= x1)) && std::isfinite(py)) {
        sum += py;
        ++n;
      }
    }
    if (n == 0) continue;
    const int row =
        std::clamp(static_cast<int>(std::lround((ry.hi - sum / n) / (ry.hi - ry.lo) * (height - 1))), 0, height - 1);
    grid[row][col] = '*';
    if (prev_row >= 0) {  // join vertical jumps so the curve reads as a line
      for (int r = std::min(prev_row, row) + 1; r < std::max(prev_row, row); ++r) grid[r][col] = '|';
    }
    prev_row = row;
  }
  const std::string top = Num(ry.hi), bottom = Num(ry.lo);
  const size_t margin = std::max(top.size(), bottom.size());
  std::string out;
  for (int r = 0; r < height; ++r) {
    std::string label = r == 0 ? top : r == height - 1 ? bottom : "";
    absl::StrAppend(&out, std::string(margin - label.size(), ' '), label, " |", grid[r], "\n");
  }
  absl::StrAppend(&out, std::string(margin + 1, ' '), "+", std::string(width, '-'), "\n");
  const std::string left = Num(rx.lo), right = absl::StrCat(Num(rx.hi), " ", x_label);
  const int gap = std::max(1, width - static_cast<int>(left.size() + right.size()));
  absl::StrAppend(&out, std::string(margin + 2, ' '), left, std::string(gap, ' '), right, "\n");
  return out;
}

std::string SvgReport(const v1::JobSeries& series) {
  Curve loss{{}, "#d62728", "training (mean over ranks)"};
  Curve validation{{}, "#2ca02c", "validation (whole set)", true};
  Curve throughput{{}, "#1f77b4", "tokens/s"};
  for (const v1::ReducedStep& s : series.steps()) {
    // A point of merged steps stands at their middle.
    const double step = s.merged_steps() > 1 ? (static_cast<double>(s.first_step()) + static_cast<double>(s.step())) / 2
                                             : static_cast<double>(s.step());
    loss.points.emplace_back(step, s.loss());
    if (s.has_validation_loss()) validation.points.emplace_back(step, s.validation_loss());
    throughput.points.emplace_back(step, s.tokens_per_second());
  }
  constexpr double kW = 760, kH = 220, kLeft = 70;
  std::string out =
      absl::StrFormat(R"(<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif">)"
                      R"(<rect width="100%%" height="100%%" fill="#fafafa"/>)"
                      R"(<text x="%g" y="28" font-size="18">gradsync job %s</text>)",
                      kW + kLeft + 30, 2 * kH + 150, kLeft, series.job_id());
  const std::string loss_title =
      validation.points.empty() ? "training loss (mean over ranks)" : "training and validation loss";
  absl::StrAppend(&out, SvgPanel({loss, validation}, kLeft, 70, kW, kH, loss_title));
  absl::StrAppend(&out, SvgPanel({throughput}, kLeft, kH + 120, kW, kH, "throughput (tokens/s, all ranks)"));
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

}  // namespace gradsync::cli
