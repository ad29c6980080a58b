#include "reports/charts.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace podsim::reports {
namespace {

using Json = nlohmann::ordered_json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kWidth = 860;

Json Base(int width, int height) {
  return Json{{"$schema", "https://vega.github.io/schema/vega/v5.json"},
              {"width", width},
              {"height", height},
              {"padding", 8},
              {"autosize", {{"type", "pad"}}}};
}

Json Axis(const char* orient, const char* scale, const std::string& title) {
  Json axis{{"orient", orient}, {"scale", scale}, {"grid", true}};
  if (!title.empty()) axis["title"] = title;
  return axis;
}

Json Field(const char* scale, const char* field) {
  return Json{{"scale", scale}, {"field", field}};
}

Json Signal(const std::string& expression) { return Json{{"signal", expression}}; }

// Horizontal bars, one per row of `rows` ({name, value, label}), on a linear x axis.
Json HorizontalBars(const Json& rows, const std::string& x_title, double x_max) {
  const int height = std::max(60, 26 * static_cast<int>(rows.size()));
  Json spec = Base(kWidth - 200, height);
  spec["data"] = Json::array({{{"name", "rows"}, {"values", rows}}});
  Json names = Json::array();
  for (const Json& row : rows) names.push_back(row["name"]);
  spec["scales"] = Json::array({{{"name", "x"},
                                 {"type", "linear"},
                                 {"domain", {0, x_max}},
                                 {"range", "width"},
                                 {"nice", true}},
                                {{"name", "y"},
                                 {"type", "band"},
                                 {"domain", names},
                                 {"range", "height"},
                                 {"padding", 0.2}}});
  spec["axes"] = Json::array({Axis("bottom", "x", x_title), Axis("left", "y", "")});
  spec["axes"][1]["grid"] = false;
  spec["marks"] = Json::array({{{"type", "rect"},
                                {"from", {{"data", "rows"}}},
                                {"encode",
                                 {{"enter",
                                   {{"x", {{"scale", "x"}, {"value", 0}}},
                                    {"x2", Field("x", "value")},
                                    {"y", Field("y", "name")},
                                    {"height", {{"scale", "y"}, {"band", 1}}},
                                    {"fill", {{"value", "#4c78a8"}}},
                                    {"tooltip", Signal("datum.name + ': ' + datum.label")}}}}}},
                               {{"type", "text"},
                                {"from", {{"data", "rows"}}},
                                {"encode",
                                 {{"enter",
                                   {{"x", Field("x", "value")},
                                    {"dx", {{"value", 4}}},
                                    {"y", Field("y", "name")},
                                    {"yc", {{"scale", "y"}, {"field", "name"}, {"band", 0.5}}},
                                    {"baseline", {{"value", "middle"}}},
                                    {"text", {{"field", "label"}}},
                                    {"fill", {{"value", "#333"}}}}}}}}});
  return spec;
}

std::string FormatMs(double seconds) {
  char text[48];
  std::snprintf(text, sizeof text, "%.4g ms", seconds * 1e3);
  return text;
}

std::string FormatPercentOf(double part, double whole) {
  char text[48];
  std::snprintf(text, sizeof text, "%.1f%%", whole > 0 ? 100 * part / whole : 0.0);
  return text;
}

}  // namespace

Chart TimelineChart(const std::vector<Span>& spans, std::vector<std::string> lanes,
                    std::string caption) {
  if (lanes.empty()) {
    std::set<std::string> seen;
    for (const Span& span : spans) {
      if (seen.insert(span.lane).second) lanes.push_back(span.lane);
    }
  }
  Json values = Json::array();
  double end_ms = 0;
  for (const Span& span : spans) {
    values.push_back({{"lane", span.lane},
                      {"name", span.name},
                      {"kind", span.kind},
                      {"start", span.start_s * 1e3},
                      {"end", span.end_s * 1e3}});
    end_ms = std::max(end_ms, span.end_s * 1e3);
  }
  const int height = std::max(60, 22 * static_cast<int>(lanes.size()));
  Json spec = Base(kWidth - 260, height);
  spec["data"] = Json::array({{{"name", "spans"}, {"values", values}}});
  spec["scales"] = Json::array(
      {{{"name", "x"},
        {"type", "linear"},
        {"domain", {0, end_ms > 0 ? end_ms : 1}},
        {"range", "width"}},
       {{"name", "y"}, {"type", "band"}, {"domain", lanes}, {"range", "height"}, {"padding", 0.15}},
       {{"name", "color"},
        {"type", "ordinal"},
        {"domain", {{"data", "spans"}, {"field", "kind"}, {"sort", true}}},
        {"range", "category"}}});
  spec["axes"] =
      Json::array({Axis("bottom", "x", "time since the step's start (ms)"), Axis("left", "y", "")});
  spec["axes"][1]["grid"] = false;
  spec["legends"] = Json::array({{{"fill", "color"}, {"title", "op"}, {"orient", "right"}}});
  spec["marks"] = Json::array(
      {{{"type", "rect"},
        {"from", {{"data", "spans"}}},
        {"encode",
         {{"enter",
           {{"x", Field("x", "start")},
            {"x2", Field("x", "end")},
            {"y", Field("y", "lane")},
            {"height", {{"scale", "y"}, {"band", 1}}},
            {"fill", Field("color", "kind")},
            {"tooltip", Signal("datum.name + ': ' + format(datum.start, '.4~g') + ' to ' + "
                               "format(datum.end, '.4~g') + ' ms'")}}}}}}});
  return Chart{"Step timeline", std::move(caption), std::move(spec)};
}

