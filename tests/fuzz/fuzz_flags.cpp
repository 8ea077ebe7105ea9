/// libFuzzer target: the flags of the model and network commands as the `ncsde` program reads
/// them, and what the program does with them before a run. The input is a list of lines, one flag
/// each: a selector character naming the flag (table below; any other byte picks a flag by its
/// value), then the flag's value, written as the next argument or, after '=', as `--flag=value`.
/// "n16\nd=8\nL8,16,1e3\nh2" is `--n 16 --d=8 --widths 8,16,1e3 --heads 2`.
///
/// The flags are the program's own: add_model_flags, add_network_flags and add_integer_list
/// (validation/models/model_flags.cpp) on a CLI11 App, with the decimal_integer and
/// non_negative_integer transforms of validation/command.hpp. Properties, beyond "no crash, no
/// leak, no undefined behaviour":
///   - parsing fails with a CLI::ParseError only;
///   - an integer flag that parses holds the integer its text writes in decimal (canonical_decimal,
///     checked on its own below), a seed the same as an unsigned 64-bit number, a number flag a
///     value that prints and parses back to the same number (within one ulp: see check_values),
///     a width list the same list when printed and parsed again;
///   - past the parse, as the commands go on: the covariance SDE, both network samplers for
///     m = 1, 2, 3 and the run limits (limits.hpp) accept the values or refuse them with
///     ncsde::invalid_argument, and nothing else;
///   - every value also goes through the text parsers on their own: canonical_decimal (the result
///     is an optional '-' and at most 20 digits without leading zeros, a fixed point, and the
///     number strtold reads), the two CLI11 transforms (agreeing with it), and the name parsers
///     (architecture, attention form, pd policy, convergence scheme, SDE variant), which refuse
///     with ncsde::invalid_argument or give back a value that prints as the text.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "command.hpp"
#include "fidelity/variants.hpp"
#include "fuzz_support.hpp"
#include "limits.hpp"
#include "models/model_flags.hpp"
#include "ncsde/convergence.hpp"
#include "ncsde/error.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/networks/literal.hpp"
#include "ncsde/networks/reduced.hpp"
#include "ncsde/schemes.hpp"

