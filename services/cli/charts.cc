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

// The step between NiceTicks(lo, hi, ...)'s ticks (0 for an empty list).
double TickStep(const std::vector<double>& ticks) { return ticks.size() >= 2 ? ticks[1] - ticks[0] : 0; }

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

// The ticks of a panel: a grid line and a label at each tick of either axis (the grid under the
// curves' colours, light enough to read through).
std::string SvgTicks(double x, double y, double w, double h, const Range& rx, const Range& ry) {
  std::string out;
  const std::vector<double> yticks = NiceTicks(ry.lo, ry.hi, 5), xticks = NiceTicks(rx.lo, rx.hi, 8);
  for (double t : yticks) {
    const double sy = y + h - (t - ry.lo) / (ry.hi - ry.lo) * h;
    absl::StrAppend(&out, absl::StrFormat(R"(<line class="grid" x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#e6e6e6"/>)"
                                          R"(<text class="ytick" x="%g" y="%.1f" font-size="11" text-anchor="end">%s</text>)",
                                          x, sy, x + w, sy, x - 4, sy + 4, TickLabel(t, TickStep(yticks))));
  }
  for (double t : xticks) {
    const double sx = x + (t - rx.lo) / (rx.hi - rx.lo) * w;
    absl::StrAppend(&out, absl::StrFormat(R"(<line class="grid" x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#e6e6e6"/>)"
                                          R"(<text class="xtick" x="%.1f" y="%g" font-size="11" text-anchor="middle">%s</text>)",
                                          sx, y, sx, y + h, sx, y + h + 14, TickLabel(t, TickStep(xticks))));
  }
  return out;
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
  absl::StrAppend(&out, SvgTicks(x, y, w, h, rx, ry));
  for (const Curve* c : shown) absl::StrAppend(&out, SvgCurve(*c, x, y, w, h, rx, ry));
  for (size_t i = 0; shown.size() > 1 && i < shown.size(); ++i) {
    const double ly = y + 16 + 16 * static_cast<double>(i);
    absl::StrAppend(&out, absl::StrFormat(R"(<g class="legend"><rect x="%g" y="%g" width="12" height="4" fill="%s"/>)"
                                          R"(<text x="%g" y="%g" font-size="11">%s</text></g>)",
                                          x + w - 190, ly - 4, shown[i]->color, x + w - 172, ly, shown[i]->label));
  }
  absl::StrAppend(&out, absl::StrFormat(R"(<text x="%g" y="%g" font-size="11" text-anchor="end">step</text></g>)",
                                        x + w, y + h + 30));
  return out;
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi) || target < 1) return {};
  const double rough = (hi - lo) / target;
  const double power = std::pow(10.0, std::floor(std::log10(rough)));
  double step = power * 10;
  for (double m : {1.0, 2.0, 5.0}) {
    if (rough <= m * power * 1.0000001) {
      step = m * power;
      break;
    }
  }
  std::vector<double> ticks;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9 && ticks.size() < 100; k += 1) {
    ticks.push_back(k * step == 0 ? 0.0 : k * step);
  }
  return ticks;
}

std::string TickLabel(double value, double step) {
  if (std::fabs(value) >= 1e6 || (step > 0 && step < 1e-4)) return absl::StrFormat("%.3g", value);
  const int decimals = step >= 1 || step <= 0 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return absl::StrFormat("%.*f", decimals, value);
}

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
  // A y tick labels the row it rounds to; the top and bottom rows keep the range's own ends.
  std::vector<std::string> labels(height);
  labels[0] = Num(ry.hi);
  labels[height - 1] = Num(ry.lo);
  const std::vector<double> yticks = NiceTicks(ry.lo, ry.hi, std::max(2, height / 3));
  for (double t : yticks) {
    const int row = static_cast<int>(std::lround((ry.hi - t) / (ry.hi - ry.lo) * (height - 1)));
    if (row > 0 && row < height - 1 && labels[row - 1].empty() && labels[row + 1].empty()) {
      labels[row] = TickLabel(t, TickStep(yticks));
    }
  }
  size_t margin = 0;
  for (const std::string& l : labels) margin = std::max(margin, l.size());
  std::string out;
  for (int r = 0; r < height; ++r) {
    absl::StrAppend(&out, std::string(margin - labels[r].size(), ' '), labels[r], labels[r].empty() ? " |" : " -",
                    grid[r], "\n");
  }
  // The x axis with a '+' under each tick, and the tick labels that fit without touching.
  std::string axis(width, '-'), names(width + 16, ' ');
  int free_from = 0;
  const std::vector<double> xticks = NiceTicks(rx.lo, rx.hi, std::max(2, width / 12));
  for (double t : xticks) {
    const int col = std::clamp(static_cast<int>(std::lround((t - rx.lo) / (rx.hi - rx.lo) * (width - 1))), 0, width - 1);
    axis[col] = '+';
    const std::string label = TickLabel(t, TickStep(xticks));
    const int at = std::max(0, col - static_cast<int>(label.size()) / 2);
    if (at < free_from || at + static_cast<int>(label.size()) > width) continue;
    names.replace(at, label.size(), label);
    free_from = at + static_cast<int>(label.size()) + 1;
  }
  names.resize(std::min<size_t>(names.size(), free_from));
  absl::StrAppend(&out, std::string(margin + 1, ' '), "+", axis, "\n");
  absl::StrAppend(&out, std::string(margin + 2, ' '), names, names.empty() ? "" : " ", x_label, "\n");
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
