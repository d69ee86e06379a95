// The `moeplan` Python module (docs/python.md): the library's commands as
// functions returning plain dicts and lists. Each builds the io::Json value the
// CLI prints for --json with the same library calls, and hands Python its text
// through json.loads: the same keys, order and numbers (shortest round-trip
// doubles, null for what is not finite) by construction, with no second
// converter to keep in step. Errors raise moeplan.InputError (a ValueError)
// or moeplan.RunError (a RuntimeError) whose text is the CLI's error line
// after "moeplan: error: ".

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <moeplan/core/error.hpp>
#include <moeplan/core/parallel.hpp>
#include <moeplan/core/version.hpp>
#include <moeplan/family/builtin.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/number_options.hpp>
#include <moeplan/io/plan_reader.hpp>
#include <moeplan/io/quantity_text.hpp>
#include <moeplan/io/scenario_fields.hpp>
#include <moeplan/model/model_stats.hpp>
#include <moeplan/output/capacity_report.hpp>
#include <moeplan/output/plan_report.hpp>
#include <moeplan/output/simulation_report.hpp>
#include <moeplan/output/sweep_report.hpp>
#include <moeplan/plan/capacity.hpp>
#include <moeplan/plan/explain.hpp>
#include <moeplan/plan/planner.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/simulate.hpp>
#include <moeplan/plan/sweep.hpp>

namespace py = pybind11;