namespace {

using ncsde::fuzz::check;
using ncsde::fuzz::fail;
using ncsde::fuzz::starts_with;
namespace cli = ncsde::cli;

enum class kind { text, number, integer, seed, list, flag };

struct flag_spec {
  char selector;
  const char* name;
  kind k;
};

constexpr std::array<flag_spec, 18> flag_table{{
    {'m', "--model", kind::text},
    {'p', "--c-plus", kind::number},
    {'q', "--c-minus", kind::number},
    {'g', "--gamma2", kind::number},
    {'t', "--tau0", kind::number},
    {'r', "--hidden-ratio", kind::number},
    {'h', "--heads", kind::integer},
    {'o', "--output-projection", kind::flag},
    {'c', "--causal", kind::flag},
    {'n', "--n", kind::integer},
    {'d', "--d", kind::integer},
    {'k', "--nk", kind::integer},
    {'w', "--networks", kind::integer},
    {'S', "--sampler", kind::text},
    {'s', "--seed", kind::seed},
    {'T', "--threads", kind::integer},
    {'L', "--widths", kind::list},
    {'A', "--attention", kind::text},
}};

const flag_spec& spec_of(unsigned char selector) {
  for (const flag_spec& f : flag_table)
    if (static_cast<unsigned char>(f.selector) == selector) return f;
  return flag_table[selector % flag_table.size()];
}

/// Everything the flags write into, and the App that reads them. Made once and reset before each
/// parse (building the App costs more than parsing with it); the App refers to the members, so a
/// parsed_flags stays where it is made.
struct parsed_flags {
  cli::model_flags model;
  cli::network_flags net;
  std::vector<int> widths;
  std::string attention = "shaped";
  CLI::App app{"fuzz"};
  parsed_flags() {
    cli::add_model_flags(app, model);
    cli::add_network_flags(app, net, /*require_size=*/false);
    cli::add_integer_list(app, "--widths", widths, "widths");
    app.add_option("--attention", attention, "attention form");
  }
  parsed_flags(const parsed_flags&) = delete;
  parsed_flags& operator=(const parsed_flags&) = delete;
  /// Resets every value to its default, then parses argv (program name first); throws what CLI11
  /// throws.
  void parse(const std::vector<std::string>& args) {
    model.reset();
    net = cli::network_flags{};
    widths.clear();
    attention = "shaped";
    app.clear();
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
  }
};

/// canonical_decimal on its own: shape, fixed point, agreement with strtold and, for plain digit
/// strings, acceptance.
void check_canonical(const std::string& value, bool allow_negative) {
  std::string text = value;
  const bool ok = cli::detail::canonical_decimal(text, allow_negative);
  std::string_view digits = value;
  if (!digits.empty() && (digits.front() == '+' || (allow_negative && digits.front() == '-')))
    digits.remove_prefix(1);
  const bool plain = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
  if (plain) {
    const std::size_t first = std::min(digits.find_first_not_of('0'), digits.size() - 1);
    const std::string_view significant = digits.substr(first);
    const bool negative = value.front() == '-' && significant != "0";
    if (significant.size() <= 20)
      check(ok && text == (negative ? "-" : "") + std::string(significant),
            "canonical_decimal accepts plain digits as written", value, text);
  }
  if (!ok) return;
  std::string_view body = text;
  if (!body.empty() && body.front() == '-') {
    check(allow_negative, "canonical_decimal gives no '-' unless allowed", value, text);
    body.remove_prefix(1);
    check(body != "0", "canonical_decimal gives no '-0'", value, text);
  }
  check(!body.empty() && body.size() <= 20 &&
            body.find_first_not_of("0123456789") == std::string_view::npos &&
            (body.size() == 1 || body.front() != '0'),
        "canonical_decimal gives an optional '-' and 1 to 20 digits, no leading zero", value, text);
  std::string again = text;
  check(cli::detail::canonical_decimal(again, allow_negative) && again == text,
        "canonical_decimal is a fixed point on its result", value, text);
  // long double holds 64 bits of mantissa: 20 digits to about 1e-19, relative.
  char* end = nullptr;
  const long double read = std::strtold(value.c_str(), &end);
  const long double want = std::strtold(text.c_str(), nullptr);
  check(end == value.c_str() + value.size() && std::fabs(read - want) <= 1e-17L * std::fabs(want),
        "canonical_decimal keeps the value strtold reads", value,
        fmt::format("{} vs {}", static_cast<double>(read), static_cast<double>(want)));
}

/// The CLI11 transforms agree with canonical_decimal, and refuse naming the text.
void check_transforms(const std::string& value) {
  std::string canonical = value;
  const bool ok = cli::detail::canonical_decimal(canonical, /*allow_negative=*/true);
  std::string text = value;
  const std::string error = cli::decimal_integer(text);
  check(error.empty() == ok, "decimal_integer accepts what canonical_decimal accepts", value,
        error);
  if (ok)
    check(text == canonical, "decimal_integer gives the canonical text", value, text);
  else
    check(error == "must be a decimal integer such as 1000 or 1e6 (got '" + value + "')",
          "decimal_integer refuses naming the text", value, error);

  std::string unsigned_canonical = value;
  std::uint64_t u = 0;
  bool fits = cli::detail::canonical_decimal(unsigned_canonical, /*allow_negative=*/false);
  if (fits) {
    const char* last = unsigned_canonical.data() + unsigned_canonical.size();
    const auto [ptr, ec] = std::from_chars(unsigned_canonical.data(), last, u);
    fits = ec == std::errc() && ptr == last;
  }
  text = value;
  const std::string seed_error = cli::non_negative_integer(text);
  check(seed_error.empty() == fits, "non_negative_integer accepts the integers of [0, 2^64)", value,
        seed_error);
  if (fits) check(text == std::to_string(u), "non_negative_integer gives the number", value, text);
}

template <class Parse, class Print>
void check_name(const std::string& value, Parse parse, Print print) {
  try {
    const auto parsed = parse(value);
    check(print(parsed) == value, "a name parser gives back a value that prints as the text", value,
          std::string(print(parsed)));
  } catch (const ncsde::invalid_argument&) {
  }
}

void check_names(const std::string& value) {
  check_name(value, cli::parse_architecture, [](ncsde::models::architecture a) {
    using ncsde::models::architecture;
    return std::string(a == architecture::mlp         ? "mlp"
                       : a == architecture::resnet    ? "resnet"
                       : a == architecture::attention ? "attention"
                                                      : "transformer");
  });
  check_name(value, cli::parse_attention_form, [](ncsde::networks::attention_form f) {
    return std::string(f == ncsde::networks::attention_form::shaped ? "shaped" : "unshaped");
  });
  check_name(
      value, [](const std::string& t) { return ncsde::parse_pd_policy(t, "--pd-policy"); },
      [](ncsde::pd_policy p) { return std::string(ncsde::to_string(p)); });
  check_name(
      value, [](const std::string& t) { return ncsde::find_scheme(t, "--scheme"); },
      [](std::size_t i) { return std::string(ncsde::builtin_scheme_descriptors()[i].name); });
  check_name(
      value, [](const std::string& t) { return cli::parse_variant(t, "--variants"); },
      [](cli::sde_variant v) { return std::string(cli::to_string(v)); });
}

/// One option given alone in a fresh App: what it holds after parsing `value`.
template <class Get>
auto reparse(const char* name, const std::string& value, Get get) {
  static parsed_flags p;
  p.parse({"fuzz", std::string(name) + "=" + value});
  return get(p);
}

double number_of(const parsed_flags& p, std::string_view name) {
  const ncsde::models::shaped_params q = p.model.params();
  if (name == "--c-plus") return q.c_plus;
  if (name == "--c-minus") return q.c_minus;
  if (name == "--gamma2") return q.gamma2;
  if (name == "--tau0") return q.tau0;
  return q.hidden_ratio;
}

long long integer_of(const parsed_flags& p, std::string_view name) {
  if (name == "--heads") return p.model.params().heads;
  if (name == "--n") return p.net.n;
  if (name == "--d") return p.net.d;
  if (name == "--nk") return p.net.n_k;
  if (name == "--networks") return p.net.networks;
  return p.net.threads;
}

/// What the parsed values hold, flag by flag (flags given once).
void check_values(const parsed_flags& p, const flag_spec& f, const std::string& value,
                  const std::string& input) {
  switch (f.k) {
    case kind::integer: {
      std::string canonical = value;
      check(cli::detail::canonical_decimal(canonical, true),
            "an integer flag that parses is a decimal integer", input, value);
      check(std::to_string(integer_of(p, f.name)) == canonical,
            "an integer flag holds the integer written", input,
            fmt::format("{} {} holds {}", f.name, value, integer_of(p, f.name)));
      break;
    }
    case kind::seed: {
      std::string canonical = value;
      check(cli::detail::canonical_decimal(canonical, false) &&
                std::to_string(p.net.seed) == canonical,
            "--seed holds the integer written", input, std::to_string(p.net.seed));
      break;
    }
    case kind::number: {
      const double x = number_of(p, f.name);
      const std::string printed = fmt::format("{}", x);
      try {
        const double y =
            reparse(f.name, printed, [&](const parsed_flags& q) { return number_of(q, f.name); });
        // Within one ulp, not to the bit: CLI11 2.1 reads a number with strtold and rounds the
        // long double to double, and that double rounding is one ulp off the correctly rounded
        // value for a few texts ("3.709180473709551e+22" is read as 3.7091804737095508e+22).
        check((std::isnan(x) && std::isnan(y)) || x == y ||
                  (std::isfinite(x) && std::isfinite(y) && std::nextafter(x, y) == y),
              "a number flag prints and parses back to the same number, within one ulp", input,
              fmt::format("{} {}: {} then {}", f.name, value, printed, y));
      } catch (const CLI::ParseError& e) {
        fail("a printed number parses", input, fmt::format("{} {}: {}", f.name, printed, e.what()));
      }
      break;
    }
    case kind::list: {
      std::string printed;
      for (const int w : p.widths) printed += (printed.empty() ? "" : ",") + std::to_string(w);
      if (p.widths.empty()) break;
      try {
        const std::vector<int> again =
            reparse(f.name, printed, [](const parsed_flags& q) { return q.widths; });
        check(again == p.widths, "a width list prints and parses back to the same list", input,
              printed);
      } catch (const CLI::ParseError& e) {
        fail("a printed width list parses", input, fmt::format("{}: {}", printed, e.what()));
      }
      break;
    }
    case kind::text:
    case kind::flag:
      break;
  }
}

/// Past the parse: the model, the samplers and the limits accept or throw invalid_argument.
void check_downstream(const parsed_flags& p) {
  ncsde::models::architecture arch{};
  try {
    arch = cli::parse_architecture(p.model.model);  // --model is checked by CLI11: never throws
    (void)ncsde::models::covariance_sde(arch, p.model.params());
  } catch (const ncsde::invalid_argument&) {
  }
  ncsde::networks::attention_form form{};
  try {
    form = cli::parse_attention_form(p.attention);
  } catch (const ncsde::invalid_argument&) {
    return;
  }
  for (const int m : {1, 2, 3}) {
    for (const bool literal : {false, true}) {
      try {
        if (literal)
          (void)ncsde::networks::literal_network(arch, p.model.params(), m, p.net.n,
                                                 p.net.key_dimension(), form);
        else
          (void)ncsde::networks::reduced_network(arch, p.model.params(), m, p.net.n,
                                                 p.net.key_dimension(), form);
      } catch (const ncsde::invalid_argument&) {
      }
      try {
        cli::check_network_work(p.model, literal, m, p.net.n, p.net.key_dimension(), p.net.networks,
                                p.net.d);
        cli::check_network_memory(p.model, p.net, literal, m, static_cast<std::size_t>(p.net.d) + 1,
                                  1, 0.0);
      } catch (const ncsde::invalid_argument&) {
      }
    }
  }
}

void run(const std::string& input) {
  std::vector<std::string> args{"fuzz"};
  std::vector<std::pair<const flag_spec*, std::string>> given;
  std::size_t start = 0;
  while (start < input.size()) {
    std::size_t end = input.find('\n', start);
    if (end == std::string::npos) end = input.size();
    std::string_view line(input.data() + start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    const flag_spec& f = spec_of(static_cast<unsigned char>(line.front()));
    line.remove_prefix(1);
    const bool joined = !line.empty() && line.front() == '=';
    if (joined) line.remove_prefix(1);
    // An argument ends at its first NUL, as in argv.
    std::string value(line.substr(0, line.find('\0')));
    check_canonical(value, true);
    check_canonical(value, false);
    check_transforms(value);
    check_names(value);
    if (joined && !value.empty()) {
      args.push_back(std::string(f.name) + "=" + value);
    } else if (joined) {
      // CLI11 reads "--x=" with nothing after '=' as "--x" and takes the next argument as its
      // value, so the flag on the next line would not be the one given; written as "--x" "" (an
      // explicit empty value), every flag recorded as given is one CLI11 reads.
      args.emplace_back(f.name);
      if (f.k != kind::flag) args.emplace_back();
    } else {
      args.emplace_back(f.name);
      if (f.k != kind::flag || !value.empty()) args.push_back(value);
    }
    given.emplace_back(&f, value);
  }

  static parsed_flags p;
  try {
    p.parse(args);
  } catch (const CLI::ParseError&) {
    return;  // what the program reports as a usage error (exit code 2)
  }
  for (const auto& [spec, value] : given) {
    const flag_spec* f = spec;  // a structured binding cannot be captured in C++20
    const auto times =
        std::count_if(given.begin(), given.end(), [f](const auto& g) { return g.first == f; });
    if (times == 1) check_values(p, *f, value, input);
  }
  check_downstream(p);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    run(input);
  } catch (const std::exception& e) {
    fail("only CLI::ParseError and ncsde::invalid_argument are thrown", input, e.what());
  }
  return 0;
}
