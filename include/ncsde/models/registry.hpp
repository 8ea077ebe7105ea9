#pragma once
/// The model registry: one list of the models the `ncsde` program, `ncsde validate` and the
/// benchmarks offer, each a name, a description, the parameters it takes (so that a command line
/// can generate its flags, help and listing from it) and type-erased operations built from the
/// concrete SDE type by one template, make_entry<Sde>:
///   - the SDE made from parameter values (model_instance): drift, dense Σ (when the SDE is a
///     CovarianceSde), an ensemble with a scheme named at run time (run_ensemble instantiated on
///     the concrete type, so the fixed-size fast path of integrate.hpp is kept), and the stopped
///     samples of `ncsde validate` (stopped_sample.hpp, likewise on the concrete type);
///   - optionally finite-network samplers by name ("literal", "reduced"; with_sampler<N>), run by
///     networks::sample_networks on the concrete sampler type.
///
/// Registering a model (the whole of shaped-tanh's registration, registry.cpp):
///   reg.add(make_entry<shaped_activation_sde>(
///               {"shaped-tanh", "Shaped smooth-activation MLP", {real_parameter(...), ...}},
///               [](const parameter_values& p) { return shaped_activation_sde(...); })
///               .with_sampler<shaped_activation_network>("literal", "...", factory));
///
/// The built-in entries (mlp, resnet, attention, transformer: covariance_sde over the blocks of
/// coefficients.hpp; shaped-tanh: shaped_tanh.hpp) are in registry(); a program may add its own.
/// Parameter domains are checked by the model's constructor (its ncsde::invalid_argument names the
/// parameter by its `field` name); the registry checks names, kinds and choices.
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/error.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/models/stopped_sample.hpp"
#include "ncsde/networks/literal.hpp"
#include "ncsde/networks/sample.hpp"
#include "ncsde/schemes.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"

namespace ncsde::models {

/// How a parameter is written: a real number, a decimal integer, an on/off flag, or one word of a
/// list.
enum class parameter_kind { real, integer, flag, choice };

/// The kind's name as listings write it: "real", "integer", "flag" or "choice".
std::string_view to_string(parameter_kind kind);

/// A parameter's value: double (real), int (integer), bool (flag), std::string (choice).
using parameter_value = std::variant<double, int, bool, std::string>;

/// One parameter of a model. `name` is its command-line flag without "--" ("c-plus"); `field` the
/// name the model's error messages give it ("c_plus"; empty: the same as name), so that a message
/// "<where>: <field> must be …" can be traced back to the flag.
struct parameter {
  std::string name;
  std::string field;
  parameter_kind kind = parameter_kind::real;
  parameter_value default_value = 0.0;
  std::string help;
  std::string domain;                ///< the rule in words, for listings ("in [0, 1]")
  std::vector<std::string> choices;  ///< kind choice: the accepted words
  /// field, or name when field is empty.
  const std::string& field_name() const { return field.empty() ? name : field; }
};

/// A real parameter (default, help text, domain in words, field name when it differs).
parameter real_parameter(std::string name, double default_value, std::string help,
                         std::string domain, std::string field = {});
/// A decimal-integer parameter.
parameter integer_parameter(std::string name, int default_value, std::string help,
                            std::string domain, std::string field = {});
/// An on/off parameter, off by default.
parameter flag_parameter(std::string name, std::string help, std::string field = {});
/// One word of `choices`, `default_value` among them.
parameter choice_parameter(std::string name, std::string default_value,
                           std::vector<std::string> choices, std::string help,
                           std::string field = {});

/// Parameter values by name (the flag names of the model's parameters).
class parameter_values {
 public:
  /// Sets `name` to `value` (replacing an earlier value).
  void set(std::string name, parameter_value value);
  bool contains(std::string_view name) const;
  /// The value of `name` of the given kind; throws ncsde::invalid_argument when it is absent or of
  /// another kind.
  double real(std::string_view name) const;
  int integer(std::string_view name) const;
  bool flag(std::string_view name) const;
  const std::string& choice(std::string_view name) const;
  const std::map<std::string, parameter_value, std::less<>>& items() const { return m_values; }

