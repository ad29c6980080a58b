// System: a chip preset plus the fabric that joins the chips; ParseSystem reads the SYSTEM strings
// of the command line (design.md "Command line").
//
// Grammar:  NAME:SIZE[,key=value]...
//   TPU     tpu-v4p|tpu-v5p|tpu7x:XxYxZ   tpu-v5e|tpu-v6e:XxY
//           keys: slices=K (K slices joined over DCN), wrap=none|all|<axis letters> (override)
//   GPU     a100|h100|h200|b200:N (N <= 8: one node; else whole nodes)   gb200:72
//           keys: oversub=F (fat-tree leaf oversubscription, >= 1), nic=bytes/s (each GPU's
//           scale-out bandwidth per direction; default the preset's NIC), hbm=bytes and
//           hbm_bw=bytes/s (each GPU's memory and its bandwidth; default the preset's)
//   generic ring:N   torus:AxB[xC]   switch:N
//           keys: bw=bytes/s per link direction (default 4.5e10), lat=seconds per hop (default
//           1e-6) -- the defaults are one TPU v4p ICI link (hardware.md 1.1); torus also wrap=.
// Examples: tpu-v5p:16x20x28, tpu-v5e:16x16,slices=4, h100:1024, h100:16384,oversub=2, gb200:72,
//           ring:1024,bw=1e11,lat=5e-7.

#ifndef PODSIM_TOPOLOGY_SYSTEM_H_
#define PODSIM_TOPOLOGY_SYSTEM_H_

#include <span>
#include <string>
#include <string_view>

#include "sim/status.h"
#include "topology/chip_spec.h"
#include "topology/fabric.h"

namespace podsim::topology {

enum class SystemKind { kTpu, kGpu, kRing, kTorus, kSwitch };

struct System {
  std::string name;  // The SYSTEM string as given.
  SystemKind kind = SystemKind::kTpu;
  // The chip on every vertex 0..chip_count-1. Generic fabrics get a chip named "generic" with no
  // compute, whose links are the fabric's.
  ChipSpec chip;
  Fabric fabric;
};

// Parses and builds a SYSTEM string. Every error is one line that quotes the input and says what
// was expected, e.g. "system 'h100': expected NAME:SIZE[,key=value]..., like tpu-v5p:16x20x28,
// h100:1024 or ring:8,bw=1e11,lat=1e-6".
sim::StatusOr<System> ParseSystem(std::string_view text);

// `system` (a built system) with its SIZE replaced by `size` ("16x16x16", "64") and its
// NAME and keys kept: a slice of the same kind. Fails as ParseSystem does on a size the family
// does not make.
sim::StatusOr<System> ResizedSystem(const System& system, std::string_view size);

// One form of the SYSTEM grammar above, for `podsim list systems`.
struct SystemForm {
  std::string_view family;   // "TPU", "GPU" or "generic".
  std::string_view form;     // e.g. "tpu-v5p:XxYxZ".
  std::string_view keys;     // The keys after the size, with their meaning.
  std::string_view example;  // A SYSTEM string of this form that ParseSystem accepts.
};

// The forms, in the grammar's order.
std::span<const SystemForm> SystemForms();

}  // namespace podsim::topology

#endif  // PODSIM_TOPOLOGY_SYSTEM_H_
