// Whether the files a run writes would collide: two outputs (--trace, --write-schedule,
// --report, a Chakra trace's files) that name one file make the later write replace the earlier
// one, while the run reports both. Checked before anything is written (scenario_check.cc, and
// replay's flags in cli/train_command.cc).

#ifndef PODSIM_SCENARIO_OUTPUT_FILES_H_
#define PODSIM_SCENARIO_OUTPUT_FILES_H_

#include <string>

namespace podsim::scenario {

// Whether `a` and `b` name one file however they are spelled: both made absolute, a symbolic
// link in the last place followed to its target (existing or not, as the write will follow it:
// sim/atomic_file.h), and ".", ".." and the links of the existing folders resolved. Two hard
// links are two names: an output replaces its name, not the other. The text itself where a path
// cannot be resolved.
bool SameOutputFile(const std::string& a, const std::string& b);

// Whether `path` names a file a Chakra trace written with `prefix` writes or removes
// (docs/chakra.md): PREFIX.comm_groups.json, or PREFIX.<rank>.et for any rank (a trace of fewer
// ranks removes the higher ones a previous one left).
bool IsChakraOutput(const std::string& prefix, const std::string& path);

// The error's words where IsChakraOutput holds: "'PATH' is one of the Chakra trace's files
// (...); write them apart".
std::string ChakraOutputCollision(const std::string& prefix, const std::string& path);

}  // namespace podsim::scenario

#endif  // PODSIM_SCENARIO_OUTPUT_FILES_H_