 private:
  const parameter_value& at(std::string_view name) const;
  std::map<std::string, parameter_value, std::less<>> m_values;
};

/// A model's SDE made from parameter values, behind a type-erased handle (cheap to copy; copies
/// share the SDE, whose workspaces make concurrent calls of drift/covariance on one handle unsafe;
/// run_ensemble and sample_sde copy it per thread, as the concrete calls do).
class model_instance {
 public:
  /// The registry name of the model.
  const std::string& name() const { return m_name; }
  int noise_dimension(int m) const { return m_self->noise_dimension(m); }
  /// out = b(V).
  void drift(const matrix& v, matrix& out, double t) const { m_self->drift(v, out, t); }
  /// True when the SDE offers the dense Σ (ncsde::CovarianceSde).
  bool has_covariance() const { return m_self->has_covariance(); }
  /// sigma = Σ(V), K×K over packed pairs; throws ncsde::invalid_argument without has_covariance.
  void covariance(const matrix& v, matrix& sigma, double t) const {
    m_self->covariance(v, sigma, t);
  }
  /// run_ensemble(scheme, problem{sde, v0, t_end}, iopt, eopt) on the concrete SDE type, for any
  /// scheme of the registry (schemes.hpp) by name; throws ncsde::invalid_argument naming "scheme"
  /// and the known names otherwise.
  ensemble_result run_ensemble(std::string_view scheme, const matrix& v0, double t_end,
                               const integrate_options& iopt, const ensemble_options& eopt) const {
    return finish_ensemble(
        m_self->run_ensemble_range(scheme, v0, t_end, iopt, eopt, path_range{0, eopt.paths}), eopt);
  }
  /// run_ensemble_range(scheme, problem{sde, v0, t_end}, iopt, eopt, range) on the concrete SDE
  /// type: the paths [range.first, range.last) as a piece of the run (ensemble.hpp; merge_partials
  /// and finish_ensemble join the pieces into exactly run_ensemble's result).
  ensemble_partial run_ensemble_range(std::string_view scheme, const matrix& v0, double t_end,
                                      const integrate_options& iopt, const ensemble_options& eopt,
                                      path_range range) const {
    return m_self->run_ensemble_range(scheme, v0, t_end, iopt, eopt, range);
  }
  /// sample_sde(sde, v0, opt) (stopped_sample.hpp) on the concrete SDE type.
  sde_sample sample_sde(const matrix& v0, const sde_sample_options& opt) const {
    return m_self->sample_sde(v0, opt);
  }
  /// The concrete SDE when it is an S, else nullptr.
  template <class S>
  const S* get() const {
    return static_cast<const S*>(m_self->target(typeid(S)));
  }

  /// The handle of `sde` under `name` (what make_entry's factory results become).
  template <class S>
    requires Sde<S>
  static model_instance of(std::string name, S sde);

 private:
  struct interface {
    virtual ~interface() = default;
    virtual int noise_dimension(int m) const = 0;
    virtual void drift(const matrix& v, matrix& out, double t) const = 0;
    virtual bool has_covariance() const = 0;
    virtual void covariance(const matrix& v, matrix& sigma, double t) const = 0;
    virtual ensemble_partial run_ensemble_range(std::string_view scheme, const matrix& v0,
                                                double t_end, const integrate_options& iopt,
                                                const ensemble_options& eopt,
                                                path_range range) const = 0;
    virtual sde_sample sample_sde(const matrix& v0, const sde_sample_options& opt) const = 0;
    virtual const void* target(const std::type_info& type) const = 0;
  };
  template <class S>
  struct holder;
  std::string m_name;
  std::shared_ptr<const interface> m_self;
};

/// What a network sampler is built for: m tokens, width n, key dimension n_k, attention form.
struct network_request {
  int m = 2;
  int n = 64;
  int n_k = 64;
  networks::attention_form form = networks::attention_form::shaped;
};

/// A finite-network sampler behind a type-erased handle (const and thread-safe, as the samplers).
class network_instance {
 public:
  int m() const { return m_self->m(); }
  int n() const { return m_self->n(); }
  /// networks::sample_networks(sampler, v0, d, opt) on the concrete sampler type.
  networks::network_ensemble sample(const matrix& v0, int d,
                                    const networks::network_options& opt) const {
    return m_self->sample(v0, d, opt);
  }
  /// The concrete sampler when it is an N, else nullptr.
  template <class N>
  const N* get() const {
    return static_cast<const N*>(m_self->target(typeid(N)));
  }
  template <networks::network_sampler N>
  static network_instance of(N sampler);