Chart BreakdownChart(const std::vector<Part>& parts, double total_s, std::string caption) {
  Json rows = Json::array();
  double max_ms = 0;
  for (const Part& part : parts) {
    rows.push_back(
        {{"name", part.name},
         {"value", part.seconds * 1e3},
         {"label", FormatMs(part.seconds) + ", " + FormatPercentOf(part.seconds, total_s)}});
    max_ms = std::max(max_ms, part.seconds * 1e3);
  }
  return Chart{"Where the time went", std::move(caption),
               HorizontalBars(rows, "ms per step", max_ms > 0 ? max_ms * 1.25 : 1)};
}

Chart MemoryChart(const std::vector<MemoryPart>& parts, double hbm_bytes, std::string caption) {
  Json rows = Json::array();
  double total = 0;
  for (const MemoryPart& part : parts) {
    char label[64];
    std::snprintf(label, sizeof label, "%.3g GiB", part.bytes / kGiB);
    rows.push_back({{"name", part.name}, {"value", part.bytes / kGiB}, {"label", label}});
    total += part.bytes;
  }
  char label[96];
  std::snprintf(label, sizeof label, "%.3g GiB, %s of HBM", total / kGiB,
                FormatPercentOf(total, hbm_bytes).c_str());
  rows.push_back({{"name", "total"}, {"value", total / kGiB}, {"label", label}});
  const double hbm_gib = hbm_bytes / kGiB;
  Json spec = HorizontalBars(rows, "GiB per chip", std::max(total / kGiB, hbm_gib) * 1.3);
  spec["data"].push_back({{"name", "hbm"}, {"values", Json::array({{{"gib", hbm_gib}}})}});
  spec["marks"].push_back({{"type", "rule"},
                           {"from", {{"data", "hbm"}}},
                           {"encode",
                            {{"enter",
                              {{"x", Field("x", "gib")},
                               {"y", {{"value", 0}}},
                               {"y2", Signal("height")},
                               {"stroke", {{"value", "#c0392b"}}},
                               {"strokeWidth", {{"value", 2}}}}}}}});
  spec["marks"].push_back({{"type", "text"},
                           {"from", {{"data", "hbm"}}},
                           {"encode",
                            {{"enter",
                              {{"x", Field("x", "gib")},
                               {"dx", {{"value", 4}}},
                               {"y", {{"value", 2}}},
                               {"baseline", {{"value", "top"}}},
                               {"text", Signal("'HBM ' + format(datum.gib, '.3~g') + ' GiB'")},
                               {"fill", {{"value", "#c0392b"}}}}}}}});
  return Chart{"Memory per chip", std::move(caption), std::move(spec)};
}

