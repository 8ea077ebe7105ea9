/// The `ncsde` program's dispatch (command.hpp: run_program), shared by main.cpp and the Python
/// module, which runs commands in its own process (ncsde.validate).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "command.hpp"
#include "mpi_world.hpp"
#include "ncsde/error.hpp"
#include "ncsde/models/models_library.hpp"
#include "partial_file.hpp"

namespace ncsde::cli {

namespace {

/// Runs a parsed command's action; an exception becomes its message on stderr and an exit code.
int run_action(const CLI::App& sub, const std::function<int()>& action) {
  try {
    // The commands that split their work over MPI ranks; the others refuse more than one rank.
    const std::string& name = sub.get_name();
    if (name != "simulate" && name != "sample-network" && name != "validate" && name != "blowup" &&
        name != "convergence")
      require_one_rank(name);
    return action();
  } catch (const ncsde::invalid_argument& e) {
    std::fprintf(stderr, "ncsde %s: error: %s\n", sub.get_name().c_str(), e.what());
    return exit_usage;
  } catch (const std::bad_alloc&) {
    // The commands refuse runs whose estimated memory exceeds what is available (limits.hpp);
    // this is what is left when the estimate was short of the truth.
    std::fprintf(stderr,
                 "ncsde %s: failed: out of memory (std::bad_alloc); lower --paths, --networks "
                 "or --n\n",
                 sub.get_name().c_str());
    return exit_failure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ncsde %s: failed: %s\n", sub.get_name().c_str(), e.what());
    return exit_failure;
  }
}

}  // namespace

int finish_standard_output(std::string_view command, int rc) {
  errno = 0;
  std::cout.flush();
  bool failed = !std::cout.good();
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) failed = true;
  if (!failed) return rc;
  // errno names the reason when this flush failed; a write that failed earlier (the stream's
  // error flag) has left no reason behind.
  const int error = errno;
  std::fprintf(stderr, "ncsde %.*s: cannot write the standard output: %s\n",
               static_cast<int>(command.size()), command.data(),
               error != 0 ? std::strerror(error) : "a write to it failed");
  std::cout.clear();
  std::clearerr(stdout);
  return rc != exit_ok ? rc : exit_failure;
}

int run_program(int argc, char** argv) {
  // The models libraries are loaded first, wherever they are given (before the command or among
  // its flags): the commands build their flags from the registry. The rest is what CLI11 parses.
  std::vector<std::string> libraries;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string flag = "--models-library";
    if (arg == flag && i + 1 < argc) {
      libraries.emplace_back(argv[++i]);
    } else if (arg.rfind(flag + "=", 0) == 0) {
      libraries.push_back(arg.substr(flag.size() + 1));
    } else {
      rest.push_back(argv[i]);
    }
  }
  const int first_word = 1;
  argc = static_cast<int>(rest.size());
  argv = rest.data();
  // The command line without the libraries (a run's libraries are in its identity by content).
  program_arguments().assign(argv + std::min(argc, 1), argv + argc);
  for (const std::string& library : libraries) {
    try {
      ncsde::models::load_models_library(library);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ncsde: error: --models-library: %s\n", e.what());
      return exit_usage;
    }
  }
  const std::vector<command> commands{
      convergence_command(), coefficients_command(),   simulate_command(),
      validate_command(),    sample_network_command(), rank_collapse_command(),
      blowup_command(),      models_command(),         merge_command(),
  };

  CLI::App app{"ncsde: stochastic numerics for matrix-valued SDEs dV = b(t,V) dt + G(t,V) dW",
               "ncsde"};
  app.require_subcommand(1, 1);
  // Taken out of the arguments above; declared here for the help text.
  std::vector<std::string> listed_libraries;
  app.add_option("--models-library", listed_libraries,
                 "A shared library of models (ncsde/models/models_library.hpp) whose models every "
                 "command then offers; before the command or among its flags, may be repeated");
  std::vector<std::pair<CLI::App*, std::function<int()>>> actions;
  for (const command& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    actions.emplace_back(sub, c.setup(*sub));
  }

  // An unknown first word is a mistyped command, not a missing one: say so.
  if (first_word < argc && argv[first_word][0] != '-') {
    bool known = false;
    std::string names;
    for (const command& c : commands) {
      known = known || c.name == argv[first_word];
      names += (names.empty() ? "" : ", ") + c.name;
    }
    if (!known) {
      std::fprintf(stderr, "ncsde: error: unknown command '%s' (commands: %s)\n", argv[first_word],
                   names.c_str());
      return exit_usage;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    // Help and version are output too: a write that fails fails the program.
    return finish_standard_output("--help", app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return finish_standard_output("--help-all", app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return finish_standard_output("--version", app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr,
                 "ncsde: error: %s\nRun 'ncsde --help' or 'ncsde <command> --help' for usage.\n",
                 e.what());
    return exit_usage;
  }

  for (auto& [sub, action] : actions) {
    if (!sub->parsed()) continue;
    // A path flag given an empty value names no file: refused, not taken for "no file".
    for (const CLI::Option* o : sub->get_options()) {
      const std::string name = o->get_name();
      if (name != "--out" && name != "--partial" && name != "--plots") continue;
      for (const std::string& r : o->results())
        if (r.empty()) {
          std::fprintf(stderr, "ncsde %s: error: %s must name a file or directory (got '')\n",
                       sub->get_name().c_str(), name.c_str());
          return exit_usage;
        }
    }
    current_run_identity() = identity_of(*sub, libraries);
    return finish_standard_output(sub->get_name(), run_action(*sub, action));
  }
  return exit_usage;  // require_subcommand(1) makes this unreachable
}

}  // namespace ncsde::cli
