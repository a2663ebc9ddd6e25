// `understudy sim` and `understudy-sim`: flags and environment into a
// Simulator (docs/sim.md). Both executables call SimMain, the first with
// the arguments after "sim".
#ifndef UNDERSTUDY_SIM_SIM_MAIN_H_
#define UNDERSTUDY_SIM_SIM_MAIN_H_

namespace understudy {
namespace sim {

// Parses `argv` (argv[0] is the program or "sim"), runs the session, and
// returns the process's exit code: the session's (sim/simulator.h), or 2
// when a flag, the config, the settings or the environment is wrong (the
// message on stderr names the file and line).
int SimMain(int argc, char** argv);

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_SIM_MAIN_H_
