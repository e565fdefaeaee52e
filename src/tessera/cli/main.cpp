// The tessera command: simulate scenarios, run the demo and the papers' experiments, list what is
// built in, and run the cluster's and nodes' servers. Each subcommand is a row of the one command
// table (commands.cpp); the command line parses and runs the one named (command_line.hpp).

#include "tessera/cli/command_line.hpp"

int main(int argc, char** argv) {
  return tessera::cli::CommandLine().main(argc, argv);
}
