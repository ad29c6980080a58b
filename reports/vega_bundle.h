// Vega 5 (Debian's libjs-vega) as one script that defines the global `vega` with `parse` and
// `View`, for reports to inline (reports/bundle_vega.cmake generates the definition).

#ifndef PODSIM_REPORTS_VEGA_BUNDLE_H_
#define PODSIM_REPORTS_VEGA_BUNDLE_H_

#include <string_view>

namespace podsim::reports {

// The script's text; contains no "</script".
std::string_view VegaBundle();

}  // namespace podsim::reports

#endif  // PODSIM_REPORTS_VEGA_BUNDLE_H_
