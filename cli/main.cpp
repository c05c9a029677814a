#include <iostream>

#include "cli/commands.h"

int main(int argc, char** argv) { return karta::run_command_line(argc, argv, std::cout, std::cerr); }
