// understudy-sim: `understudy sim` linked with only what the simulator
// needs, so that it starts in a fraction of the big binary's time.
#include "sim/sim_main.h"

int main(int argc, char** argv) { return understudy::sim::SimMain(argc, argv); }
