// The tessera command: simulate scenarios, run the demo and the papers' experiments, list what is
// built in, and run the cluster's and nodes' servers. Each subcommand is a row of the one command
// table (commands.cpp); this file only parses the command line and runs the one named.

#include "tessera/cli/command_line.hpp"

int main(int argc, char** argv) {
  tessera::cli::CommandLine line;
  CLI11_PARSE(line.app(), argc, argv);
  return line.run();
}