Chart RooflineChart(const std::vector<RooflinePoint>& points, double peak_flops_per_s,
                    double hbm_bytes_per_s, std::string caption) {
  Json values = Json::array();
  double low = HUGE_VAL, high = 0, slowest = HUGE_VAL;
  for (const RooflinePoint& point : points) {
    if (point.flops <= 0 || point.hbm_bytes <= 0 || point.seconds <= 0) continue;
    const double intensity = point.flops / point.hbm_bytes;
    const double achieved = point.flops / point.seconds / 1e12;
    values.push_back({{"name", point.name},
                      {"intensity", intensity},
                      {"tflops", achieved},
                      {"ms", point.seconds * 1e3},
                      {"count", point.count}});
    low = std::min(low, intensity);
    high = std::max(high, intensity);
    slowest = std::min(slowest, achieved);
  }
  const double ridge = peak_flops_per_s / hbm_bytes_per_s;
  if (values.empty()) low = high = ridge;
  low = std::min(low, ridge) / 4;
  high = std::max(high, ridge) * 4;
  const double peak = peak_flops_per_s / 1e12;
  const double bottom = std::min(slowest, low * hbm_bytes_per_s / 1e12) / 2;
  Json roof = Json::array({{{"intensity", low}, {"tflops", low * hbm_bytes_per_s / 1e12}},
                           {{"intensity", ridge}, {"tflops", peak}},
                           {{"intensity", high}, {"tflops", peak}}});
  Json spec = Base(kWidth - 160, 420);
  spec["data"] =
      Json::array({{{"name", "ops"}, {"values", values}}, {{"name", "roof"}, {"values", roof}}});
  spec["scales"] = Json::array(
      {{{"name", "x"}, {"type", "log"}, {"domain", {low, high}}, {"range", "width"}},
       {{"name", "y"}, {"type", "log"}, {"domain", {bottom, peak * 2}}, {"range", "height"}},
       {{"name", "size"},
        {"type", "sqrt"},
        {"domain", {{"data", "ops"}, {"field", "ms"}}},
        {"range", {16, 400}},
        {"zero", true}}});
  spec["axes"] = Json::array({Axis("bottom", "x", "arithmetic intensity (FLOPs per HBM byte)"),
                              Axis("left", "y", "achieved TFLOP/s")});
  spec["marks"] =
      Json::array({{{"type", "line"},
                    {"from", {{"data", "roof"}}},
                    {"encode",
                     {{"enter",
                       {{"x", Field("x", "intensity")},
                        {"y", Field("y", "tflops")},
                        {"stroke", {{"value", "#c0392b"}}},
                        {"strokeWidth", {{"value", 2}}}}}}}},
                   {{"type", "symbol"},
                    {"from", {{"data", "ops"}}},
                    {"encode",
                     {{"enter",
                       {{"x", Field("x", "intensity")},
                        {"y", Field("y", "tflops")},
                        {"size", Field("size", "ms")},
                        {"fill", {{"value", "#4c78a8"}}},
                        {"fillOpacity", {{"value", 0.6}}},
                        {"tooltip", Signal("datum.name + ' (x' + datum.count + '): ' + "
                                           "format(datum.tflops, '.4~g') + ' TFLOP/s at ' + "
                                           "format(datum.intensity, '.4~g') + ' FLOPs/byte, ' + "
                                           "format(datum.ms, '.4~g') + ' ms'")}}}}}}});
  return Chart{"Roofline of the compute ops", std::move(caption), std::move(spec)};
}

