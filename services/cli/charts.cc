#include "charts.h"

#include <algorithm>
#include <cmath>

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

// One SVG panel: a titled polyline of `points` inside [x, y, w, h] with axis labels.
std::string SvgPanel(const Series& points, double x, double y, double w, double h, const std::string& title,
                     const std::string& color) {
  std::string out = absl::StrFormat(R"(<g><rect x="%g" y="%g" width="%g" height="%g" fill="white" stroke="#ccc"/>)"
                                    R"(<text x="%g" y="%g" font-size="14" font-weight="bold">%s</text>)",
                                    x, y, w, h, x, y - 8, title);
  if (points.size() < 2)
    return absl::StrCat(out, R"(<text x=")", x + 10, R"(" y=")", y + 20, R"(">no data</text></g>)");
  const Range rx = RangeOf(points, true), ry = RangeOf(points, false);
  std::string path;
  for (const auto& [px, py] : points) {
    if (!std::isfinite(py)) continue;
    absl::StrAppend(&path, path.empty() ? "" : " ",
                    absl::StrFormat("%.1f,%.1f", x + (px - rx.lo) / (rx.hi - rx.lo) * w,
                                    y + h - (py - ry.lo) / (ry.hi - ry.lo) * h));
  }
  absl::StrAppend(
      &out, absl::StrFormat(R"(<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>)", color, path));
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
  Series loss, throughput;
  for (const v1::ReducedStep& s : series.steps()) {
    loss.emplace_back(static_cast<double>(s.step()), s.loss());
    throughput.emplace_back(static_cast<double>(s.step()), s.tokens_per_second());
  }
  constexpr double kW = 760, kH = 220, kLeft = 70;
  std::string out =
      absl::StrFormat(R"(<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif">)"
                      R"(<rect width="100%%" height="100%%" fill="#fafafa"/>)"
                      R"(<text x="%g" y="28" font-size="18">gradsync job %s</text>)",
                      kW + kLeft + 30, 2 * kH + 150, kLeft, series.job_id());
  absl::StrAppend(&out, SvgPanel(loss, kLeft, 70, kW, kH, "training loss (mean over ranks)", "#d62728"));
  absl::StrAppend(&out, SvgPanel(throughput, kLeft, kH + 120, kW, kH, "throughput (tokens/s, all ranks)", "#1f77b4"));
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

}  // namespace gradsync::cli
