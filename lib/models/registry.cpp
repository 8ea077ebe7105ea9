#include "ncsde/models/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ncsde/models/shaped.hpp"
#include "ncsde/models/shaped_tanh.hpp"
#include "ncsde/networks/literal.hpp"
#include "ncsde/networks/reduced.hpp"

namespace ncsde::models {

parameter real_parameter(std::string name, double default_value, std::string help,
                         std::string domain, std::string field) {
  return {std::move(name),
          std::move(field),
          parameter_kind::real,
          default_value,
          std::move(help),
          std::move(domain),
          {}};
}

parameter integer_parameter(std::string name, int default_value, std::string help,
                            std::string domain, std::string field) {
  return {std::move(name),
          std::move(field),
          parameter_kind::integer,
          default_value,
          std::move(help),
          std::move(domain),
          {}};
}

parameter flag_parameter(std::string name, std::string help, std::string field) {
  return {std::move(name),
          std::move(field),
          parameter_kind::flag,
          false,
          std::move(help),
          "on or off",
          {}};
}

parameter choice_parameter(std::string name, std::string default_value,
                           std::vector<std::string> choices, std::string help, std::string field) {
  std::string domain = "one of " + fmt::format("{}", fmt::join(choices, ", "));
  return {std::move(name), std::move(field),  parameter_kind::choice, std::move(default_value),
          std::move(help), std::move(domain), std::move(choices)};
}

std::string_view to_string(parameter_kind kind) {
  switch (kind) {
    case parameter_kind::real:
      return "real";
    case parameter_kind::integer:
      return "integer";
    case parameter_kind::flag:
      return "flag";
    case parameter_kind::choice:
      return "choice";
  }
  return "?";
}

namespace {

std::string_view kind_name(parameter_kind k) {
  switch (k) {
    case parameter_kind::real:
      return "a real number";
    case parameter_kind::integer:
      return "an integer";
    case parameter_kind::flag:
      return "on/off";
    case parameter_kind::choice:
      return "a word";
  }
  return "?";
}

bool has_kind(const parameter_value& v, parameter_kind k) {
  return static_cast<std::size_t>(k) == v.index();
}

std::string parameter_list(const model_info& info) {
  std::string out;
  for (const parameter& p : info.parameters) out += (out.empty() ? "" : ", ") + p.name;
  return out.empty() ? "none" : out;
}

}  // namespace

void parameter_values::set(std::string name, parameter_value value) {
  m_values.insert_or_assign(std::move(name), std::move(value));
}

bool parameter_values::contains(std::string_view name) const {
  return m_values.find(name) != m_values.end();
}

const parameter_value& parameter_values::at(std::string_view name) const {
  const auto it = m_values.find(name);
  if (it == m_values.end()) throw_invalid("parameter_values", fmt::format("no value for {}", name));
  return it->second;
}

double parameter_values::real(std::string_view name) const {
  const parameter_value& v = at(name);
  if (const double* x = std::get_if<double>(&v)) return *x;
  throw_invalid("parameter_values", fmt::format("{} is not a real parameter", name));
}

int parameter_values::integer(std::string_view name) const {
  const parameter_value& v = at(name);
  if (const int* x = std::get_if<int>(&v)) return *x;
  throw_invalid("parameter_values", fmt::format("{} is not an integer parameter", name));
}

bool parameter_values::flag(std::string_view name) const {
  const parameter_value& v = at(name);
  if (const bool* x = std::get_if<bool>(&v)) return *x;
  throw_invalid("parameter_values", fmt::format("{} is not an on/off parameter", name));
}

const std::string& parameter_values::choice(std::string_view name) const {
  const parameter_value& v = at(name);
  if (const std::string* x = std::get_if<std::string>(&v)) return *x;
  throw_invalid("parameter_values", fmt::format("{} is not a choice parameter", name));
}

const parameter* model_entry::find_parameter(std::string_view name) const {
  for (const parameter& p : info.parameters)
    if (p.name == name) return &p;
  return nullptr;
}

parameter_values model_entry::defaults() const {
  parameter_values out;
  for (const parameter& p : info.parameters) out.set(p.name, p.default_value);
  return out;
}

parameter_values model_entry::complete(const parameter_values& given) const {
  parameter_values out = defaults();
  for (const auto& [name, value] : given.items()) {
    const parameter* p = find_parameter(name);
    if (p == nullptr)
      throw_invalid(info.name, fmt::format("{} is not a parameter of {} (its parameters: {})", name,
                                           info.name, parameter_list(info)));
    if (!has_kind(value, p->kind))
      throw_invalid(info.name, fmt::format("{} must be {}", name, kind_name(p->kind)));
    if (p->kind == parameter_kind::choice) {
      const std::string& word = std::get<std::string>(value);
      if (std::find(p->choices.begin(), p->choices.end(), word) == p->choices.end())
        throw_invalid_argument(info.name, p->field_name(), word, p->domain);
    }
    out.set(name, value);
  }
  return out;
}

model_instance model_entry::make(const parameter_values& given) const {
  return make_sde(complete(given));
}

const network_sampler_entry* model_entry::sampler(std::string_view name) const {
  for (const network_sampler_entry& s : samplers)
    if (s.name == name) return &s;
  return nullptr;
}

std::string model_entry::sampler_names() const {
  std::string out;
  for (const network_sampler_entry& s : samplers) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

network_instance model_entry::make_network(std::string_view name, const parameter_values& given,
                                           const network_request& request) const {
  const network_sampler_entry* s = sampler(name);
  if (s == nullptr)
    throw_invalid_argument(info.name, "sampler", name,
                           samplers.empty()
                               ? std::string("a sampler of the model (it has no finite network)")
                               : "one of " + sampler_names());
  return s->make(complete(given), request);
}

const model_entry& model_registry::add(model_entry entry) {
  const std::string& name = entry.info.name;
  if (name.empty()) throw_invalid("model_registry", "a model needs a name");
  if (find(name) != nullptr)
    throw_invalid("model_registry", fmt::format("a model called {} is already registered", name));
  if (!entry.make_sde)
    throw_invalid("model_registry", fmt::format("model {} has no SDE factory", name));
  for (const parameter& p : entry.info.parameters) {
    if (p.default_value.index() != static_cast<std::size_t>(p.kind))
      throw_invalid("model_registry", fmt::format("the default of {}'s parameter {} is not {}",
                                                  name, p.name, kind_name(p.kind)));
    for (const parameter& q : all_parameters())
      if (q.name == p.name && (q.kind != p.kind || q.default_value != p.default_value ||
                               q.help != p.help || q.choices != p.choices))
        throw_invalid("model_registry",
                      fmt::format("{}'s parameter {} differs from the one of that name another "
                                  "model registered (kind, default, help and choices must agree: "
                                  "one flag serves both)",
                                  name, p.name));
  }
  m_entries.push_back(std::move(entry));
  return m_entries.back();
}

const model_entry* model_registry::find(std::string_view name) const {
  for (const model_entry& e : m_entries)
    if (e.info.name == name) return &e;
  return nullptr;
}

const model_entry& model_registry::at(std::string_view name, std::string_view where) const {
  if (const model_entry* e = find(name)) return *e;
  throw_invalid_argument(where, "model", name, fmt::format("one of {}", fmt::join(names(), ", ")));
}

std::vector<std::string> model_registry::names() const {
  std::vector<std::string> out;
  for (const model_entry& e : m_entries) out.push_back(e.info.name);
  return out;
}

std::vector<parameter> model_registry::all_parameters() const {
  std::vector<parameter> out;
  for (const model_entry& e : m_entries)
    for (const parameter& p : e.info.parameters)
      if (std::none_of(out.begin(), out.end(),
                       [&](const parameter& q) { return q.name == p.name; }))
        out.push_back(p);
  return out;
}

shaped_params shaped_params_of(const parameter_values& v) {
  shaped_params p;
  p.c_plus = v.real("c-plus");
  p.c_minus = v.real("c-minus");
  p.gamma2 = v.real("gamma2");
  p.hidden_ratio = v.real("hidden-ratio");
  p.tau0 = v.real("tau0");
  p.heads = v.integer("heads");
  p.output_projection = v.flag("output-projection");
  p.causal = v.flag("causal");
  return p;
}

namespace {

/// The parameters of the four architectures (docs/maths.md §10), in the order of their flags.
std::vector<parameter> shaped_parameters() {
  const shaped_params d;
  return {
      real_parameter("c-plus", d.c_plus, "c+, ReLU shaping (finite)", "finite", "c_plus"),
      real_parameter("c-minus", d.c_minus, "c-, ReLU shaping (finite)", "finite", "c_minus"),
      real_parameter("gamma2", d.gamma2, "gamma^2, residual branch weight, in [0, 1]", "in [0, 1]"),
      real_parameter("tau0", d.tau0, "tau0, attention temperature, > 0", "finite and > 0"),
      real_parameter("hidden-ratio", d.hidden_ratio, "r, MLP hidden width ratio, > 0",
                     "finite and > 0", "hidden_ratio"),
      integer_parameter("heads", d.heads, "n_h, attention heads, >= 1 (1 for mlp and resnet)",
                        ">= 1 (1 for mlp and resnet)"),
      flag_parameter("output-projection",
                     "Multi-head output projection W^O present (attention, transformer)",
                     "output_projection"),
      flag_parameter("causal", "Causal attention mask (attention, transformer)"),
  };
}

model_entry shaped_entry(architecture arch, std::string name, std::string description) {
  return make_entry<covariance_sde>({std::move(name), std::move(description), shaped_parameters()},
                                    [arch](const parameter_values& p) {
                                      return covariance_sde(arch, shaped_params_of(p));
                                    })
      .with_sampler<networks::reduced_network>(
          "reduced", "the exact-in-law V-chain without weights (docs/maths.md §7)",
          [arch](const parameter_values& p, const network_request& r) {
            return networks::reduced_network(arch, shaped_params_of(p), r.m, r.n, r.n_k, r.form);
          })
      .with_sampler<networks::literal_network>(
          "literal", "explicit n×n weights (docs/maths.md §2)",
          [arch](const parameter_values& p, const network_request& r) {
            return networks::literal_network(arch, shaped_params_of(p), r.m, r.n, r.n_k, r.form);
          });
}

smooth_activation activation_named(const std::string& name) {
  return name == "swish" ? swish_activation() : tanh_activation();
}

model_registry make_builtin_registry() {
  model_registry reg;
  reg.add(shaped_entry(architecture::mlp, "mlp", "Shaped ReLU MLP (docs/maths.md §2.2, §3.3.1)"));
  reg.add(shaped_entry(architecture::resnet, "resnet",
                       "Shaped ResNet, ReLU branch of width r·n (docs/maths.md §2.3, §3.3.1)"));
  reg.add(
      shaped_entry(architecture::attention, "attention",
                   "Shaped attention: heads, W^O, causal mask (docs/maths.md §2.4–2.7, §3.3.2)"));
  reg.add(shaped_entry(architecture::transformer, "transformer",
                       "Shaped transformer block: attention + ReLU branch (docs/maths.md §2.8, "
                       "§3.3.4)"));
  // shaped-tanh: a model written outside the four architectures, registered in a few lines.
  reg.add(
      make_entry<shaped_activation_sde>(
          {"shaped-tanh",
           "Shaped smooth-activation MLP, sigma_s(x) = s sigma(x/s), s = a sqrt(n) "
           "(ncsde/models/shaped_tanh.hpp)",
           {real_parameter("a", 1.0, "a, activation shaping s = a*sqrt(n), > 0", "finite and > 0"),
            choice_parameter("activation", "tanh", {"tanh", "swish"},
                             "Activation sigma: tanh, or swish = 2x*sigmoid(x)")}},
          [](const parameter_values& p) {
            return shaped_activation_sde(activation_named(p.choice("activation")), p.real("a"));
          })
          .with_sampler<shaped_activation_network>(
              "literal", "explicit n×n weights, X W/sqrt(n) then sigma_s",
              [](const parameter_values& p, const network_request& r) {
                if (r.form != networks::attention_form::shaped)
                  throw_invalid_argument("shaped-tanh", "form", "unshaped",
                                         "shaped (the model has no attention)");
                return shaped_activation_network(activation_named(p.choice("activation")),
                                                 p.real("a"), r.m, r.n);
              }));
  // The same SDE for any activation, given by the two derivatives its drift depends on: the SDE
  // of a user's activation without a line of C++ (networks from the user: ncsde.validate's
  // sampler).
  reg.add(make_entry<shaped_activation_sde>(
      {"shaped-activation",
       "Shaped smooth-activation MLP for any sigma with sigma(0) = 0, sigma'(0) = 1, given by "
       "sigma''(0), sigma'''(0) (ncsde/models/shaped_tanh.hpp); no network sampler",
       {real_parameter("d2", 0.0, "sigma''(0), the second derivative of the activation at 0",
                       "finite"),
        real_parameter("d3", -2.0, "sigma'''(0), the third derivative of the activation at 0",
                       "finite"),
        real_parameter("a", 1.0, "a, activation shaping s = a*sqrt(n), > 0", "finite and > 0")}},
      [](const parameter_values& p) {
        return shaped_activation_sde(
            shaped_activation_sde::params{p.real("d2"), p.real("d3"), p.real("a")});
      }));
  return reg;
}

}  // namespace

model_registry& registry() {
  static model_registry reg = make_builtin_registry();
  return reg;
}

}  // namespace ncsde::models