 private:
  struct interface {
    virtual ~interface() = default;
    virtual int m() const = 0;
    virtual int n() const = 0;
    virtual networks::network_ensemble sample(const matrix& v0, int d,
                                              const networks::network_options& opt) const = 0;
    virtual const void* target(const std::type_info& type) const = 0;
  };
  template <class N>
  struct holder;
  std::shared_ptr<const interface> m_self;
};

/// One finite-network sampler of a model.
struct network_sampler_entry {
  std::string name;  ///< "literal", "reduced", …
  std::string description;
  std::function<network_instance(const parameter_values&, const network_request&)> make;
};

/// Name, description and parameters of a model (the first argument of make_entry).
struct model_info {
  std::string name;
  std::string description;
  std::vector<parameter> parameters;
};

/// A registered model.
struct model_entry {
  model_info info;
  /// The SDE from complete, kind-checked values (make() fills the defaults and checks first).
  std::function<model_instance(const parameter_values&)> make_sde;
  std::vector<network_sampler_entry> samplers;  ///< may be empty: no finite network

  const std::string& name() const { return info.name; }
  /// The parameter called `name`, or nullptr.
  const parameter* find_parameter(std::string_view name) const;
  /// Every parameter at its default.
  parameter_values defaults() const;
  /// `given` completed by the defaults. Throws ncsde::invalid_argument("<model>: <name> is not a
  /// parameter of <model> (its parameters: …)") for an unknown name, and one naming the parameter
  /// for a value of the wrong kind or a word outside its choices.
  parameter_values complete(const parameter_values& given) const;
  /// make_sde(complete(given)); the model's own domain errors propagate.
  model_instance make(const parameter_values& given = {}) const;
  /// The sampler called `name`, or nullptr.
  const network_sampler_entry* sampler(std::string_view name) const;
  /// The names of the samplers, comma-separated ("literal, reduced"; "" without any).
  std::string sampler_names() const;
  /// The sampler `name` built for `request` from complete(given); throws ncsde::invalid_argument
  /// naming "sampler" (and the samplers the model has) for an unknown name.
  network_instance make_network(std::string_view sampler, const parameter_values& given,
                                const network_request& request) const;

  /// Adds the finite-network sampler `name`: make(values, request) returns an N (a
  /// networks::network_sampler). Returns *this, so that registrations chain.
  template <networks::network_sampler N, class Factory>
  model_entry&& with_sampler(std::string name, std::string description, Factory make) &&;
};

/// The entry of an SDE type S: make(values) returns an S built from the complete values.
template <class S, class Factory>
  requires Sde<S>
model_entry make_entry(model_info info, Factory make);

/// An ordered list of models with unique names.
class model_registry {
 public:
  /// Adds `entry` and returns it (references stay valid as entries are added). Throws
  /// ncsde::invalid_argument when the name is taken or empty, or when a parameter shares its name
  /// with another model's parameter of a different kind, default or help (one command-line flag
  /// serves every model that takes the parameter).
  const model_entry& add(model_entry entry);
  /// The entry called `name`, or nullptr.
  const model_entry* find(std::string_view name) const;
  /// The entry called `name`; throws ncsde::invalid_argument("<where>: model must be one of <the
  /// registered names> (got <name>)") otherwise.
  const model_entry& at(std::string_view name, std::string_view where = "model_registry") const;
  /// The entries in registration order.
  const std::deque<model_entry>& entries() const { return m_entries; }
  /// The names in registration order.
  std::vector<std::string> names() const;
  /// The parameters of every model, each name once, in order of first appearance (the flags a
  /// command line offers).
  std::vector<parameter> all_parameters() const;