namespace {

using moeplan::io::Json;

// A request option the library names by its field ("request.seq_len") is this module's keyword: "seq_len=".
std::string keyword_of(std::string_view field) {
  if (field.rfind(moeplan::kRequestField, 0) != 0) return std::string(field);
  return std::string(field.substr(moeplan::kRequestField.size())) + "=";
}

// The exception classes, made once at import (InputError derives from both
// moeplan.Error and ValueError, which pybind11's register_exception cannot say).
struct Exceptions {
  py::object error, input, limit, run;
};
Exceptions& exceptions() {
  static Exceptions* e = new Exceptions();  // lives as long as the interpreter holds the module
  return *e;
}

py::object new_exception(const char* name, py::tuple bases, const char* doc) {
  PyObject* type = PyErr_NewExceptionWithDoc(name, doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(type);
}

void raise(const moeplan::Error& e) {
  const Exceptions& x = exceptions();
  const py::object& type = e.kind() == moeplan::ErrorKind::Runtime ? x.run
                           : e.kind() == moeplan::ErrorKind::Limit ? x.limit
                                                                   : x.input;
  py::object instance = type(moeplan::format_error(e, keyword_of));
  instance.attr("field") = e.field().rfind(moeplan::kRequestField, 0) == 0 ? keyword_of(e.field()) : e.field();
  instance.attr("file") = e.location().file;
  instance.attr("line") = e.location().line;
  PyErr_SetObject(type.ptr(), instance.ptr());
}

py::object to_python(const Json& value) { return py::module_::import("json").attr("loads")(value.dump(0)); }

// The notes the CLI writes on stderr ("moeplan: note: ...") as Python warnings.
void warn(const std::vector<std::string>& notes) {
  for (const std::string& note : notes)
    if (PyErr_WarnEx(PyExc_UserWarning, ("moeplan: " + moeplan::name_options(note, keyword_of)).c_str(), 2) != 0)
      throw py::error_already_set();
}

// An argument's field: "request.seq_len", which errors name as "seq_len=".
std::string field_of(std::string_view keyword) { return std::string(moeplan::kRequestField) + std::string(keyword); }

moeplan::Error input_error(std::string_view keyword, const std::string& reason) {
  return moeplan::Error(moeplan::ErrorKind::Input, reason, field_of(keyword));
}

// A str argument as UTF-8. A lone surrogate (text decoded from bytes with
// surrogateescape) has no UTF-8 form, and a NUL character would be cut off
// where the text becomes a path or a field's value: both are input errors
// naming the keyword, as invalid UTF-8 and NUL bytes are in the CLI's files.
std::string text_of(const py::handle& value, std::string_view keyword) {
  if (!py::isinstance<py::str>(value))
    throw input_error(keyword, fmt::format("expected a str, got {}", py::str(py::type::of(value).attr("__name__")).cast<std::string>()));
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
  if (data == nullptr) {
    PyErr_Clear();
    throw input_error(keyword, "is not valid Unicode text (it holds a lone surrogate, such as undecodable bytes leave)");
  }
  std::string text(data, static_cast<std::size_t>(size));
  if (text.find('\0') != std::string::npos) throw input_error(keyword, "holds a NUL character");
  return text;
}

std::optional<std::string> optional_text(const py::object& value, std::string_view keyword) {
  if (value.is_none()) return std::nullopt;
  return text_of(value, keyword);
}

// A numeric argument (int or float; not bool, which Python counts as an int)
// held to its option's range (io/number_options.hpp), as the CLI holds the
// same option's text: an InputError naming the keyword, never a cast error or
// a MemoryError from a size too large to allocate.
std::optional<double> number_of(const py::object& value, std::string_view keyword) {
  if (value.is_none()) return std::nullopt;
  const std::string field = field_of(keyword);
  if (py::isinstance<py::bool_>(value) || !(py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)))
    throw input_error(keyword, fmt::format("expected a number, got {}",
                                           py::str(py::type::of(value).attr("__name__")).cast<std::string>()));
  double v = 0;
  if (py::isinstance<py::int_>(value)) {
    int overflow = 0;
    const long long i = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    // Past 64 bits is past every option's range, on the side of its sign.
    const std::string shown = py::str(value).cast<std::string>();
    moeplan::io::check_number(field, overflow > 0 ? 1e300 : overflow < 0 ? -1e300 : static_cast<double>(i),
                              shown.size() <= moeplan::kQuotedForErrorMax ? shown : moeplan::quoted_for_error(shown));
    v = static_cast<double>(i);
  } else {
    v = value.cast<double>();
    moeplan::io::check_number(field, v);
  }
  return v;
}

std::optional<std::int64_t> integer_of(const py::object& value, std::string_view keyword) {
  const std::optional<double> v = number_of(value, keyword);
  return v ? std::optional<std::int64_t>(static_cast<std::int64_t>(*v)) : std::nullopt;
}

// set=: a list of "field.path=value" strings (as --set takes them) or a dict {field: value}.
std::vector<moeplan::io::Override> overrides(const py::object& set) {
  std::vector<moeplan::io::Override> out;
  if (set.is_none()) return out;
  if (py::isinstance<py::str>(set))
    throw moeplan::Error(moeplan::ErrorKind::Input, "set=: a list of 'field.path=value' strings or a dict, not one string");
  if (py::isinstance<py::dict>(set)) {
    for (const auto& [key, value] : set.cast<py::dict>()) {
      // Python's True and False are written as --set takes booleans; numbers as str() writes them.
      const std::string text = py::isinstance<py::bool_>(value) ? (value.cast<bool>() ? "true" : "false")
                               : py::isinstance<py::str>(value) ? text_of(value, "set")
                                                                : text_of(py::str(value), "set");
      out.push_back({text_of(key, "set"), text});
    }
    return out;
  }
  if (!py::isinstance<py::iterable>(set)) throw input_error("set", "expected a list of 'field.path=value' strings or a dict");
  for (const py::handle item : set) out.push_back(moeplan::io::parse_override(text_of(item, "set")));
  return out;
}

// threads=: default every hardware thread, and at most that many (said, as the CLI's --threads says it).
unsigned thread_count(const py::object& threads) {
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const std::optional<std::int64_t> given = integer_of(threads, "threads");
  if (!given) return hardware;
  const auto wanted = static_cast<unsigned>(*given);
  if (wanted > hardware)
    warn({"threads=" + std::to_string(wanted) + " capped at " + std::to_string(hardware) +
          ", the hardware threads of this machine"});
  return std::min(wanted, hardware);
}

// `validate NAME --json`'s entry for a scenario, and its resolved fields.
Json load_scenario_json(const std::string& name, const std::vector<moeplan::io::Override>& set) {
  const moeplan::model::ScenarioSpec s = moeplan::io::load_scenario(name, set);
  const moeplan::model::ParamCounts params = moeplan::model::count_params(s.model);
  Json j = Json::object();
  j.set("file", name);
  j.set("kind", "scenario");
  j.set("ok", true);
  j.set("error", nullptr);
  j.set("params_total", params.total);
  j.set("params_active", params.active_per_token);
  j.set("flops_per_token", moeplan::model::forward_matmul_flops_per_token(s.model));
  // Every field given, by the path set= takes (model, cluster and profile resolved in place).
  Json fields = Json::object();
  for (const moeplan::io::ScenarioField& f : moeplan::io::scenario_fields(name, set)) {
    if (!f.value) continue;
    using Type = moeplan::io::ScenarioField::Type;
    auto one = [&](const std::string& text) -> Json {
      switch (f.type) {
        case Type::Integer:
          return Json(static_cast<std::int64_t>(std::stoll(text)));
        case Type::Real:
          return Json(std::stod(text));
        case Type::Boolean:
          return Json(text == "true");
        default:
          return Json(text);
      }
    };
    if (!f.repeated) {
      fields.set(f.path, one(*f.value));
      continue;
    }
    Json list = Json::array();
    std::size_t start = 0;
    while (start <= f.value->size()) {
      const std::size_t comma = f.value->find(',', start);
      list.push(one(f.value->substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    fields.set(f.path, std::move(list));
  }
  j.set("fields", std::move(fields));
  return j;
}

// `simulate NAME [--schedule S] [--degree D] [--set ...] --json`.
Json simulate_json(const std::string& name, const std::optional<std::string>& schedule,
                   const std::vector<moeplan::io::Override>& set, std::optional<std::int64_t> degree,
                   unsigned threads, std::vector<std::string>& notes) {
  const moeplan::plan::ScenarioRun run(moeplan::io::load_scenario_or_plan(name, set));
  moeplan::plan::SimulateRequest request;
  request.schedule = schedule;
  request.degree = degree;
  request.threads = threads;
  const moeplan::plan::Simulation sim = moeplan::plan::simulate(run, request);
  notes.insert(notes.end(), sim.notes.begin(), sim.notes.end());
  // The same note as the CLI's (docs/cost-model.md, "Memory"): would not fit, or may not.
  if (const std::string note = run.memory_note(); !note.empty()) notes.push_back(note);
  return moeplan::output::simulation_to_json(run, sim);
}

// `plan NAME [--schedule S] [--set ...] --json`.
Json plan_json(const std::string& name, const std::string& schedule, const std::vector<moeplan::io::Override>& set,
               unsigned threads, std::vector<std::string>& notes) {
  const moeplan::plan::ScenarioRun run(moeplan::io::load_scenario(name, set));
  moeplan::plan::refuse_noise(run.spec(), "plan");
  moeplan::plan::PlanRequest request;
  request.schedule = schedule;
  request.threads = threads;
  const moeplan::plan::PlanResult result = moeplan::plan::plan_scenario(run, request);
  notes.insert(notes.end(), result.notes.begin(), result.notes.end());
  const moeplan::plan::Explanation why = moeplan::plan::explain(run, result);
  return moeplan::output::plan_to_json(result, &why);
}

// `sweep FILE --json` (the summary) and `sweep FILE -o F.csv` (the rows).
Json sweep_json(const std::string& file, unsigned threads) {
  const moeplan::io::LoadedSweep sweep = moeplan::io::load_sweep(file);
  moeplan::plan::check_sweep_schedules(sweep);
  const moeplan::model::RunLimits limits;
  std::vector<std::vector<moeplan::plan::SweepRow>> points(sweep.size());
  std::vector<std::optional<moeplan::Error>> failures(sweep.size());
  moeplan::parallel_for(sweep.size(), threads, [&](std::size_t i) {
    try {
      points[i] = moeplan::plan::evaluate_sweep_point(sweep, i, limits);
    } catch (const moeplan::Error& e) {
      failures[i] = e;
    }
  });
  // The first failed point in grid order fails the sweep, as in the CLI.
  for (const std::optional<moeplan::Error>& f : failures)
    if (f) throw *f;
  std::vector<moeplan::plan::SweepRow> rows;
  moeplan::plan::SweepSummary summary;
  for (std::vector<moeplan::plan::SweepRow>& p : points)
    for (moeplan::plan::SweepRow& r : p) {
      summary.add(r.evaluation.schedule, r.speedup_vs_none, r.speedup_vs_tutel);
      rows.push_back(std::move(r));
    }
  Json j = Json::object();
  j.set("summary", moeplan::output::sweep_summary_to_json(summary));
  j.set("rows", moeplan::output::sweep_rows_to_json(sweep, rows));
  return j;
}

// Runs `work` without the GIL (the library's threads need no Python), then
// returns its JSON as Python objects; a moeplan::Error it throws reaches the
// translator registered below.
template <typename F>
py::object call(F&& work) {
  std::vector<std::string> notes;
  Json result;
  {
    py::gil_scoped_release release;
    result = work(notes);
  }
  warn(notes);
  return to_python(result);
}

// `capacity MODEL --cluster C ... --json`: the same request, rows and summary.
Json capacity_json(const moeplan::plan::CapacityQuery& query) {
  const moeplan::plan::CapacityRequest request = moeplan::plan::capacity_request(query);
  return moeplan::output::capacity_to_json(request, moeplan::plan::capacity(request));
}

}  // namespace


PYBIND11_MODULE(moeplan, m) {
  m.doc() = "moeplan: plan and simulate communication/computation overlap in distributed MoE training (docs/python.md)";
  m.attr("__version__") = moeplan::kVersion;
  moeplan::family::register_builtin_families();
  Exceptions& x = exceptions();
  x.error = new_exception("moeplan.Error", py::make_tuple(py::handle(PyExc_Exception)),
                          "A moeplan failure; the text is the CLI's error line after 'moeplan: error: '.");
  x.input = new_exception("moeplan.InputError", py::make_tuple(x.error, py::handle(PyExc_ValueError)),
                          "Bad input: a file, field or argument (the CLI's exit 2); .field, .file, .line say where.");
  x.limit = new_exception("moeplan.LimitError", py::make_tuple(x.input),
                          "A valid request past a resource bound (a task graph above the memory limit).");
  x.run = new_exception("moeplan.RunError", py::make_tuple(x.error, py::handle(PyExc_RuntimeError)),
                        "A runtime failure (the CLI's exit 1).");
  m.attr("Error") = x.error;
  m.attr("InputError") = x.input;
  m.attr("LimitError") = x.limit;
  m.attr("RunError") = x.run;
  // Every moeplan::Error a binding throws (set= parsing included) becomes one of these.
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const moeplan::Error& e) {
      raise(e);
    }
  });

