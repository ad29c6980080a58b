// LinkLoad: which links a collective kept busiest, for `podsim collective`'s "bottleneck" line.
//
// A flow observer adds up the bytes each flow moves over each resource, times its weight there,
// when the flow starts, and integrates the usage echoed on held resources (a replay's, sim/
// flow_model.h "Holds") over time; it only reads, so the run is the same with or without it. A
// run's figures count every flow it started, so they are read once the run is over (every flow
// delivered). It asks the model for no usage changes: reporting them cost 15% of an h100:16384
// all-reduce (2026-12-07). On a symmetric quotient a link orbit's canonical link is the resource
// of the whole orbit and a flow's weight there stands for its flows on each of its links
// (link_orbits.h), so the meter's figure for the canonical link holds for every link of the orbit.

#ifndef PODSIM_COLLECTIVES_LINK_LOAD_H_
#define PODSIM_COLLECTIVES_LINK_LOAD_H_

#include <cstdint>
#include <span>
#include <vector>

#include "collectives/link_orbits.h"
#include "sim/flow_observer.h"
#include "sim/time.h"
#include "topology/fabric.h"

namespace podsim::collectives {

// The busiest links of a run: the highest mean utilisation of a link's line rate over the run
// (bytes carried / (bandwidth x time)), and the links within 1% of it.
struct Bottleneck {
  double utilisation = 0;  // Of the busiest link, in [0, 1] (0: nothing crossed a link).
  // The links at that utilisation, ascending; on a symmetric quotient every link of the busiest
  // orbits, so the list is the full simulation's.
  std::vector<topology::LinkIndex> links;
  uint64_t link_count = 0;  // links.size().
};

class LinkLoadMeter : public sim::FlowObserver {
 public:
  // Meters the resources 0 .. fabric.link_count() - 1, the links in link order
  // (collective_builder.h installs them so); other resources (reduction engines) are ignored.
  explicit LinkLoadMeter(const topology::Fabric* fabric);

  void OnFlowStarted(sim::Time now, sim::FlowId flow, double bytes,
                     std::span<const sim::ResourceId> route,
                     std::span<const double> weights) override;
  bool WantsFlowUsage() const override { return false; }
  void OnUsageEchoed(sim::Time now, sim::ResourceId resource, double used_bytes_per_s) override;
  void OnBytesEchoed(sim::Time now, sim::ResourceId resource, double bytes) override;

  // Each link's mean utilisation of its line rate over the run, which ended at `end` with every
  // flow delivered, in link order (all 0 if end is 0). `orbits`: the quotient's link orbits when
  // the run was one (every link then gets its orbit's canonical figure), else null.
  std::vector<double> Utilisation(sim::Time end, const LinkOrbits* orbits) const;

  // The bottleneck of the run, which ended at `end` (> 0) with every flow delivered. `orbits`: the
  // quotient's link orbits when the run was one, else null.
  Bottleneck Busiest(sim::Time end, const LinkOrbits* orbits) const;

 private:
  const topology::Fabric* fabric_;
  struct Load {
    double bytes = 0;                     // Of flows, and echoed until `since`.
    double echoed = 0;                    // Echoed usage in bytes/s since `since`.
    sim::Time since = sim::Time::Zero();  // When `echoed` last changed.
  };
  std::vector<Load> loads_;  // Per link, together so a change touches one cache line.
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_LINK_LOAD_H_
