#include "reports/report.h"

#include <string_view>

#include "reports/vega_bundle.h"
#include "sim/atomic_file.h"

namespace podsim::reports {
namespace {

std::string EscapeHtml(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// JSON that may sit inside <script>: '<' appears only inside JSON strings, where \u003c is the
// same character, so no "</script" or "<!--" can end or confuse the element.
std::string ScriptSafeJson(const nlohmann::ordered_json& value) {
  std::string out;
  for (char c : value.dump()) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

constexpr std::string_view kStyle = R"css(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin: 28px 0 4px; }
code.command { display: block; background: #f4f4f4; padding: 8px; white-space: pre-wrap; }
table.facts { border-collapse: collapse; margin: 12px 0; }
table.facts td { padding: 2px 16px 2px 0; vertical-align: top; }
table.facts td:first-child { color: #666; }
p.note { color: #8a4b00; }
p.caption { color: #555; max-width: 900px; margin-top: 0; }
)css";

// Renders every spec into its container; the body's data attributes report the outcome.
constexpr std::string_view kRender = R"js(
(function () {
  var specs = JSON.parse(document.getElementById('podsim-specs').textContent);
  Promise.all(specs.map(function (spec, i) {
    return new vega.View(vega.parse(spec), {renderer: 'svg', container: '#podsim-chart-' + i,
                                            hover: true}).runAsync();
  })).then(function () {
    document.body.setAttribute('data-rendered', String(specs.length));
    console.log('podsim report: rendered ' + specs.length + ' charts');
  }).catch(function (error) {
    document.body.setAttribute('data-error', String(error));
    console.error('podsim report: ' + error);
  });
})();
)js";

}  // namespace

Report::Report(std::string title, std::string command)
    : title_(std::move(title)), command_(std::move(command)) {}

void Report::AddFact(std::string name, std::string value) {
  facts_.emplace_back(std::move(name), std::move(value));
}

void Report::AddNote(std::string text) { notes_.push_back(std::move(text)); }

void Report::AddChart(Chart chart) { charts_.push_back(std::move(chart)); }

std::string Report::Html() const {
  std::string html = "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<title>" + EscapeHtml(title_) + "</title>\n<style>";
  html += kStyle;
  html += "</style>\n<script>\n";
  html += VegaBundle();
  html += "\n</script>\n</head>\n<body>\n<h1>" + EscapeHtml(title_) + "</h1>\n";
  html += "<code class=\"command\">" + EscapeHtml(command_) + "</code>\n";
  if (!facts_.empty()) {
    html += "<table class=\"facts\">\n";
    for (const auto& [name, value] : facts_) {
      html += "<tr><td>" + EscapeHtml(name) + "</td><td>" + EscapeHtml(value) + "</td></tr>\n";
    }
    html += "</table>\n";
  }
  for (const std::string& note : notes_) html += "<p class=\"note\">" + EscapeHtml(note) + "</p>\n";
  nlohmann::ordered_json specs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < charts_.size(); ++i) {
    html += "<section>\n<h2>" + EscapeHtml(charts_[i].title) + "</h2>\n";
    html += "<p class=\"caption\">" + EscapeHtml(charts_[i].caption) + "</p>\n";
    html += "<div id=\"podsim-chart-" + std::to_string(i) + "\"></div>\n</section>\n";
    specs.push_back(charts_[i].spec);
  }
  html += "<script id=\"podsim-specs\" type=\"application/json\">" + ScriptSafeJson(specs) +
          "</script>\n<script>";
  html += kRender;
  html += "</script>\n</body>\n</html>\n";
  return html;
}

sim::Status CheckReportPath(const std::string& path) {
  const auto ends_with = [&](std::string_view suffix) {
    return path.size() > suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (!ends_with(".html") && !ends_with(".htm")) {
    return sim::Status::InvalidArgument("report file '" + path + "' must end in .html or .htm");
  }
  return sim::Status::Ok();
}

sim::Status WriteReport(const std::string& path, const Report& report) {
  PODSIM_RETURN_IF_ERROR(CheckReportPath(path));
  return sim::WriteFileAtomically(path, report.Html());
}

}  // namespace podsim::reports