  m.def(
      "load_scenario",
      [](const py::object& name, const py::object& set) {
        const std::string n = text_of(name, "name");
        const auto o = overrides(set);
        return call([&](std::vector<std::string>&) { return load_scenario_json(n, o); });
      },
      py::arg("name"), py::arg("set") = py::none(),
      "The scenario (bundled name or path) with set= overrides: `moeplan validate NAME --json`'s entry "
      "(params_total, params_active, flops_per_token) and 'fields', every field given by the path set= takes.");
  m.def(
      "simulate",
      [](const py::object& name, const py::object& schedule, const py::object& set, const py::object& degree,
         const py::object& threads) {
        const std::string n = text_of(name, "name");
        const std::optional<std::string> s = optional_text(schedule, "schedule");
        const auto o = overrides(set);
        const std::optional<std::int64_t> d = integer_of(degree, "degree");
        const unsigned t = thread_count(threads);
        return call([&](std::vector<std::string>& notes) { return simulate_json(n, s, o, d, t, notes); });
      },
      py::arg("name"), py::arg("schedule") = py::none(), py::arg("set") = py::none(), py::arg("degree") = py::none(),
      py::arg("threads") = py::none(),
      "`moeplan simulate NAME --json`: a dict for one schedule (default: the scenario's), a list for schedule='all'.");
  m.def(
      "plan",
      [](const py::object& name, const py::object& set, const py::object& schedule, const py::object& threads) {
        const std::string n = text_of(name, "name");
        const auto o = overrides(set);
        const std::string s = text_of(schedule, "schedule");
        const unsigned t = thread_count(threads);
        return call([&](std::vector<std::string>& notes) { return plan_json(n, s, o, t, notes); });
      },
      py::arg("name"), py::arg("set") = py::none(), py::arg("schedule") = "all", py::arg("threads") = py::none(),
      "`moeplan plan NAME --json`: the chosen schedule and knobs, candidates, baselines, explanation.");
  m.def(
      "sweep",
      [](const py::object& file, const py::object& threads) {
        const std::string f = text_of(file, "file");
        const unsigned t = thread_count(threads);
        return call([&](std::vector<std::string>&) { return sweep_json(f, t); });
      },
      py::arg("file"), py::arg("threads") = py::none(),
      "`moeplan sweep FILE`: {'summary': the --json list, 'rows': one dict per CSV row (null where a cell is empty)}.");
  m.def(
      "capacity",
      [](const py::object& model, const py::object& cluster, const py::object& tokens, const py::object& days,
         const py::object& gpus, const py::object& cost_per_gpu_hour, const py::object& profile,
         const py::object& seq_len, const py::object& global_batch, const py::object& threads) {
        moeplan::plan::CapacityQuery q;
        q.model = text_of(model, "model");
        q.cluster = text_of(cluster, "cluster");
        // Quantities as people write them ("2T", "64..4096"), read here at the
        // edge as the CLI reads them; or as numbers, held to the same ranges.
        if (py::isinstance<py::str>(tokens))
          q.tokens = moeplan::io::parse_token_count(text_of(tokens, "tokens"), "request.tokens");
        else
          q.tokens = number_of(tokens, "tokens");
        q.days = number_of(days, "days");
        if (py::isinstance<py::str>(gpus)) {
          q.gpus = moeplan::io::parse_count_range(text_of(gpus, "gpus"), "request.gpus");
        } else if (const std::optional<std::int64_t> n = integer_of(gpus, "gpus")) {
          q.gpus = std::pair{*n, *n};
        }
        q.cost_per_gpu_hour = number_of(cost_per_gpu_hour, "cost_per_gpu_hour");
        q.profile = optional_text(profile, "profile").value_or("");
        if (const auto n = integer_of(seq_len, "seq_len")) q.seq_len = *n;
        if (const auto n = integer_of(global_batch, "global_batch")) q.global_batch = *n;
        q.threads = thread_count(threads);
        return call([&](std::vector<std::string>&) { return capacity_json(q); });
      },
      py::arg("model"), py::arg("cluster"), py::arg("tokens") = py::none(), py::arg("days") = py::none(),
      py::arg("gpus") = py::none(), py::arg("cost_per_gpu_hour") = py::none(), py::arg("profile") = py::none(),
      py::arg("seq_len") = py::none(), py::arg("global_batch") = py::none(), py::arg("threads") = py::none(),
      "`moeplan capacity MODEL --cluster C [--tokens T --days D] [--gpus LO..HI] --json`: rows (gpus, days, "
      "tokens_per_s, mfu, meets_deadline, ...), smallest_gpus, cost_optimal_gpus.");
}