Chart LinkHeatMap(const std::vector<LinkCell>& cells, std::string column_title,
                  std::string row_title, std::string caption) {
  Json values = Json::array();
  int columns = 1, rows = 1;
  std::vector<std::string> panels;
  for (const LinkCell& cell : cells) {
    values.push_back({{"panel", cell.panel},
                      {"column", cell.column},
                      {"row", cell.row},
                      {"utilisation", cell.utilisation},
                      {"label", cell.label}});
    columns = std::max(columns, cell.column + 1);
    rows = std::max(rows, cell.row + 1);
    if (std::find(panels.begin(), panels.end(), cell.panel) == panels.end()) {
      panels.push_back(cell.panel);
    }
  }
  // Cells of 2 to 24 px, a panel at most about 700 x 500 px.
  const double size = std::clamp(std::min(700.0 / columns, 500.0 / rows), 2.0, 24.0);
  const int width = static_cast<int>(std::ceil(size * columns));
  const int height = static_cast<int>(std::ceil(size * rows));
  Json spec{{"$schema", "https://vega.github.io/schema/vega/v5.json"},
            {"padding", 8},
            {"autosize", {{"type", "pad"}}},
            {"layout", {{"columns", 1}, {"padding", 24}, {"bounds", "full"}}}};
  spec["data"] = Json::array({{{"name", "cells"}, {"values", values}}});
  Json column_domain = Json::array(), row_domain = Json::array();
  for (int c = 0; c < columns; ++c) column_domain.push_back(c);
  for (int r = 0; r < rows; ++r) row_domain.push_back(r);
  spec["scales"] = Json::array(
      {{{"name", "x"}, {"type", "band"}, {"domain", column_domain}, {"range", {0, width}}},
       {{"name", "y"}, {"type", "band"}, {"domain", row_domain}, {"range", {0, height}}},
       {{"name", "color"},
        {"type", "linear"},
        {"domain", {0, 1}},
        {"range", {{"scheme", "yelloworangered"}}},
        {"zero", true}}});
  spec["legends"] = Json::array(
      {{{"fill", "color"}, {"title", "utilisation"}, {"format", ".0%"}, {"orient", "right"}}});
  Json x_axis{
      {"orient", "bottom"}, {"scale", "x"}, {"title", column_title}, {"labelOverlap", true}};
  Json y_axis{{"orient", "left"}, {"scale", "y"}, {"title", row_title}, {"labelOverlap", true}};
  Json marks = Json::array();
  for (const std::string& panel : panels) {
    Json filtered{
        {"name", "panel_cells"},
        {"source", "cells"},
        {"transform",
         Json::array({{{"type", "filter"}, {"expr", "datum.panel === " + Json(panel).dump()}}})}};
    marks.push_back(
        {{"type", "group"},
         {"title", {{"text", panel}, {"anchor", "start"}}},
         {"encode", {{"enter", {{"width", {{"value", width}}}, {"height", {{"value", height}}}}}}},
         {"data", Json::array({filtered})},
         {"axes", Json::array({x_axis, y_axis})},
         {"marks",
          Json::array({{{"type", "rect"},
                        {"from", {{"data", "panel_cells"}}},
                        {"encode",
                         {{"enter",
                           {{"x", Field("x", "column")},
                            {"width", {{"scale", "x"}, {"band", 1}}},
                            {"y", Field("y", "row")},
                            {"height", {{"scale", "y"}, {"band", 1}}},
                            {"fill", Field("color", "utilisation")},
                            {"tooltip", Signal("datum.label + ': ' + "
                                               "format(datum.utilisation, '.1%')")}}}}}}})}});
  }
  spec["marks"] = std::move(marks);
  return Chart{"Link utilisation", std::move(caption), std::move(spec)};
}

Chart BandwidthChart(const std::vector<BandwidthPoint>& points, std::string caption) {
  Json values = Json::array();
  for (const BandwidthPoint& point : points) {
    values.push_back(
        {{"bytes", point.bytes}, {"kind", "busbw"}, {"gbps", point.busbw_bytes_per_s / 1e9}});
    values.push_back(
        {{"bytes", point.bytes}, {"kind", "algbw"}, {"gbps", point.algbw_bytes_per_s / 1e9}});
  }
  Json spec = Base(kWidth - 160, 380);
  spec["data"] = Json::array({{{"name", "points"}, {"values", values}}});
  spec["scales"] = Json::array({{{"name", "x"},
                                 {"type", "log"},
                                 {"domain", {{"data", "points"}, {"field", "bytes"}}},
                                 {"range", "width"}},
                                {{"name", "y"},
                                 {"type", "linear"},
                                 {"domain", {{"data", "points"}, {"field", "gbps"}}},
                                 {"range", "height"},
                                 {"zero", true},
                                 {"nice", true}},
                                {{"name", "color"},
                                 {"type", "ordinal"},
                                 {"domain", {"busbw", "algbw"}},
                                 {"range", "category"}}});
  spec["axes"] =
      Json::array({Axis("bottom", "x", "message size (bytes)"), Axis("left", "y", "GB/s")});
  spec["axes"][0]["format"] = "~s";
  spec["legends"] = Json::array({{{"stroke", "color"}, {"title", "bandwidth"}}});
  Json line{{"type", "line"},
            {"from", {{"data", "series"}}},
            {"encode",
             {{"enter",
               {{"x", Field("x", "bytes")},
                {"y", Field("y", "gbps")},
                {"stroke", Field("color", "kind")},
                {"strokeWidth", {{"value", 2}}}}}}}};
  spec["marks"] = Json::array(
      {{{"type", "group"},
        {"from", {{"facet", {{"name", "series"}, {"data", "points"}, {"groupby", "kind"}}}}},
        {"marks", Json::array({line})}},
       {{"type", "symbol"},
        {"from", {{"data", "points"}}},
        {"encode",
         {{"enter",
           {{"x", Field("x", "bytes")},
            {"y", Field("y", "gbps")},
            {"fill", Field("color", "kind")},
            {"size", {{"value", 30}}},
            {"tooltip", Signal("datum.kind + ' ' + format(datum.gbps, '.4~g') + ' GB/s at ' + "
                               "format(datum.bytes, '~s') + 'B'")}}}}}}});
  return Chart{"Bandwidth against message size", std::move(caption), std::move(spec)};
}

