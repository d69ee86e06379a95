#include <moeplan/io/scenario_fields.hpp>

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>

#include "scenario_resolution.hpp"

namespace moeplan::io {
namespace gpb = google::protobuf;

namespace {

// Shortest text that reads back as the same double (as --set parses it).
std::string real_text(double v) { return fmt::format("{}", v); }

std::string scalar_text(const gpb::Message& m, const gpb::FieldDescriptor* f, int index) {
  const gpb::Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case gpb::FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
    case gpb::FieldDescriptor::CPPTYPE_INT32:
      return std::to_string(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
    case gpb::FieldDescriptor::CPPTYPE_DOUBLE:
      return real_text(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
    case gpb::FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false";
    case gpb::FieldDescriptor::CPPTYPE_ENUM:
      return (rep ? r->GetRepeatedEnum(m, f, index) : r->GetEnum(m, f))->name();
    case gpb::FieldDescriptor::CPPTYPE_STRING:
      return rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
    default:
      return "";
  }
}

ScenarioField::Type type_of(const gpb::FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case gpb::FieldDescriptor::CPPTYPE_DOUBLE:
    case gpb::FieldDescriptor::CPPTYPE_FLOAT:
      return ScenarioField::Type::Real;
    case gpb::FieldDescriptor::CPPTYPE_BOOL:
      return ScenarioField::Type::Boolean;
    case gpb::FieldDescriptor::CPPTYPE_ENUM:
      return ScenarioField::Type::Enum;
    case gpb::FieldDescriptor::CPPTYPE_STRING:
      return ScenarioField::Type::Text;
    default:
      return ScenarioField::Type::Integer;
  }
}

void walk(const gpb::Message& m, const std::string& prefix, const std::string& schema_prefix,
          std::vector<ScenarioField>& out) {
  const gpb::Descriptor* d = m.GetDescriptor();
  const gpb::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const gpb::FieldDescriptor* f = d->field(i);
    const std::string path = prefix + f->name();
    const std::string schema = schema_prefix + f->name();
    if (f->cpp_type() == gpb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!f->is_repeated()) {
        walk(r->GetMessage(m, f), path + ".", schema + ".", out);
        continue;
      }
      for (int k = 0; k < r->FieldSize(m, f); ++k)
        walk(r->GetRepeatedMessage(m, f, k), fmt::format("{}[{}].", path, k), schema + "[*].", out);
      continue;
    }
    ScenarioField field;
    field.path = path;
    field.schema_path = schema;
    field.type = type_of(f);
    field.repeated = f->is_repeated();
    if (f->is_repeated()) {
      if (r->FieldSize(m, f) > 0) {
        std::string list;
        for (int k = 0; k < r->FieldSize(m, f); ++k) list += (k ? "," : "") + scalar_text(m, f, k);
        field.value = list;
      }
    } else if (r->HasField(m, f)) {
      field.value = scalar_text(m, f, -1);
    }
    if (f->cpp_type() == gpb::FieldDescriptor::CPPTYPE_ENUM)
      for (int k = 0; k < f->enum_type()->value_count(); ++k)
        if (f->enum_type()->value(k)->number() != 0) field.choices.push_back(f->enum_type()->value(k)->name());
    out.push_back(std::move(field));
  }
}

}  // namespace

std::vector<ScenarioField> scenario_fields(const std::string& name_or_path, const std::vector<Override>& overrides) {
  const pb::Scenario scenario = resolved_scenario_message(name_or_path, overrides);
  std::vector<ScenarioField> out;
  walk(scenario, "", "", out);
  // References are resolved into the messages they name; `set` lines are applied.
  std::erase_if(out, [](const ScenarioField& f) {
    return f.path == "model_ref" || f.path == "cluster_ref" || f.path == "profile_ref" || f.path == "set";
  });
  return out;
}

}  // namespace moeplan::io