 private:
  std::deque<model_entry> m_entries;
};

/// The library's registry: mlp, resnet, attention, transformer (covariance_sde), shaped-tanh
/// (shaped_activation_sde with its literal network), in this order. Made on first use; adding to it
/// is not thread-safe (register before starting threads).
model_registry& registry();

/// shaped_params of the built-in architectures from complete values of their parameters.
shaped_params shaped_params_of(const parameter_values& values);

// ---- implementation ----

template <class S>
struct model_instance::holder final : model_instance::interface {
  explicit holder(S s) : sde(std::move(s)) {}
  S sde;
  int noise_dimension(int m) const override { return sde.noise_dimension(m); }
  void drift(const matrix& v, matrix& out, double t) const override { sde.drift(v, out, t); }
  bool has_covariance() const override { return CovarianceSde<S>; }
  void covariance(const matrix& v, matrix& sigma, double t) const override {
    if constexpr (CovarianceSde<S>)
      sde.covariance(v, sigma, t);
    else
      throw_invalid("model_instance", "this model has no dense covariance Sigma");
  }
  ensemble_partial run_ensemble_range(std::string_view scheme, const matrix& v0, double t_end,
                                      const integrate_options& iopt, const ensemble_options& eopt,
                                      path_range range) const override {
    const problem<S> prob{sde, v0, t_end};
    return builtin_schemes::visit(find_scheme(scheme, "model_instance: scheme"),
                                  [&]<class St>(std::type_identity<St>) {
                                    return ncsde::run_ensemble_range(St{}, prob, iopt, eopt, range);
                                  });
  }
  sde_sample sample_sde(const matrix& v0, const sde_sample_options& opt) const override {
    return models::sample_sde(sde, v0, opt);
  }
  const void* target(const std::type_info& type) const override {
    return type == typeid(S) ? &sde : nullptr;
  }
};

template <class S>
  requires Sde<S>
model_instance model_instance::of(std::string name, S sde) {
  model_instance out;
  out.m_name = std::move(name);
  out.m_self = std::make_shared<holder<S>>(std::move(sde));
  return out;
}

template <class N>
struct network_instance::holder final : network_instance::interface {
  explicit holder(N n) : net(std::move(n)) {}
  N net;
  int m() const override { return net.m(); }
  int n() const override { return net.n(); }
  networks::network_ensemble sample(const matrix& v0, int d,
                                    const networks::network_options& opt) const override {
    return networks::sample_networks(net, v0, d, opt);
  }
  const void* target(const std::type_info& type) const override {
    return type == typeid(N) ? &net : nullptr;
  }
};

template <networks::network_sampler N>
network_instance network_instance::of(N sampler) {
  network_instance out;
  out.m_self = std::make_shared<holder<N>>(std::move(sampler));
  return out;
}

template <networks::network_sampler N, class Factory>
model_entry&& model_entry::with_sampler(std::string name, std::string description,
                                        Factory make) && {
  samplers.push_back(network_sampler_entry{
      std::move(name), std::move(description),
      [make = std::move(make)](const parameter_values& values, const network_request& request) {
        return network_instance::of<N>(make(values, request));
      }});
  return std::move(*this);
}

template <class S, class Factory>
  requires Sde<S>
model_entry make_entry(model_info info, Factory make) {
  model_entry e;
  std::string name = info.name;
  e.info = std::move(info);
  e.make_sde = [name, make = std::move(make)](const parameter_values& values) {
    return model_instance::of<S>(name, make(values));
  };
  return e;
}

}  // namespace ncsde::models