Chart ParetoChart(const std::vector<LayoutPoint>& points, double hbm_bytes, std::string caption) {
  // The front: sorted by memory, each layout faster than every smaller one.
  std::vector<size_t> order(points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (points[a].memory_bytes != points[b].memory_bytes) {
      return points[a].memory_bytes < points[b].memory_bytes;
    }
    return points[a].step_s < points[b].step_s;
  });
  std::vector<bool> front(points.size(), false);
  double best = HUGE_VAL;
  for (size_t i : order) {
    if (points[i].step_s < best) {
      front[i] = true;
      best = points[i].step_s;
    }
  }
  Json values = Json::array(), front_values = Json::array();
  double max_gib = hbm_bytes / kGiB;
  for (size_t i = 0; i < points.size(); ++i) {
    const LayoutPoint& p = points[i];
    Json row{{"layout", p.layout},
             {"gib", p.memory_bytes / kGiB},
             {"ms", p.step_s * 1e3},
             {"fits", p.fits ? "fits" : "does not fit"},
             {"front", static_cast<bool>(front[i])}};
    values.push_back(row);
    max_gib = std::max(max_gib, p.memory_bytes / kGiB);
  }
  for (size_t i : order) {
    if (front[i]) {
      front_values.push_back(
          {{"gib", points[i].memory_bytes / kGiB}, {"ms", points[i].step_s * 1e3}});
    }
  }
  Json spec = Base(kWidth - 200, 420);
  spec["data"] =
      Json::array({{{"name", "layouts"}, {"values", values}},
                   {{"name", "front"}, {"values", front_values}},
                   {{"name", "hbm"}, {"values", Json::array({{{"gib", hbm_bytes / kGiB}}})}}});
  spec["scales"] = Json::array({{{"name", "x"},
                                 {"type", "linear"},
                                 {"domain", {0, max_gib * 1.1}},
                                 {"range", "width"},
                                 {"nice", true}},
                                {{"name", "y"},
                                 {"type", "linear"},
                                 {"domain", {{"data", "layouts"}, {"field", "ms"}}},
                                 {"range", "height"},
                                 {"zero", true},
                                 {"nice", true}},
                                {{"name", "color"},
                                 {"type", "ordinal"},
                                 {"domain", {"fits", "does not fit"}},
                                 {"range", {"#4c78a8", "#bbbbbb"}}}});
  spec["axes"] = Json::array(
      {Axis("bottom", "x", "memory per chip (GiB)"), Axis("left", "y", "step time (ms)")});
  spec["legends"] = Json::array({{{"fill", "color"}, {"title", "layout"}}});
  spec["marks"] = Json::array(
      {{{"type", "rule"},
        {"from", {{"data", "hbm"}}},
        {"encode",
         {{"enter",
           {{"x", Field("x", "gib")},
            {"y", {{"value", 0}}},
            {"y2", Signal("height")},
            {"stroke", {{"value", "#c0392b"}}},
            {"strokeDash", {{"value", {4, 4}}}}}}}}},
       {{"type", "line"},
        {"from", {{"data", "front"}}},
        {"encode",
         {{"enter",
           {{"x", Field("x", "gib")},
            {"y", Field("y", "ms")},
            {"stroke", {{"value", "#f58518"}}},
            {"strokeWidth", {{"value", 2}}},
            {"interpolate", {{"value", "step-after"}}}}}}}},
       {{"type", "symbol"},
        {"from", {{"data", "layouts"}}},
        {"encode",
         {{"enter",
           {{"x", Field("x", "gib")},
            {"y", Field("y", "ms")},
            {"fill", Field("color", "fits")},
            {"stroke", Signal("datum.front ? '#f58518' : null")},
            {"strokeWidth", {{"value", 2}}},
            {"size", {{"value", 60}}},
            {"tooltip", Signal("datum.layout + ': ' + format(datum.ms, '.4~g') + ' ms, ' + "
                               "format(datum.gib, '.3~g') + ' GiB'")}}}}}}});
  return Chart{"Step time against memory", std::move(caption), std::move(spec)};
}

}  // namespace podsim::reports
